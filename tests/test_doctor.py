"""The setup doctor: on this machine for real, and on GPU machines, Colab and macOS with fakes."""

import dataclasses
import os
import subprocess
import sys

import pytest

import fastlstm_lib as fl
from fastlstm_lib.setup import doctor
from fastlstm_lib.setup.doctor import findings, probes

HEAVY = ("tensorflow", "keras", "torch", "jax", "matplotlib")

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "multiprocessors": 132, "driver": "12.4"}
GPU_OK = {"driver_library": True, "numba_cuda": True, "nvvm": True, "nvrtc": True, "device": H100, "plain_kernel": True}
KERAS_OK = {"backend": "tensorflow", "gpus": [H100["name"]], "versions": {"keras": "3.15.1", "tensorflow": "2.21.0"}}


def skip_where_packages_are_missing():
    """On a machine that lacks pinned packages the notebooks need (a lent GPU machine's own Python:
    no TensorFlow, maybe no matplotlib or Keras) the doctor rightly answers 1: say so and skip.
    Everywhere `make setup` installed the pins, nothing is skipped."""
    pinned = probes.pins()
    here = facts(installed={name: probes.package_version(name) for name in pinned})
    failed = [f.text for f in findings.package_findings(here) + findings.backend_findings(here) if f.status == "fail"]
    if failed:
        pytest.skip(f"the doctor rightly says no on this machine ({'; '.join(failed)}); "
                    "a Python set up with `make setup` runs this")


def test_doctor_on_this_machine_is_fast_and_imports_no_framework():
    skip_where_packages_are_missing()
    code = (f"import sys\nfrom fastlstm_lib.setup.doctor import run\nstatus = run(full=False)\n"
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

    skip_where_packages_are_missing()

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fastlstm doctor:") and "Keras backend" in out


@pytest.fixture
def gpu_machine(monkeypatch):
    """This machine, as if it had an H100 and a Keras that sees it: replace the probes' answers.
    Its packages are the pins exactly, with Keras on TensorFlow (KERAS_OK), whatever this Python has."""
    pinned = probes.pins()
    monkeypatch.setattr(probes, "package_version", lambda name: pinned[name][0] if name in pinned else None)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
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


def test_missing_nvrtc_means_the_course_will_not_run_and_is_one_cause(gpu_machine):
    status, text = gpu_machine(nvrtc=False, plain_kernel={"error": "NvrtcSupportError: NVRTC not found"})
    assert status == 1
    assert "fail  NVRTC is missing: Numba cannot compile kernels for the GPU (the test kernel failed: NvrtcSupportError" in text
    assert "verdict: the course will NOT run here yet (1 problem, 0 warnings" in text, text  # not the kernels again


def test_tensorflow_blind_to_the_gpu(gpu_machine, monkeypatch):
    monkeypatch.setattr(probes, "backend_facts", lambda: {**KERAS_OK, "gpus": []})
    status, text = gpu_machine()
    assert status == 0
    assert "warn  Keras (keras 3.15.1, tensorflow 2.21.0) sees no GPU" in text
    assert '-m pip install "tensorflow[and-cuda]==2.21.0"' in text


def test_keras_that_does_not_import(gpu_machine, monkeypatch):
    monkeypatch.setattr(probes, "backend_facts", lambda: {"error": "ImportError: libcudnn.so.9: cannot open"})
    status, text = gpu_machine()
    assert status == 1 and "fail  Keras with the tensorflow backend does not import: ImportError" in text


def facts(**changes) -> probes.Facts:
    """A healthy machine without a GPU, with ``changes``."""
    pins = probes.pins()
    installed = {name: version for name, (version, _) in pins.items()}
    healthy = probes.Facts(system="Linux", machine="x86_64", colab=False, python=(3, 11, 7),
                           pins=pins, installed=installed, simulator_here=True,
                           cuda={"driver_library": False, "numba_cuda": False},
                           backend_gpus=None, disk_free=50 * findings.GIB, memory_total=16 * findings.GIB,
                           memory_available=8 * findings.GIB)
    return dataclasses.replace(healthy, **changes)


def verdict_and_text(machine):
    found = findings.diagnose(machine)
    return findings.verdict(machine, found)[0], findings.report(machine, found)


def test_pins_come_from_pyproject():
    pins = probes.pins()
    assert pins["numba-cuda"] == ("0.30.4", "core") and pins["nbval"][1] == "test"


@pytest.mark.parametrize("machine, status, expected", [
    (facts(), 0, "info  no NVIDIA GPU: the notebooks run on Numba's CUDA simulator"),
    (facts(system="Darwin"), 0, "info  macOS has no CUDA"),
    (facts(colab=True), 0, "fix: Runtime > Change runtime type > a GPU"),
    (facts(cuda={"driver_library": True, "numba_cuda": False}), 0, "fix: nvidia-smi"),
    (facts(python=(3, 10, 4)), 1, "fail  Python 3.10.4: Python 3.11 or newer needed"),
    (facts(installed={**facts().installed, "numba": None}), 1, 'fix: python -m pip install "numba==0.68.1"'),
    (facts(installed={**facts().installed, "numpy": "2.3.0"}), 0, "warn  numpy 2.3.0 is installed, 2.4.6 is pinned"),
    (facts(disk_free=findings.GIB // 10), 1, "fail  0.10 GiB free"),
    (facts(memory_available=findings.GIB), 0, "warn  1.0 GiB of memory available"),
    (facts(cuda={"error": "the CUDA probe did not finish in 120 s"}), 0, "warn  could not ask CUDA"),
])
def test_findings(machine, status, expected):
    got_status, text = verdict_and_text(machine)
    assert expected in text
    assert got_status == status, text


# ---- which CUDA wheel (issue 19) ------------------------------------------------------------------

M40 = {"name": "Tesla M40 24GB", "compute_capability": "5.2", "multiprocessors": 24, "driver": "13.0"}
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
    assert f'-m pip install "numba-cuda[{extra}]==0.30.4"' in text
    assert ("cu13" in text) == (extra == "cu13"), text


def test_a_driver_older_than_cuda_12_is_too_old(gpu_machine):
    status, text = gpu_machine(plain_kernel=NVVM_REFUSES, device={**H100, "driver": "11.4", "compute_capability": "7.0"})
    assert status == 1
    assert "fail  CUDA driver 11.4 is too old" in text and "pip install" not in text
    assert "fix: update the NVIDIA driver" in text


def test_the_probe_reads_the_device(monkeypatch):
    from types import SimpleNamespace

    from numba import cuda

    from fastlstm_lib.setup.doctor import cuda_probe

    device = SimpleNamespace(name=b"Tesla M40 24GB", compute_capability=(5, 2), MULTIPROCESSOR_COUNT=24)
    monkeypatch.setattr(cuda, "get_current_device", lambda: device)
    monkeypatch.setattr(cuda.cudadrv.driver, "driver", SimpleNamespace(get_version=lambda: (13, 0)), raising=False)
    assert cuda_probe.device() == M40


def test_the_probe_checks_the_kernel_s_values_unless_the_driver_computes_none(monkeypatch):
    """Where values are computed (a GPU, the simulator) the test kernel's values are checked and wrong
    ones fail; on a stand-in driver that computes nothing (the fake GPU) only that it ran counts."""
    import numpy as np

    from fastlstm_lib.runtime.device import DEVICE
    from fastlstm_lib.setup.doctor import cuda_probe

    assert cuda_probe.values_computed() is DEVICE.computes is True
    assert cuda_probe.right_values(np.arange(40, dtype=np.float32) + 1) is True
    with pytest.raises(RuntimeError, match="computed wrong values"):
        cuda_probe.right_values(np.zeros(40, dtype=np.float32))
    monkeypatch.setattr(cuda_probe, "values_computed", lambda: False)
    assert cuda_probe.right_values(np.zeros(40, dtype=np.float32)) is True


# ---- any Python 3, this platform's pins, the exact fix, each cause once (issue 20) ------------------

ROOT = str(probes.ROOT)
#: Runs `python -m fastlstm_lib doctor` (or another module) in an isolated Python without site-packages
#: (-I -S): no NumPy, Numba, TensorFlow, nor their metadata, as in a bare system Python.
BARE = ("import runpy, sys\nsys.path.insert(0, {root!r})\n"
        "for name in ('numpy', 'numba', 'keras'):\n"
        "    try:\n        __import__(name)\n    except ImportError:\n        pass\n"
        "    else:\n        sys.exit(name + ' imports: the test cannot hide it')\n"
        "sys.argv = ['x'] + {args!r}\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def bare_python(python, module="fastlstm_lib", args=("doctor",)):
    code = BARE.format(root=ROOT, args=list(args), module=module)
    environment = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}  # Keras' default backend, as in a bare Python
    return subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=180, cwd="/",
                          env=environment)


def numba_cuda_pin_here() -> str:
    """numba-cuda as the doctor pins it here: plain without a CUDA driver, with the extra that the
    driver and GPU the CUDA probe sees need on a GPU machine ("numba-cuda[cu13]==0.30.4" on an H100
    with a CUDA 13 driver, also in the fake-GPU mode), as the packages' finding says it."""
    machine = facts(cuda=probes.cuda_facts())
    driver = machine.cuda.get("driver_library") or machine.cuda.get("numba_cuda") is True
    return (driver and findings.cuda_requirement(machine)) or findings.pinned(machine, "numba-cuda")


@pytest.mark.parametrize("module, args", [("fastlstm_lib", ["doctor"]), ("fastlstm_lib", ["doctor", "--full"])])
def test_the_doctor_runs_in_a_python_without_numpy_or_numba(module, args):
    done = bare_python(sys.executable, module, args)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr  # the course will not run: said, not crashed
    out = done.stdout
    assert "fail  numpy, numba, numba-cuda, nvtx, tensorflow, keras, matplotlib, tqdm, threadpoolctl are not installed" in out, out
    one_command = [line for line in out.splitlines() if '-m pip install "numpy==' in line]
    numba_cuda = numba_cuda_pin_here()
    assert len(one_command) == 1 and f'"numba==0.68.1" "{numba_cuda}" "nvtx==0.2.17" "tensorflow==2.21.0"' in one_command[0]
    assert one_command[0].split("-m pip install")[0].split()[-1] == findings.quoted(probes.shown_path(sys.executable))
    assert "the GPU (or Numba's CUDA simulator): not checked (needs numba and numba-cuda, above)" in out
    assert "verdict: the course will NOT run here yet (1 problem, 0 warnings)" in out


def older_python():
    import glob
    import shutil

    for version in ("3.8", "3.9", "3.10"):
        for python in [shutil.which(f"python{version}")] + sorted(glob.glob(f"/root/.pyenv/versions/{version}*/bin/python3")):
            if python and subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
                return python
    return None


@pytest.mark.skipif(older_python() is None, reason="no Python 3.8 to 3.10 on this machine")
def test_a_python_older_than_311_is_told_so():
    done = bare_python(older_python())
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stdout + done.stderr
    assert "Python 3.11 or newer needed" in done.stdout and "problem" in done.stdout, done.stdout


PLAIN_MARKERS = [
    ("", {}, True),
    ("sys_platform != 'darwin'", {"sys_platform": "linux"}, True),
    ("sys_platform != 'darwin'", {"sys_platform": "darwin"}, False),
    ("sys_platform == 'darwin' and platform_machine == 'x86_64'", {"sys_platform": "darwin", "platform_machine": "x86_64"}, True),
    ("sys_platform == 'darwin' and platform_machine == 'x86_64'", {"sys_platform": "darwin", "platform_machine": "arm64"}, False),
    ("sys_platform != 'darwin' or platform_machine != 'x86_64'", {"sys_platform": "darwin", "platform_machine": "arm64"}, True),
    ('extra == "test" and sys_platform == "linux"', {"extra": "test", "sys_platform": "linux"}, True),
]


@pytest.mark.parametrize("marker, environment, holds", PLAIN_MARKERS)
def test_markers(marker, environment, holds):
    assert probes.marker_holds(marker, probes.this_machine(**environment)) is holds


@pytest.mark.parametrize("marker", ["sys_platform in 'linux darwin'", "not sys_platform == 'linux'",
                                    "python_version ~= '3.11'", "platform_release == '5'", "sys_platform < 'linux'",
                                    "(sys_platform == 'linux'", "sys_platform == 'linux' and",
                                    "(sys_platform == 'linux' or sys_platform == 'win32') and os_name == 'nt'"])
def test_markers_outside_the_doctors_grammar_are_refused_loudly(marker):
    with pytest.raises(ValueError, match="unsupported environment marker"):
        probes.marker_holds(marker, probes.this_machine())


def test_the_doctor_reads_every_pin_as_pip_does():
    import tomllib

    marker_class = pytest.importorskip("packaging.markers").Marker
    project = tomllib.loads((probes.ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + [line for group in project["optional-dependencies"].values() for line in group]
    for line in lines:
        marker = line.partition(";")[2].strip()
        for machine in (probes.this_machine(), MAC_INTEL) if marker else ():
            environment = {**machine, "python_version": "3.11", "python_full_version": "3.11.7",
                           "implementation_name": "cpython", "platform_release": "", "platform_version": "",
                           "platform_python_implementation": "CPython", "implementation_version": "3.11.7"}
            assert probes.marker_holds(marker, machine) == marker_class(marker).evaluate(environment), line


MAC_ARM = probes.this_machine(sys_platform="darwin", platform_system="Darwin", platform_machine="arm64")
MAC_INTEL = probes.this_machine(sys_platform="darwin", platform_system="Darwin", platform_machine="x86_64")


def mac(environment=MAC_ARM, **changes):
    """A Mac: its pins (no numba-cuda), installed as pinned, no CUDA at all."""
    pins = probes.pins(environment)
    installed = {**{name: version for name, (version, _) in pins.items()}, "numba-cuda": None, **changes.pop("installed", {})}
    return facts(system="Darwin", machine=environment["platform_machine"], pins=pins, installed=installed,
                 cuda={"driver_library": False, "numba_cuda": False, "nvvm": {"error": "no CUDA"}}, **changes)


def test_a_mac_needs_no_numba_cuda_and_uses_numbas_own_simulator():
    assert "numba-cuda" not in probes.pins(MAC_ARM) and probes.pins(MAC_ARM)["numba"][0] == "0.68.1"
    intel = probes.pins(MAC_INTEL)
    assert (intel["numpy"][0], intel["numba"][0], intel["tensorflow"][0]) == ("1.26.4", "0.62.1", "2.16.2")
    status, text = verdict_and_text(mac())
    assert status == 0 and "numba-cuda" not in text.replace("numba-cuda, the GPU path, is not needed", ""), text
    assert "info  macOS has no CUDA: the notebooks run on Numba's own CUDA simulator" in text
    status, text = verdict_and_text(mac(MAC_INTEL, installed={"numpy": "2.4.6", "numba": None}))
    assert status == 1 and 'python -m pip install "numba==0.62.1" "numpy==1.26.4"' in text, text


def test_colab_keeps_its_versions_and_gets_what_it_lacks_from_the_setup_cell():
    machine = facts(colab=True, installed={**facts().installed, "numpy": "2.0.2", "keras": "3.10.0", "numba-cuda": None,
                                           "nbval": None})
    status, text = verdict_and_text(machine)
    assert "info  Colab's own versions, kept: numpy 2.0.2 is installed, 2.4.6 is pinned; keras 3.10.0 is installed" in text
    assert "fail  numba-cuda is not installed\n        fix: run the notebook's first cell (the set-up cell)" in text, text
    assert "pip" not in text and "nbval" not in text and status == 1
    # What the set-up cell installs (fastlstm_lib/setup/colab.py: what Colab has too old) is not Colab's to keep.
    status, text = verdict_and_text(facts(colab=True, installed={**facts().installed, "numba-cuda": "0.22.2"}))
    assert "fail  numba-cuda 0.22.2 is installed, 0.30.4 is pinned" in text and "fix: run the notebook's" in text
    assert "Colab's own versions" not in text and status == 1, text
    status, text = verdict_and_text(facts(colab=True, installed={**facts().installed, "numpy": "2.0.2"}))
    assert status == 0 and "(0 problems, 1 warning)" in text and "warn  this Colab runtime has no GPU" in text, text


def test_one_pinned_command_for_every_package_by_this_very_python():
    machine = facts(executable="/opt/my python/bin/python3",
                    installed={**facts().installed, "numba": None, "numpy": None, "keras": "3.10.0", "tqdm": None})
    status, text = verdict_and_text(machine)
    assert status == 1 and text.count("pip install") == 1, text
    assert ("fail  numpy, numba, tqdm are not installed; keras 3.10.0 is installed, 3.15.1 is pinned" in text)
    assert ("""fix: '/opt/my python/bin/python3' -m pip install "numpy==2.4.6" "numba==0.68.1" "tqdm==4.70.1" """
            '"keras==3.15.1"') in text
    assert findings.quoted("~/.pyenv/versions/3.11.7/bin/python3") == "~/.pyenv/versions/3.11.7/bin/python3"
    assert findings.quoted("~/my envs/python") == "~/'my envs/python'"
    assert findings.quoted("C:/Program Files/Python311/python.exe", "Windows") == '"C:\\Program Files\\Python311\\python.exe"'


def test_another_python_than_the_courses_venv_is_pointed_to_it():
    machine = facts(executable="/usr/bin/python3", course_python=".venv/bin/python",
                    installed={**facts().installed, "numba": None, "nbval": None})
    status, text = verdict_and_text(machine)
    assert "fix: use the course's Python: .venv/bin/python -m fastlstm_lib doctor" in text, text
    assert '             or install into this Python: /usr/bin/python3 -m pip install "numba==0.68.1"' in text
    assert "nbval" not in text  # the wrong Python is one cause, said once
    assert "(run the fix commands in the course's folder" in text
    status, text = verdict_and_text(facts(python=(3, 8, 10), course_python=".venv/bin/python"))
    assert status == 1 and "fix: use the course's Python: .venv/bin/python" in text and "pip" not in text


def test_numba_cuda_missing_on_a_machine_with_a_driver_gets_the_cuda_libraries():
    machine = facts(cuda={"driver_library": True, "numba_cuda": {"error": "ModuleNotFoundError"}},
                    installed={**facts().installed, "numba-cuda": None})
    status, text = verdict_and_text(machine)
    assert status == 1 and 'python -m pip install "numba-cuda[cu12]==0.30.4"' in text
    assert "not checked (needs numba-cuda, above)" in text and "nvidia-smi" not in text


def test_full_counts_a_missing_package_once():
    machine = facts(installed={**facts().installed, "tensorflow": None},
                    backend_gpus={"error": "ModuleNotFoundError: No module named 'tensorflow'"})
    status, text = verdict_and_text(machine)
    assert "fail  tensorflow is not installed" in text and "does not import" not in text
    assert "Keras backend: tensorflow (not checked: needs tensorflow, above)" in text
    assert "(1 problem, 0 warnings)" in text, text


@pytest.mark.parametrize("system, machine, python, words", [
    ("Linux", "x86_64", (3, 14, 0), "Python 3.11, 3.12 or 3.13 is needed"),
    ("Darwin", "x86_64", (3, 13, 1), "an Intel Mac needs Python 3.11 or 3.12"),
])
def test_a_python_the_pins_have_no_wheels_for_fails_in_make_setups_words(system, machine, python, words):
    # One rule for both: fastlstm_lib.setup.requirements.python_problem, which make setup runs first.
    status, text = verdict_and_text(facts(system=system, machine=machine, python=python))
    assert status == 1 and f"fail  Python {'.'.join(map(str, python))}: {words}" in text, text
    assert verdict_and_text(facts(system=system, machine=machine, python=(3, 12, 1)))[1].count(
        "fail  Python") == 0
