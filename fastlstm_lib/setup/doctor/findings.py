"""From the machine's answers (``probes.Facts``) to findings: ok, info, warn or fail, each problem
with the one command that fixes it (``fixes``). Pure functions of the facts, so every case (a GPU
without libcudadevrt, TensorFlow blind to the GPU, Colab without a GPU runtime, a Mac, a Python
without Numba...) is testable anywhere. The software's findings are in ``software``; here the GPU
(or the simulator), the disk and memory, the verdict and the report.

A GPU below compute capability 6.0 has no cooperative launch, hence no grid barrier: the
persistent step cannot run on it, whatever is installed.
"""

from __future__ import annotations

from ...tables import Column, Span, table
from . import fixes
from .fixes import CUDA13_COMPUTE_CAPABILITY, DRIVER_UPDATE, Finding, cuda_wheel, device_facts, version_tuple
from . import software
from .software import backend_findings, package_findings, python_finding, python_too_old

GIB = 1024 ** 3
#: Cooperative launch, and so a grid barrier (notebook 09's persistent kernel), from this compute capability.
COOPERATIVE_COMPUTE_CAPABILITY = (6, 0)
SIMULATOR_CAVEATS = ("slow, tiny sizes, timings meaningless; a failed check means the same as on a GPU, races and "
                     "cross-block barriers need a GPU")


def cuda_packages_missing(facts) -> list[str]:
    """Numba, and numba-cuda where this platform pins it: without them nothing about CUDA can be asked."""
    return [p for p in ("numba", "numba-cuda") if (p == "numba" or p in facts.pins) and facts.installed.get(p) is None]


def gpu_findings(facts) -> list[Finding]:
    cuda, missing = facts.cuda, cuda_packages_missing(facts)
    if missing or python_too_old(facts):
        return [Finding("info", f"the GPU (or Numba's CUDA simulator): not checked ({software.needs(facts, missing)})")]
    if "error" in cuda:
        return [Finding("warn", f"could not ask CUDA what it sees: {cuda['error']}", cuda_wheel(facts))]
    if cuda.get("numba_cuda") is True:
        return gpu_present(facts)
    findings = []
    if facts.colab:
        findings.append(Finding("warn", "this Colab runtime has no GPU: the notebooks run on the simulator",
                                "Runtime > Change runtime type > a GPU, then run the set-up cell again"))
    elif facts.system == "Darwin":
        findings.append(Finding("info", "macOS has no CUDA: the notebooks run on Numba's own CUDA simulator (numba-cuda, "
                                        f"the GPU path, is not needed on a Mac; {SIMULATOR_CAVEATS})"))
    elif cuda.get("driver_library"):
        findings.append(Finding("warn", "a CUDA driver is installed but sees no GPU: the notebooks run on the simulator",
                                "nvidia-smi   (shows whether the driver sees the GPU, and why not)"))
    else:
        findings.append(Finding("info", f"no NVIDIA GPU: the notebooks run on Numba's CUDA simulator ({SIMULATOR_CAVEATS})"))
    if facts.simulator_kernel == "ok":
        findings.append(Finding("ok", "the simulator runs kernels"))
    elif facts.simulator_kernel is not None:
        findings.append(Finding("fail", f"the simulator cannot run a kernel: {facts.simulator_kernel}",
                                fixes.pip(facts, *(fixes.pinned(facts, p) for p in ("numba", "numba-cuda") if p in facts.pins))))
    if cuda.get("nvvm") is True and cuda.get("nvrtc") is True:
        findings.append(Finding("info", "CUDA's compilers (NVVM, NVRTC) are here: Numba can compile the kernels for a GPU "
                                        "on this machine (what they compile the kernels to, for every GPU from sm_52 to "
                                        "sm_90, is already in data/kernel_resources.csv)"))
    return findings


def gpu_present(facts) -> list[Finding]:
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
    kernel = cuda.get("plain_kernel")
    error = kernel.get("error", "wrong result") if isinstance(kernel, dict) else "wrong result"
    compilers = [library.upper() for library in ("nvvm", "nvrtc") if cuda.get(library) is not True]
    if compilers:  # one cause: the test kernels cannot have worked without them, so they are not counted again
        findings.append(Finding("fail", f"{' and '.join(compilers)} {'is' if len(compilers) == 1 else 'are'} missing: "
                                        "Numba cannot compile kernels for the GPU"
                                        + ("" if kernel is True else f" (the test kernel failed: {error})"),
                                cuda_wheel(facts)))
    elif kernel is True:
        findings.append(Finding("ok", "a test kernel compiled and ran on the GPU"))
    else:
        findings.append(Finding("fail", f"a test kernel failed on the GPU: {error}", cuda_wheel(facts)))
    barrier = None if compilers else grid_barrier_finding(facts)
    if barrier is not None:
        findings.append(barrier)
    if facts.simulator_here:
        findings.append(Finding("info", f"this Python runs on the simulator anyway, because {facts.forced_by} is set",
                                f"unset {facts.forced_by} (and restart the kernel) to use the GPU"))
    return findings


def grid_barrier_finding(facts) -> Finding | None:
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


def resource_findings(facts) -> list[Finding]:
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


def diagnose(facts) -> list[Finding]:
    return ([python_finding(facts)] + package_findings(facts) + gpu_findings(facts) + backend_findings(facts)
            + resource_findings(facts))


def verdict(facts, findings: list[Finding]) -> tuple[int, str]:
    """(exit status, last line): 0 only when the course will run here."""
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    counts = f"{fails} problem{'s' if fails != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
    if fails:
        return 1, f"verdict: the course will NOT run here yet ({counts}): run the fix lines above, then this again."
    where = "on Numba's CUDA simulator" if facts.simulator_here else "on the GPU"
    return 0, f"verdict: the course will run here, {where} ({counts})."


def report(facts, findings: list[Finding]) -> str:
    lines = [f"fastlstm doctor: {facts.system} {facts.machine}, Python {'.'.join(map(str, facts.python))}"
             + (", Google Colab" if facts.colab else "")]
    rows = []  # each finding; under its text, its fix and the fix's alternatives
    for finding in findings:
        rows.append([finding.status, finding.text])
        if finding.fix:
            first, *alternatives = finding.fix.split("\n")
            rows.append(["", Span(f"fix: {first}")])
            rows.extend(["", Span(f"     {alternative}")] for alternative in alternatives)
    if rows:
        lines.append(table((Column("status", "<", 5), Column("finding")), rows, indent="  ", header=False))
    relative = [path for path in (facts.executable, facts.course_python) if path and path.startswith(".venv")]
    if any(word in finding.fix for word in relative + ['-e ".'] for finding in findings):
        lines.append("(run the fix commands in the course's folder, the one with pyproject.toml)")
    lines.append(verdict(facts, findings)[1])
    return "\n".join(lines)
