"""From the machine's answers (``probes.Facts``) to findings: ok, info, warn or fail, each problem
with the one command that fixes it. Pure functions of the facts, so every case (a GPU without
libcudadevrt, TensorFlow blind to the GPU, Colab without a GPU runtime...) is testable anywhere.

Which CUDA libraries to install depends on the driver AND the GPU: CUDA 13's compiler (NVVM)
refuses compute capability below 7.5 (M40 5.2, P100 6.0, V100 7.0), yet R580 drivers report 13.0
on those GPUs, so ``[cu13]`` only from driver 13 and compute capability 7.5 up, ``[cu12]``
otherwise (a 13.x driver runs CUDA 12's libraries), and a driver older than CUDA 12 must be
updated first. A GPU below compute capability 6.0 has no cooperative launch, hence no grid
barrier: the persistent step cannot run on it, whatever is installed.
"""

from __future__ import annotations

import dataclasses
import re

from .probes import Facts

GIB = 1024 ** 3
STATUSES = ("ok", "info", "warn", "fail")
#: CUDA 13's NVVM compiles for compute capability 7.5 and newer only (CUDA 12's from 5.0).
CUDA13_COMPUTE_CAPABILITY = (7, 5)
#: Cooperative launch, and so a grid barrier (notebook 09's persistent kernel), from this compute capability.
COOPERATIVE_COMPUTE_CAPABILITY = (6, 0)
DRIVER_UPDATE = ("update the NVIDIA driver: R525 or newer runs CUDA 12, R580 or newer CUDA 13 (nvidia-smi shows "
                 "the one installed)")


@dataclasses.dataclass(frozen=True)
class Finding:
    status: str  # "ok", "info", "warn" (runs, with a caveat) or "fail" (the course will not run)
    text: str
    fix: str = ""


def pip(*requirements: str) -> str:
    return "python -m pip install " + " ".join(f'"{r}"' for r in requirements)


def pinned(facts: Facts, package: str) -> str:
    return f"{package}=={facts.pins[package][0]}" if package in facts.pins else package


def version_tuple(text) -> tuple[int, ...] | None:
    """ "13.0" -> (13, 0), "5.2" -> (5, 2); None when unknown or not a version."""
    try:
        return tuple(int(part) for part in str(text).split(".")[:2]) if text else None
    except ValueError:
        return None


def device_facts(facts: Facts) -> dict:
    """cuda_probe.py's answers about the GPU ({} when it has none, or failed)."""
    device = facts.cuda.get("device")
    return device if isinstance(device, dict) else {}


def cuda_extra(driver: tuple | None, compute_capability: tuple | None) -> str | None:
    """The numba-cuda extra for this driver and GPU: "cu13" only for a driver of CUDA 13 or newer
    and compute capability 7.5 or newer; "cu12" for a 12.x driver, or an older GPU on a newer
    driver; None when the driver is older than CUDA 12 (update it first). An unknown driver gets
    "cu12", an unknown GPU on a 13.x driver "cu13"."""
    if driver is None:
        return "cu12"
    if driver < (12,):
        return None
    if driver >= (13,) and (compute_capability is None or compute_capability >= CUDA13_COMPUTE_CAPABILITY):
        return "cu13"
    return "cu12"


def cuda_wheel(facts: Facts) -> str:
    """The fix that installs numba-cuda with the CUDA libraries this driver and GPU need (``cuda_extra``)."""
    device = device_facts(facts)
    extra = cuda_extra(version_tuple(device.get("driver")), version_tuple(device.get("compute_capability")))
    if extra is None:
        return DRIVER_UPDATE
    version = facts.pins.get("numba-cuda", ("",))[0]
    return pip(f"numba-cuda[{extra}]" + (f"=={version}" if version else ""))


def python_finding(facts: Facts) -> Finding:
    version = ".".join(str(v) for v in facts.python)
    match = re.search(r">=\s*(\d+)\.(\d+)", facts.requires_python or "")
    needed = (int(match.group(1)), int(match.group(2))) if match else (3, 11)
    if tuple(facts.python[:2]) < needed:
        return Finding("fail", f"Python {version}: the course needs Python >= {needed[0]}.{needed[1]}",
                       "conda env create -f environment.yml   (a Python 3.11 environment with the pinned packages)")
    return Finding("ok", f"Python {version} (the course needs {facts.requires_python or '>=3.11'})")


def package_findings(facts: Facts) -> list[Finding]:
    needed = [p for p, (_, group) in facts.pins.items() if group == "core"]
    backend = facts.keras_backend
    if backend != "tensorflow":
        needed = [p for p in needed if p != "tensorflow"] + [backend]
    findings, fine = [], []
    for package in needed:
        have = facts.installed.get(package)
        want = facts.pins.get(package, (None,))[0]
        if have is None and package == "tqdm":
            findings.append(Finding("warn", "tqdm is not installed: no progress bars", pip(pinned(facts, "tqdm"))))
        elif have is None:
            findings.append(Finding("fail", f"{package} is not installed", pip(pinned(facts, package))))
        elif want and have != want:
            findings.append(Finding("warn", f"{package} {have} is installed, {want} is pinned: the notebooks' stored "
                                            "outputs were made with the pinned versions (nbval may flag differences)",
                                    pip(pinned(facts, package))))
        else:
            fine.append(f"{package} {have}")
    if fine:
        findings.insert(0, Finding("ok", "packages as pinned: " + ", ".join(fine)))
    missing_tools = [p for p, (_, group) in facts.pins.items() if group != "core" and facts.installed.get(p) is None]
    if missing_tools:
        findings.append(Finding("info", f"not installed: {', '.join(missing_tools)} (needed by `make test` and "
                                        "`make lab`, not by the notebooks themselves)", 'python -m pip install -e ".[test,lab]"'))
    return findings


def gpu_findings(facts: Facts) -> list[Finding]:
    cuda = facts.cuda
    if "error" in cuda:
        return [Finding("warn", f"could not ask CUDA what it sees: {cuda['error']}", cuda_wheel(facts))]
    if cuda.get("numba_cuda") is True:
        return gpu_present(facts)
    findings = []
    if facts.colab:
        findings.append(Finding("warn", "this Colab runtime has no GPU: the notebooks run on the simulator",
                                "Runtime > Change runtime type > a GPU, then run the setup cell again"))
    elif facts.system == "Darwin":
        findings.append(Finding("info", "macOS has no CUDA: the notebooks run on Numba's CUDA simulator (slow, tiny "
                                        "sizes, timings meaningless; a failed check means the same as on a GPU, races and cross-block barriers need a GPU)"))
    elif cuda.get("driver_library"):
        findings.append(Finding("warn", "a CUDA driver is installed but sees no GPU: the notebooks run on the simulator",
                                "nvidia-smi   (shows whether the driver sees the GPU, and why not)"))
    else:
        findings.append(Finding("info", "no NVIDIA GPU: the notebooks run on Numba's CUDA simulator (slow, tiny sizes, "
                                        "timings meaningless; a failed check means the same as on a GPU, races and cross-block barriers need a GPU)"))
    if facts.simulator_kernel == "ok":
        findings.append(Finding("ok", "the simulator runs kernels"))
    elif facts.simulator_kernel is not None:
        findings.append(Finding("fail", f"the simulator cannot run a kernel: {facts.simulator_kernel}",
                                pip(pinned(facts, "numba"), pinned(facts, "numba-cuda"))))
    if cuda.get("nvvm") is True and cuda.get("nvrtc") is True:
        findings.append(Finding("info", "CUDA's compilers (NVVM, NVRTC) are here: Numba can compile the kernels for a GPU "
                                        "on this machine; the compile matrix (python -m fastlstm_lib.compile_matrix, "
                                        "tests/test_compile_matrix.py) builds them for sm_52 to sm_90 without one"))
    return findings


def gpu_present(facts: Facts) -> list[Finding]:
    cuda, device = facts.cuda, facts.cuda.get("device", {})
    if "error" in device:
        return [Finding("fail", f"CUDA sees a GPU but cannot use it: {device['error']}", "nvidia-smi")]
    findings = [Finding("ok", f"GPU: {device.get('name')} (compute capability {device.get('compute_capability')}, "
                              f"{device.get('multiprocessors')} SMs, CUDA driver {device.get('driver')})")]
    driver, capability = version_tuple(device.get("driver")), version_tuple(device.get("compute_capability"))
    if driver is not None and driver < (12,):
        findings.append(Finding("fail", f"CUDA driver {device.get('driver')} is too old: numba-cuda's CUDA libraries "
                                        "(12 or 13) need a driver for CUDA 12 or newer", DRIVER_UPDATE))
    elif driver is not None and driver >= (13,) and capability is not None and capability < CUDA13_COMPUTE_CAPABILITY:
        findings.append(Finding("info", f"CUDA 13 cannot compile for compute capability {device.get('compute_capability')} "
                                        "(it needs 7.5 or newer): this GPU needs CUDA 12's libraries (numba-cuda[cu12]), "
                                        f"which its {device.get('driver')} driver runs"))
    for library in ("nvvm", "nvrtc"):
        if cuda.get(library) is not True:
            findings.append(Finding("fail", f"{library.upper()} is missing: Numba cannot compile kernels for the GPU",
                                    cuda_wheel(facts)))
    if cuda.get("plain_kernel") is True:
        findings.append(Finding("ok", "a test kernel compiled and ran on the GPU"))
    else:
        error = cuda.get("plain_kernel", {}).get("error", "wrong result") if isinstance(cuda.get("plain_kernel"), dict) \
            else "wrong result"
        findings.append(Finding("fail", f"a test kernel failed on the GPU: {error}", cuda_wheel(facts)))
    barrier = grid_barrier_finding(facts)
    if barrier is not None:
        findings.append(barrier)
    if facts.simulator_here:
        findings.append(Finding("info", f"this Python runs on the simulator anyway, because {facts.forced_by} is set",
                                f"unset {facts.forced_by} (and restart the kernel) to use the GPU"))
    return findings


def grid_barrier_finding(facts: Facts) -> Finding | None:
    """Why the grid barrier (notebook 09) does not work here, if it does not: a GPU without
    cooperative launch (compute capability below 6.0), whatever is installed; else a missing
    libcudadevrt; else the test kernel's own error. None when it works."""
    cuda, device = facts.cuda, device_facts(facts)
    capability = version_tuple(device.get("compute_capability"))
    cooperative = device.get("cooperative_launch")
    if cooperative is None and capability is not None:  # a probe that did not ask: the compute capability's rule
        cooperative = capability >= COOPERATIVE_COMPUTE_CAPABILITY
    if cooperative is False:
        why = (f"compute capability {device.get('compute_capability')}; cooperative launch needs 6.0 or newer"
               if capability is not None and capability < COOPERATIVE_COMPUTE_CAPABILITY
               else "its driver reports no cooperative launch")
        return Finding("warn", f"{device.get('name')} cannot launch a cooperative grid ({why}): no grid barrier, so "
                               "the persistent step (notebook 09) cannot run on this GPU (benchmarks skip it and say "
                               "why); every other step runs")
    if cuda.get("cudadevrt") is not True:
        return Finding("warn", "no working grid barrier (libcudadevrt.a, the CUDA device runtime, missing): "
                               "notebook 09's persistent kernel will not run on this GPU", cuda_wheel(facts))
    if cuda.get("grid_barrier") is not True:
        answer = cuda.get("grid_barrier")
        error = answer.get("error", "wrong result") if isinstance(answer, dict) else "wrong result"
        return Finding("warn", f"the grid-barrier test kernel failed: {error}: notebook 09's persistent kernel may not "
                               "run on this GPU", cuda_wheel(facts))
    return None


def backend_findings(facts: Facts) -> list[Finding]:
    backend, answer = facts.keras_backend, facts.backend_gpus
    if answer is None:
        return [Finding("info", f"Keras backend: {backend} (not imported here, to stay fast; "
                                "`python -m fastlstm_lib doctor --full` checks it imports and which GPU it sees)")]
    if "error" in answer:
        return [Finding("fail", f"Keras with the {backend} backend does not import: {answer['error']}",
                        pip(pinned(facts, "keras"), pinned(facts, backend)))]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(answer.get("versions", {}).items()))
    if answer.get("gpus"):
        return [Finding("ok", f"Keras ({versions}) sees {', '.join(answer['gpus'])}")]
    if facts.cuda.get("numba_cuda") is True:
        fix = pip(f"tensorflow[and-cuda]=={facts.pins.get('tensorflow', ('',))[0]}") if backend == "tensorflow" \
            else pip(backend)
        return [Finding("warn", f"Keras ({versions}) sees no GPU: notebook 10's Keras LSTM (cuDNN) would run on the "
                                "CPU", fix)]
    return [Finding("ok", f"Keras ({versions}) imports; it computes on the CPU here")]


def resource_findings(facts: Facts) -> list[Finding]:
    findings = []
    if facts.disk_free is None:
        findings.append(Finding("info", "free disk space unknown"))
    elif facts.disk_free < GIB // 4:
        findings.append(Finding("fail", f"{facts.disk_free / GIB:.2f} GiB free on the course's disk: too little to "
                                        "run the notebooks", "df -h .   (then free some space)"))
    elif facts.disk_free < GIB:
        findings.append(Finding("warn", f"{facts.disk_free / GIB:.1f} GiB free on the course's disk (1 GiB or more "
                                        "is comfortable)", "df -h ."))
    else:
        findings.append(Finding("ok", f"{facts.disk_free / GIB:.0f} GiB free on the course's disk"))
    if facts.memory_available is not None and facts.memory_available < 2 * GIB:
        findings.append(Finding("warn", f"{facts.memory_available / GIB:.1f} GiB of memory available: TensorFlow "
                                        "and a notebook need about 2 GiB; close other programs"))
    elif facts.memory_total is not None:
        available = f"{facts.memory_available / GIB:.1f} GiB available of " if facts.memory_available else ""
        findings.append(Finding("ok", f"memory: {available}{facts.memory_total / GIB:.1f} GiB"))
    return findings


def diagnose(facts: Facts) -> list[Finding]:
    return ([python_finding(facts)] + package_findings(facts) + gpu_findings(facts) + backend_findings(facts)
            + resource_findings(facts))


def verdict(facts: Facts, findings: list[Finding]) -> tuple[int, str]:
    """(exit status, last line): 0 only when the course will run here."""
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    counts = f"{fails} problem{'s' if fails != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
    if fails:
        return 1, f"verdict: the course will NOT run here yet ({counts}): run the fix lines above, then this again."
    where = "on Numba's CUDA simulator" if facts.simulator_here else "on the GPU"
    return 0, f"verdict: the course will run here, {where} ({counts})."


def report(facts: Facts, findings: list[Finding]) -> str:
    lines = [f"fastlstm doctor: {facts.system} {facts.machine}, Python {'.'.join(map(str, facts.python))}"
             + (", Google Colab" if facts.colab else "")]
    for finding in findings:
        lines.append(f"  {finding.status:<5} {finding.text}")
        if finding.fix:
            lines.append(f"        fix: {finding.fix}")
    lines.append(verdict(facts, findings)[1])
    return "\n".join(lines)
