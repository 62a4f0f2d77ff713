"""The setup doctor: on this machine for real, and on GPU machines, Colab and macOS with fakes."""

import dataclasses
import subprocess
import sys

import pytest

import fastlstm_lib as fl
from fastlstm_lib import doctor
from fastlstm_lib.doctor import findings, probes

HEAVY = ("tensorflow", "keras", "torch", "jax", "matplotlib")

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "multiprocessors": 132, "driver": "12.4"}
GPU_OK = {"driver_library": True, "numba_cuda": True, "found_by": {}, "nvvm": True, "nvrtc": True, "cudadevrt": True,
          "device": H100, "plain_kernel": True, "grid_barrier": True}
KERAS_OK = {"backend": "tensorflow", "gpus": [H100["name"]], "versions": {"keras": "3.15.1", "tensorflow": "2.21.0"}}


def test_doctor_on_this_machine_is_fast_and_imports_no_framework():
    code = (f"import sys\nfrom fastlstm_lib.doctor import run\nstatus = run(full=False)\n"
            f"print('heavy:', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\nsys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "heavy: []" in done.stdout
    assert "verdict: the course will run here" in done.stdout
    assert ("simulator" in done.stdout) == fl.is_simulator()
    for private in ("/work/", "/root/", "/home/"):  # its output is shown in 00_setup.ipynb
        assert private not in done.stdout


def test_cli_doctor(capsys):
    from fastlstm_lib.__main__ import main

    assert main(["doctor", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fastlstm doctor:") and "Keras backend" in out


@pytest.fixture
def gpu_machine(monkeypatch):
    """This machine, as if it had an H100 and a Keras that sees it: replace the probes' answers."""
    monkeypatch.setattr(probes, "cuda_facts", lambda: dict(GPU_OK))
    monkeypatch.setattr(probes, "backend_facts", lambda: dict(KERAS_OK))
    monkeypatch.setattr(fl.simulator, "SIMULATOR", False)

    def run(**cuda_changes):
        monkeypatch.setattr(probes, "cuda_facts", lambda: {**GPU_OK, **cuda_changes})
        lines = []
        status = doctor.run(out=lines.append)
        return status, lines[0]

    return run


def test_gpu_machine_that_works(gpu_machine):
    status, text = gpu_machine()
    assert status == 0
    assert "ok    GPU: NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs, CUDA driver 12.4)" in text
    assert "a test kernel compiled and ran on the GPU" in text
    assert "sees NVIDIA H100 80GB HBM3" in text
    assert "verdict: the course will run here, on the GPU" in text


@pytest.mark.parametrize("driver, extra", [("12.4", "cu12"), ("13.0", "cu13")])
def test_missing_cudadevrt_is_a_warning_with_the_matching_wheel(gpu_machine, driver, extra):
    status, text = gpu_machine(cudadevrt=False, grid_barrier={"error": "LinkerError: libcudadevrt.a"},
                               device={**H100, "driver": driver})
    assert status == 0
    assert "warn  no working grid barrier" in text
    assert f'fix: python -m pip install "numba-cuda[{extra}]==0.30.4"' in text


def test_missing_nvrtc_means_the_course_will_not_run(gpu_machine):
    status, text = gpu_machine(nvrtc=False, plain_kernel={"error": "NvrtcSupportError: NVRTC not found"})
    assert status == 1
    assert "fail  NVRTC is missing" in text and "fail  a test kernel failed on the GPU: NvrtcSupportError" in text
    assert "verdict: the course will NOT run here yet (2 problems" in text


def test_tensorflow_blind_to_the_gpu(gpu_machine, monkeypatch):
    monkeypatch.setattr(probes, "backend_facts", lambda: {**KERAS_OK, "gpus": []})
    status, text = gpu_machine()
    assert status == 0
    assert "warn  Keras (keras 3.15.1, tensorflow 2.21.0) sees no GPU" in text
    assert 'fix: python -m pip install "tensorflow[and-cuda]==2.21.0"' in text


def test_keras_that_does_not_import(gpu_machine, monkeypatch):
    monkeypatch.setattr(probes, "backend_facts", lambda: {"error": "ImportError: libcudnn.so.9: cannot open"})
    status, text = gpu_machine()
    assert status == 1 and "fail  Keras with the tensorflow backend does not import: ImportError" in text


def test_simulator_forced_on_a_gpu_machine(gpu_machine, monkeypatch):
    monkeypatch.setattr(fl.simulator, "SIMULATOR", True)
    monkeypatch.setattr(probes, "simulator_kernel", lambda: "ok")
    monkeypatch.setenv("FASTLSTM_SIMULATOR", "1")
    status, text = gpu_machine()
    assert status == 0 and "because FASTLSTM_SIMULATOR is set" in text and "fix: unset FASTLSTM_SIMULATOR" in text


def facts(**changes) -> probes.Facts:
    """A healthy machine without a GPU, with ``changes``."""
    requires, pins = probes.pins()
    installed = {name: version for name, (version, _) in pins.items()}
    healthy = probes.Facts(system="Linux", machine="x86_64", colab=False, python=(3, 11, 7), requires_python=requires,
                           pins=pins, installed=installed, keras_backend="tensorflow", simulator_here=True,
                           forced_by=None, simulator_kernel="ok", cuda={"driver_library": False, "numba_cuda": False},
                           backend_gpus=None, disk_free=50 * findings.GIB, memory_total=16 * findings.GIB,
                           memory_available=8 * findings.GIB)
    return dataclasses.replace(healthy, **changes)


def verdict_and_text(machine):
    found = findings.diagnose(machine)
    return findings.verdict(machine, found)[0], findings.report(machine, found)


def test_pins_come_from_pyproject():
    requires, pins = probes.pins()
    assert requires == ">=3.11"
    assert pins["numba-cuda"] == ("0.30.4", "core") and pins["nbval"][1] == "test"


@pytest.mark.parametrize("machine, status, expected", [
    (facts(), 0, "info  no NVIDIA GPU: the notebooks run on Numba's CUDA simulator"),
    (facts(system="Darwin"), 0, "info  macOS has no CUDA"),
    (facts(colab=True), 0, "fix: Runtime > Change runtime type > a GPU"),
    (facts(cuda={"driver_library": True, "numba_cuda": False}), 0, "fix: nvidia-smi"),
    (facts(python=(3, 10, 4)), 1, "fail  Python 3.10.4: the course needs Python >= 3.11"),
    (facts(installed={**facts().installed, "numba": None}), 1, 'fix: python -m pip install "numba==0.68.1"'),
    (facts(installed={**facts().installed, "numpy": "2.3.0"}), 0, "warn  numpy 2.3.0 is installed, 2.4.6 is pinned"),
    (facts(installed={**facts().installed, "tqdm": None}), 0, "warn  tqdm is not installed: no progress bars"),
    (facts(installed={**facts().installed, "nbval": None}), 0, "info  not installed: nbval"),
    (facts(keras_backend="torch", installed={**facts().installed, "tensorflow": None, "torch": None}), 1,
     'fail  torch is not installed'),
    (facts(simulator_kernel="ImportError: no simulator"), 1, "fail  the simulator cannot run a kernel"),
    (facts(disk_free=findings.GIB // 10), 1, "fail  0.10 GiB free"),
    (facts(memory_available=findings.GIB), 0, "warn  1.0 GiB of memory available"),
    (facts(cuda={"error": "the CUDA probe did not finish in 120 s"}), 0, "warn  could not ask CUDA"),
])
def test_findings(machine, status, expected):
    got_status, text = verdict_and_text(machine)
    assert expected in text
    assert got_status == status, text


# ---- which CUDA wheel, and a GPU without a grid barrier (issue 19) --------------------------------

M40 = {"name": "Tesla M40 24GB", "compute_capability": "5.2", "multiprocessors": 24, "driver": "13.0",
       "cooperative_launch": False}
NVVM_REFUSES = {"error": "NvvmError: Failed to compile: libNVVM: unsupported architecture compute_52"}


@pytest.mark.parametrize("driver, compute_capability, extra", [
    ("12.4", "9.0", "cu12"), ("13.0", "9.0", "cu13"), ("13.1", "7.5", "cu13"),  # CUDA 13 from sm_75 (T4) up
    ("13.0", "7.0", "cu12"), ("13.0", "6.0", "cu12"), ("13.0", "5.2", "cu12"),  # V100, P100, M40 on an R580 driver
    ("12.8", "5.2", "cu12"),
])
def test_the_cuda_wheel_follows_the_driver_and_the_compute_capability(gpu_machine, driver, compute_capability, extra):
    status, text = gpu_machine(plain_kernel=NVVM_REFUSES,
                               device={**H100, "driver": driver, "compute_capability": compute_capability})
    assert status == 1
    assert f'fix: python -m pip install "numba-cuda[{extra}]==0.30.4"' in text
    assert ("cu13" in text) == (extra == "cu13"), text
    if driver.startswith("13") and extra == "cu12":
        assert f"CUDA 13 cannot compile for compute capability {compute_capability}" in text


def test_a_driver_older_than_cuda_12_is_too_old(gpu_machine):
    status, text = gpu_machine(plain_kernel=NVVM_REFUSES, device={**H100, "driver": "11.4", "compute_capability": "7.0"})
    assert status == 1
    assert "fail  CUDA driver 11.4 is too old" in text and "pip install" not in text
    assert "fix: update the NVIDIA driver" in text


@pytest.mark.parametrize("cudadevrt", [True, False])
@pytest.mark.parametrize("device", [M40, {key: value for key, value in M40.items() if key != "cooperative_launch"}])
def test_a_gpu_without_cooperative_launch_is_not_blamed_on_libcudadevrt(gpu_machine, cudadevrt, device):
    status, text = gpu_machine(device=device, cudadevrt=cudadevrt,
                               grid_barrier={"error": "CudaAPIError: [801] cuLaunchCooperativeKernel: CUDA_ERROR_NOT_SUPPORTED"})
    assert status == 0, text  # the course runs; the persistent step is skipped on this GPU
    assert ("warn  Tesla M40 24GB cannot launch a cooperative grid (compute capability 5.2; cooperative launch "
            "needs 6.0 or newer): no grid barrier, so the persistent step (notebook 09) cannot run on this GPU") in text
    assert "libcudadevrt" not in text and "no working grid barrier" not in text


def test_a_grid_barrier_that_fails_for_another_reason_says_its_error(gpu_machine):
    status, text = gpu_machine(grid_barrier={"error": "CudaAPIError: [720] CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"})
    assert status == 0
    assert "warn  the grid-barrier test kernel failed: CudaAPIError: [720]" in text and "libcudadevrt" not in text


def test_the_probe_asks_for_cooperative_launch(monkeypatch):
    from types import SimpleNamespace

    from numba import cuda

    from fastlstm_lib.doctor import cuda_probe

    attributes = {"MULTIPROCESSOR_COUNT": 24, "COOPERATIVE_LAUNCH": 0}
    device = SimpleNamespace(name=b"Tesla M40 24GB", compute_capability=(5, 2), **attributes)
    monkeypatch.setattr(cuda, "get_current_device", lambda: device)
    monkeypatch.setattr(cuda.cudadrv.driver, "driver", SimpleNamespace(get_version=lambda: (13, 0)), raising=False)
    assert cuda_probe.device() == M40
