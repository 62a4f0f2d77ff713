"""Findings about the software: Python, the packages against this platform's pins, the Keras backend.

Each cause is reported once: a missing or mismatched package in one finding with one pinned
``pip install`` for all of them (``fixes.pip``), and what follows from it (Keras not importing,
the GPU not checked) not counted again. A KERAS_BACKEND naming a backend that is not installed is
fixed by going back to TensorFlow, the backend the course pins: the course pins no torch or JAX
version, so the doctor never suggests an unpinned install of one. On Colab the preinstalled
packages stay as they are: their versions are information, and what is missing comes from the
notebook's setup cell.
"""

from __future__ import annotations

from ..requirements import LOWEST_PYTHON, python_problem
from . import fixes, markers
from .fixes import Finding

#: Backends Keras 3 knows (KERAS_BACKEND), each by the package that provides it.
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")
#: The notebooks run without these (each loses what it says): a warning, not a failure.
OPTIONAL = {"tqdm": "no progress bars", "nvtx": "no NVTX ranges for Nsight Systems"}


def python_too_old(facts) -> bool:
    return tuple(facts.python[:2]) < LOWEST_PYTHON


def python_finding(facts) -> Finding:
    version = ".".join(str(v) for v in facts.python)
    needed = "{}.{}".format(*LOWEST_PYTHON)
    if python_too_old(facts):
        return Finding("fail", f"Python {version}: Python {needed} or newer needed (the course's pins: "
                               f"{facts.requires_python or '>=' + needed})", fixes.new_python(facts, needed))
    system = {"Darwin": "darwin", "Windows": "win32", "Linux": "linux"}.get(facts.system, facts.system)
    unsupported = python_problem(facts.python[:2], system, facts.machine)  # make setup's rule: wheels exist
    if unsupported:
        return Finding("fail", f"Python {version}: {unsupported}", fixes.new_python(facts, needed))
    return Finding("ok", f"Python {version} (the course needs {facts.requires_python or '>=' + needed})")


def backend_missing(facts) -> bool:
    """KERAS_BACKEND names a backend that is not installed here (or no backend at all)."""
    backend = facts.keras_backend
    return backend != "tensorflow" and (backend not in KERAS_BACKENDS or facts.installed.get(backend) is None)


def needed_packages(facts) -> list[str]:
    """The core pins this process needs: all of them, less TensorFlow when another installed backend runs
    Keras (a KERAS_BACKEND whose package is missing is fixed by going back to TensorFlow, so it stays)."""
    needed = [package for package, (_, group) in facts.pins.items() if group == "core"]
    if facts.keras_backend != "tensorflow" and not backend_missing(facts):
        needed = [package for package in needed if package != "tensorflow"]
    return needed


def requirement(facts, package: str) -> str:
    if package == "numba-cuda":
        return fixes.numba_cuda_requirement(facts) or fixes.pinned(facts, package)
    return fixes.pinned(facts, package)


def package_findings(facts) -> list[Finding]:
    if python_too_old(facts):
        return [Finding("info", "packages not checked: first a Python the pins are for (above)")]
    missing, differ, fine = [], [], []
    for package in needed_packages(facts):
        have, want = facts.installed.get(package), facts.pins[package][0]
        if have is None:
            missing.append(package)
        elif have != want:
            differ.append((package, have, want))
        else:
            fine.append(f"{package} {have}")
    findings = [Finding("ok", "packages as pinned: " + ", ".join(fine))] if fine else []
    absent = ", ".join(missing) + (" is" if len(missing) == 1 else " are") + " not installed"
    absent += (": " + "; ".join(OPTIONAL[p] for p in missing)) if missing and set(missing) <= set(OPTIONAL) else ""
    versions = "; ".join(f"{p} {have} is installed, {want} is pinned" for p, have, want in differ)
    if facts.colab:
        return findings + colab_package_findings(missing, differ, absent)
    if missing or differ:
        status = "fail" if set(missing) - set(OPTIONAL) else "warn"
        parts = ([absent] if missing else []) + ([versions + ": the notebooks' stored outputs were made with the "
                                                   "pinned versions (nbval may flag differences)"] if differ else [])
        packages = missing + [package for package, _, _ in differ]
        findings.append(Finding(status, "; ".join(parts), fixes.pip(facts, *(requirement(facts, p) for p in packages))))
    tools = [p for p, (_, group) in facts.pins.items() if group != "core" and facts.installed.get(p) is None]
    if tools and not (facts.course_python and missing):  # another Python than the course's: said once, above
        findings.append(Finding("info", f"not installed: {tool_names(tools)} (needed by `make test` and `make lab`, "
                                        "not by the notebooks themselves)", fixes.pip_extras(facts, "test", "lab")))
    return findings


def colab_installs() -> set[str]:
    """The packages the Colab set-up cell installs over Colab's own (``fastlstm_lib.setup.colab.INSTALL``)."""
    try:
        from .. import colab
    except ImportError:
        return set()
    return {markers.split(requirement)[0].split("==")[0].split("[")[0] for requirement in getattr(colab, "INSTALL", ())}


def colab_package_findings(missing: list[str], differ: list[tuple], absent: str) -> list[Finding]:
    """On Colab its own packages stay as they are (their versions: information); what the set-up cell
    installs (what Colab lacks, or has too old) is missing until that cell has run."""
    installs, findings = colab_installs(), []
    kept = [(p, have, want) for p, have, want in differ if p not in installs]
    too_old = [(p, have, want) for p, have, want in differ if p in installs]
    if kept:
        findings.append(Finding("info", "Colab's own versions, kept: " + "; ".join(
            f"{p} {have} is installed, {want} is pinned" for p, have, want in kept) + " (the notebooks' stored "
            "outputs were made with the pinned ones; small differences are expected)"))
    parts = ([absent] if missing else []) + [f"{p} {have} is installed, the set-up cell installs {want}"
                                             for p, have, want in too_old]
    if parts:
        status = "fail" if too_old or set(missing) - set(OPTIONAL) else "warn"
        findings.append(Finding(status, "; ".join(parts), fixes.SETUP_CELL))
    return findings


def tool_names(tools: list[str]) -> str:
    """The test and lab tools by name, NVIDIA's compiler packages (nvidia-*) counted."""
    nvidia = [tool for tool in tools if tool.startswith("nvidia-")]
    counted = f"{len(nvidia)} CUDA compiler package{'s' if len(nvidia) != 1 else ''} (nvidia-*)"
    names = [tool for tool in tools if tool not in nvidia] + ([counted] if nvidia else [])
    return ", ".join(names)


def unchecked(facts) -> list[str]:
    """What the backend needs to import and is not installed (reported by ``package_findings``)."""
    needs = ("numpy", "keras") + (("tensorflow",) if facts.keras_backend == "tensorflow" else ())
    return [package for package in needs if facts.installed.get(package) is None]


def needs(facts, missing: list[str]) -> str:
    """Why something is not checked: "needs numba and numba-cuda, above"."""
    if python_too_old(facts):
        return "needs Python {}.{} or newer, above".format(*LOWEST_PYTHON)
    names = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else "".join(missing)
    return f"needs {names}, above"


def tensorflow(facts) -> str:
    return " ".join(["TensorFlow", facts.pins.get("tensorflow", ("",))[0]]).strip()


def backend_findings(facts) -> list[Finding]:
    backend, answer = facts.keras_backend, facts.backend_gpus
    if backend_missing(facts):
        what = "not a Keras backend" if backend not in KERAS_BACKENDS else f"{backend} is not installed"
        return [Finding("fail", f"KERAS_BACKEND={backend}, but {what} (the course pins {tensorflow(facts)} as Keras' "
                                "backend, and no version of jax or torch)", fixes.unset_backend(facts))]
    if unchecked(facts) or python_too_old(facts):
        return [Finding("info", f"Keras backend: {backend} (not checked: {needs(facts, unchecked(facts))})")]
    findings = []
    if backend != "tensorflow":
        findings.append(Finding("info", f"Keras backend: {backend} {facts.installed.get(backend)} (KERAS_BACKEND); the "
                                        "course pins no version of it: its outputs were made with "
                                        f"{tensorflow(facts)}", fixes.unset_backend(facts)))
    if answer is None:
        return findings + [Finding("info", f"Keras backend: {backend} (not imported here, to stay fast; "
                                           "`python -m fastlstm_lib doctor --full` checks it imports and which GPU it sees)")]
    if "error" in answer:
        fix = (fixes.pip(facts, fixes.pinned(facts, "keras"), fixes.pinned(facts, "tensorflow"))
               if backend == "tensorflow" else fixes.unset_backend(facts))
        return findings + [Finding("fail", f"Keras with the {backend} backend does not import: {answer['error']}", fix)]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(answer.get("versions", {}).items()))
    if answer.get("gpus"):
        return findings + [Finding("ok", f"Keras ({versions}) sees {', '.join(answer['gpus'])}")]
    if facts.cuda.get("numba_cuda") is True:
        fix = (fixes.pip(facts, fixes.pinned(facts, "tensorflow", "and-cuda")) if backend == "tensorflow"
               else fixes.unset_backend(facts))
        return findings + [Finding("warn", f"Keras ({versions}) sees no GPU: notebook 10's Keras LSTM (cuDNN) would run "
                                           "on the CPU", fix)]
    return findings + [Finding("ok", f"Keras ({versions}) imports; it computes on the CPU here")]
