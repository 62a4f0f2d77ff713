"""The exact commands the doctor's findings name as fixes, and the ``Finding`` that carries one.

Exact means: the interpreter that needs the packages (this one, by its path, not a ``python`` that
may be another), or the course's own ``.venv`` Python when this is another one; one pinned
``pip install`` for everything missing at once; the CUDA libraries this driver and GPU need; the
shell's own way of unsetting KERAS_BACKEND; and on Colab, whose preinstalled packages the course
keeps, the notebook's setup cell instead of any ``pip``.

Which CUDA libraries depends on the driver AND the GPU: CUDA 13's compiler (NVVM) refuses compute
capability below 7.5 (M40 5.2, P100 6.0, V100 7.0), yet R580 drivers report 13.0 on those GPUs, so
``[cu13]`` only from driver 13 and compute capability 7.5 up, ``[cu12]`` otherwise (a 13.x driver
runs CUDA 12's libraries), and a driver older than CUDA 12 must be updated first.
"""

from __future__ import annotations

import dataclasses
import shlex

#: CUDA 13's NVVM compiles for compute capability 7.5 and newer only (CUDA 12's from 5.0).
CUDA13_COMPUTE_CAPABILITY = (7, 5)
DRIVER_UPDATE = ("update the NVIDIA driver: R525 or newer runs CUDA 12, R580 or newer CUDA 13 (nvidia-smi shows "
                 "the one installed)")
SETUP_CELL = "run the notebook's first cell (the set-up cell), then this one again"


@dataclasses.dataclass(frozen=True)
class Finding:
    status: str  # "ok", "info", "warn" (runs, with a caveat) or "fail" (the course will not run)
    text: str
    fix: str = ""  # a command; alternatives on further lines, each starting "or "


def quoted(path: str, system: str = "Linux") -> str:
    """A path as a shell command word: POSIX quoting (a leading "~/" left outside the quotes, so that
    the shell still expands it), double quotes on Windows when it has spaces."""
    if system == "Windows":
        path = path.replace("/", "\\")
        return f'"{path}"' if " " in path else path
    if path.startswith("~/"):
        rest = path[2:]
        return "~/" + (shlex.quote(rest) if rest else "")
    return shlex.quote(path)


def python(facts) -> str:
    """This Python, as a command word."""
    return quoted(facts.executable, facts.system)


def pip(facts, *requirements: str) -> str:
    """One ``pip install`` of ``requirements`` by this very Python; when the course's .venv exists and
    this Python is another one, using that one comes first. On Colab: the setup cell."""
    if facts.colab:
        return SETUP_CELL
    command = f"{python(facts)} -m pip install " + " ".join(f'"{r}"' for r in requirements)
    if facts.course_python:
        return f"{use_course_python(facts)}\nor install into this Python: {command}"
    return command


def pip_extras(facts, *extras: str) -> str:
    """The course's own extras, as pinned in pyproject.toml (run in the course's folder), by this Python."""
    command = f'{python(facts)} -m pip install -e ".[{",".join(extras)}]"'
    return f"{use_course_python(facts)}\nor install into this Python: {command}" if facts.course_python else command


def use_course_python(facts) -> str:
    """Run the course's .venv Python instead of this one (what ``make setup`` installed)."""
    course = quoted(facts.course_python, facts.system)
    return (f"use the course's Python: {course} -m fastlstm_lib doctor   (`make setup` installs into it; "
            "in Jupyter, its kernel: `make lab` starts it)")


def new_python(facts, needed: str) -> str:
    """The fix for a Python that is too old: the course's .venv, or ``make setup`` with a new one."""
    if facts.colab:
        return "Runtime > Change runtime type > the newest runtime version"
    if facts.course_python:
        return use_course_python(facts)
    return (f"make setup PYTHON=python3.11   (creates .venv with Python {needed} or newer and the pinned packages; "
            "any Python 3.11, 3.12 or 3.13 will do)\nor conda env create -f environment.yml")


def pinned(facts, package: str, extra: str = "") -> str:
    """``package[extra]==pin`` (``package[extra]`` when the course pins no version of it here)."""
    name = f"{package}[{extra}]" if extra else package
    return f"{name}=={facts.pins[package][0]}" if package in facts.pins else name


def unset_backend(facts) -> str:
    """Back to Keras' default backend, TensorFlow (the one the course pins), in this machine's shell."""
    if facts.colab:
        return ("delete the line that sets KERAS_BACKEND, then Runtime > Restart session "
                "(TensorFlow, the course's backend, is Keras' default)")
    why = ("in the shell that starts Python or Jupyter, then start it again: TensorFlow, the course's pinned "
           "backend, is Keras' default")
    if facts.system == "Windows":
        return f"set KERAS_BACKEND=   (cmd; {why})\nor Remove-Item Env:KERAS_BACKEND   (PowerShell)"
    return f"unset KERAS_BACKEND   ({why})"


def version_tuple(text) -> tuple[int, ...] | None:
    """ "13.0" -> (13, 0), "5.2" -> (5, 2); None when unknown or not a version."""
    try:
        return tuple(int(part) for part in str(text).split(".")[:2]) if text else None
    except ValueError:
        return None


def device_facts(facts) -> dict:
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


def numba_cuda_requirement(facts) -> str | None:
    """numba-cuda, pinned, with the CUDA libraries this machine's driver and GPU need when it has a CUDA
    driver (plain without one: the simulator needs no CUDA library); None when the driver is too old."""
    if not facts.cuda.get("driver_library") and facts.cuda.get("numba_cuda") is not True:
        return pinned(facts, "numba-cuda")
    device = device_facts(facts)
    extra = cuda_extra(version_tuple(device.get("driver")), version_tuple(device.get("compute_capability")))
    return pinned(facts, "numba-cuda", extra) if extra else None


def cuda_wheel(facts) -> str:
    """The fix that installs numba-cuda with the CUDA libraries this driver and GPU need (``cuda_extra``)."""
    device = device_facts(facts)
    extra = cuda_extra(version_tuple(device.get("driver")), version_tuple(device.get("compute_capability")))
    if extra is None:
        return DRIVER_UPDATE
    return pip(facts, pinned(facts, "numba-cuda", extra))
