"""From the machine's answers (``probes.Facts``) to findings (ok, info, warn or fail), each problem with
the one command that fixes it, by the Python that needs it; then the verdict and the report. Each
cause is reported once: what follows from it (Keras not importing, the GPU not checked) is not again.
"""

from __future__ import annotations

import dataclasses
import shlex

from ...tables import Column, Span, table
from ..colab import INSTALL as COLAB_INSTALLS
from ..requirements import LOWEST_PYTHON, python_problem

GIB = 1024 ** 3
#: CUDA 13's NVVM compiles for compute capability 7.5 and newer only (CUDA 12's from 5.0).
CUDA13_COMPUTE_CAPABILITY = (7, 5)
DRIVER_UPDATE = ("update the NVIDIA driver: R525 or newer runs CUDA 12, R580 or newer CUDA 13 (nvidia-smi shows "
                 "the one installed)")
SETUP_CELL = "run the notebook's first cell (the set-up cell), then this one again"
SIMULATOR_CAVEATS = ("slow, tiny sizes, timings meaningless; a failed check means the same as on a GPU, races and "
                     "cross-block barriers need a GPU")


@dataclasses.dataclass(frozen=True)
class Finding:
    status: str  # "ok", "info", "warn" (runs, with a caveat) or "fail" (the course will not run)
    text: str
    fix: str = ""  # a command; alternatives on further lines, each starting "or "


# ---- the fixes ------------------------------------------------------------------------------------

def quoted(path: str, system: str = "Linux") -> str:
    """A path as a shell word: POSIX quoting after a leading "~/", double quotes on Windows."""
    if system == "Windows":
        path = path.replace("/", "\\")
        return f'"{path}"' if " " in path else path
    if path.startswith("~/"):
        return "~/" + (shlex.quote(path[2:]) if path[2:] else "")
    return shlex.quote(path)


def use_course_python(facts) -> str:
    return (f"use the course's Python: {quoted(facts.course_python, facts.system)} -m fastlstm_lib doctor   "
            "(`make setup` installs into it; in Jupyter, its kernel: `make lab` starts it)")


def pip(facts, *requirements: str) -> str:
    """Installing ``requirements`` into this Python; the course's .venv Python first when this is another one."""
    if facts.colab:
        return SETUP_CELL
    command = f"{quoted(facts.executable, facts.system)} -m pip install " + " ".join(f'"{r}"' for r in requirements)
    return f"{use_course_python(facts)}\nor install into this Python: {command}" if facts.course_python else command


def pinned(facts, package: str, extra: str = "") -> str:
    """``package[extra]==pin`` (no ``==`` when the course pins no version of it here)."""
    name = f"{package}[{extra}]" if extra else package
    return f"{name}=={facts.pins[package][0]}" if package in facts.pins else name


def version_tuple(text) -> tuple[int, ...] | None:
    """ "13.0" -> (13, 0); None when unknown or not a version."""
    try:
        return tuple(int(part) for part in str(text).split(".")[:2]) if text else None
    except ValueError:
        return None


def cuda_requirement(facts) -> str | None:
    """numba-cuda with the CUDA libraries this driver AND GPU need: CUDA 13's NVVM refuses compute
    capability below 7.5, which R580 drivers (13.0) still run; None: the driver predates CUDA 12
    (``gpu_present`` then says to update it, and nothing else)."""
    device = facts.cuda.get("device") or {}  # {"error": ...} when CUDA could not say
    driver, capability = version_tuple(device.get("driver")), version_tuple(device.get("compute_capability"))
    if driver is not None and driver < (12,):
        return None
    new = driver is not None and driver >= (13,) and (capability is None or capability >= CUDA13_COMPUTE_CAPABILITY)
    return pinned(facts, "numba-cuda", "cu13" if new else "cu12")


def cuda_wheel(facts) -> str:
    return pip(facts, cuda_requirement(facts))


# ---- Python and the packages ----------------------------------------------------------------------

def python_too_old(facts) -> bool:
    return tuple(facts.python[:2]) < LOWEST_PYTHON


def python_finding(facts) -> Finding:
    version, needed = ".".join(map(str, facts.python)), "{}.{}".format(*LOWEST_PYTHON)
    system = {"Darwin": "darwin", "Windows": "win32", "Linux": "linux"}.get(facts.system, facts.system)
    why = (f"Python {needed} or newer needed (the course's pins: >={needed})" if python_too_old(facts)
           else python_problem(facts.python[:2], system, facts.machine))
    if not why:
        return Finding("ok", f"Python {version} (the course needs >={needed})")
    if facts.colab:
        fix = "Runtime > Change runtime type > the newest runtime version"
    elif facts.course_python:
        fix = use_course_python(facts)
    else:
        fix = (f"make setup PYTHON=python3.11   (creates .venv with Python {needed} or newer and the pinned "
               "packages; any Python 3.11, 3.12 or 3.13 will do)\nor conda env create -f environment.yml")
    return Finding("fail", f"Python {version}: {why}", fix)


def names(packages) -> str:
    return ", ".join(packages[:-1]) + " and " + packages[-1] if len(packages) > 1 else "".join(packages)


def package_findings(facts) -> list[Finding]:
    needed = [p for p, (_, group) in facts.pins.items() if group == "core"]
    missing = [p for p in needed if facts.installed.get(p) is None]
    differ = [(p, facts.installed[p], facts.pins[p][0]) for p in needed
              if p not in missing and facts.installed[p] != facts.pins[p][0]]
    fine = [f"{p} {facts.installed[p]}" for p in needed if p not in missing and facts.installed[p] == facts.pins[p][0]]
    findings = [Finding("ok", "packages as pinned: " + ", ".join(fine))] if fine else []
    absent = ", ".join(missing) + (" is" if len(missing) == 1 else " are") + " not installed"
    kept = [d for d in differ if facts.colab and d[0] not in {r.split("==")[0] for r in COLAB_INSTALLS}]
    if kept:  # Colab's own versions stay; what the set-up cell installs (pip() says so on Colab) does not
        findings.append(Finding("info", "Colab's own versions, kept: " + "; ".join(
            f"{p} {have} is installed, {want} is pinned" for p, have, want in kept) + " (the notebooks' stored "
            "outputs were made with the pinned ones; small differences are expected)"))
        differ = [d for d in differ if d not in kept]
    if missing or differ:
        versions = "; ".join(f"{p} {have} is installed, {want} is pinned" for p, have, want in differ)
        parts = ([absent] if missing else []) + ([versions + ": the notebooks' stored outputs were made with the "
                                                   "pinned versions (nbval may flag differences)"] if differ else [])
        status = "fail" if missing or (facts.colab and differ) else "warn"
        driver = facts.cuda.get("driver_library") or facts.cuda.get("numba_cuda") is True  # else: the simulator's plain one
        numba_cuda = (driver and cuda_requirement(facts)) or pinned(facts, "numba-cuda")
        requirements = [numba_cuda if p == "numba-cuda" else pinned(facts, p) for p in missing + [p for p, _, _ in differ]]
        findings.append(Finding(status, "; ".join(parts), pip(facts, *requirements)))
    return findings


def backend_findings(facts) -> list[Finding]:
    answer = facts.backend_gpus
    unchecked = [package for package in ("numpy", "keras", "tensorflow") if facts.installed.get(package) is None]
    if unchecked:
        return [Finding("info", f"Keras backend: tensorflow (not checked: needs {names(unchecked)}, above)")]
    if answer is None:
        return [Finding("info", "Keras backend: tensorflow (not imported here, to stay fast; "
                                "`python -m fastlstm_lib doctor --full` checks it imports and which GPU it sees)")]
    if "error" in answer:
        return [Finding("fail", f"Keras with the tensorflow backend does not import: {answer['error']}",
                        pip(facts, pinned(facts, "keras"), pinned(facts, "tensorflow")))]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(answer.get("versions", {}).items()))
    if answer.get("gpus"):
        return [Finding("ok", f"Keras ({versions}) sees {', '.join(answer['gpus'])}")]
    if facts.cuda.get("numba_cuda") is True:
        return [Finding("warn", f"Keras ({versions}) sees no GPU: notebook 10's Keras LSTM (cuDNN) would run on the "
                                "CPU", pip(facts, pinned(facts, "tensorflow", "and-cuda")))]
    return [Finding("ok", f"Keras ({versions}) imports; it computes on the CPU here")]


# ---- the GPU, or the simulator --------------------------------------------------------------------

def gpu_findings(facts) -> list[Finding]:
    cuda = facts.cuda
    missing = [p for p in ("numba", "numba-cuda") if (p == "numba" or p in facts.pins) and facts.installed.get(p) is None]
    if missing:
        return [Finding("info", f"the GPU (or Numba's CUDA simulator): not checked (needs {names(missing)}, above)")]
    if "error" in cuda:
        return [Finding("warn", f"could not ask CUDA what it sees: {cuda['error']}", cuda_wheel(facts))]
    if cuda.get("numba_cuda") is True:
        return gpu_present(facts)
    if facts.colab:
        return [Finding("warn", "this Colab runtime has no GPU: the notebooks run on the simulator",
                        "Runtime > Change runtime type > a GPU, then run the set-up cell again")]
    if facts.system == "Darwin":
        return [Finding("info", "macOS has no CUDA: the notebooks run on Numba's own CUDA simulator (numba-cuda, "
                                f"the GPU path, is not needed on a Mac; {SIMULATOR_CAVEATS})")]
    if cuda.get("driver_library"):
        return [Finding("warn", "a CUDA driver is installed but sees no GPU: the notebooks run on the simulator",
                        "nvidia-smi   (shows whether the driver sees the GPU, and why not)")]
    return [Finding("info", f"no NVIDIA GPU: the notebooks run on Numba's CUDA simulator ({SIMULATOR_CAVEATS})")]


def error_of(answer) -> str:
    return answer.get("error", "wrong result") if isinstance(answer, dict) else "wrong result"


def gpu_present(facts) -> list[Finding]:
    cuda, device = facts.cuda, facts.cuda.get("device", {})
    if "error" in device:
        return [Finding("fail", f"CUDA sees a GPU but cannot use it: {device['error']}", "nvidia-smi")]
    findings = [Finding("ok", f"GPU: {device.get('name')} (compute capability {device.get('compute_capability')}, "
                              f"{device.get('multiprocessors')} SMs, CUDA driver {device.get('driver')})")]
    driver = version_tuple(device.get("driver"))
    if driver is not None and driver < (12,):  # one cause: no kernel can run, so none is blamed on anything else
        return findings + [Finding("fail", f"CUDA driver {device.get('driver')} is too old: numba-cuda's CUDA "
                                           "libraries (12 or 13) need a driver for CUDA 12 or newer", DRIVER_UPDATE)]
    kernel = cuda.get("plain_kernel")
    compilers = [library.upper() for library in ("nvvm", "nvrtc") if cuda.get(library) is not True]
    if compilers:  # one cause: the test kernel cannot have worked without them, so it is not counted again
        findings.append(Finding("fail", f"{' and '.join(compilers)} {'is' if len(compilers) == 1 else 'are'} missing: "
                                        "Numba cannot compile kernels for the GPU"
                                        + ("" if kernel is True else f" (the test kernel failed: {error_of(kernel)})"),
                                cuda_wheel(facts)))
    elif kernel is True:
        findings.append(Finding("ok", "a test kernel compiled and ran on the GPU"))
    else:
        findings.append(Finding("fail", f"a test kernel failed on the GPU: {error_of(kernel)}", cuda_wheel(facts)))
    return findings


# ---- disk and memory, the verdict, the report -----------------------------------------------------

def resource_findings(facts) -> list[Finding]:
    if facts.disk_free is None:
        findings = [Finding("info", "free disk space unknown")]
    elif facts.disk_free < GIB // 4:
        findings = [Finding("fail", f"{facts.disk_free / GIB:.2f} GiB free on the course's disk: too little to "
                                    "run the notebooks", "df -h .   (then free some space)")]
    elif facts.disk_free < GIB:
        findings = [Finding("warn", f"{facts.disk_free / GIB:.1f} GiB free on the course's disk (1 GiB or more "
                                    "is comfortable)", "df -h .")]
    else:
        findings = [Finding("ok", f"{facts.disk_free / GIB:.0f} GiB free on the course's disk")]
    if facts.memory_available is not None and facts.memory_available < 2 * GIB:
        findings.append(Finding("warn", f"{facts.memory_available / GIB:.1f} GiB of memory available: TensorFlow "
                                        "and a notebook need about 2 GiB; close other programs"))
    elif facts.memory_total is not None:
        available = f"{facts.memory_available / GIB:.1f} GiB available of " if facts.memory_available else ""
        findings.append(Finding("ok", f"memory: {available}{facts.memory_total / GIB:.1f} GiB"))
    return findings


def diagnose(facts) -> list[Finding]:
    """Each finding in turn; for a Python older than the pins, only that (the rest waits for another one)."""
    if python_too_old(facts):
        return [python_finding(facts)] + resource_findings(facts)
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
