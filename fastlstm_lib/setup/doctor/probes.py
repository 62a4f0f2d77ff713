"""The doctor's questions to this machine, collected by ``gather`` into one ``Facts``.

Standard library only, so that a Python without the course's packages is told what it lacks. What
CUDA sees is asked in a fresh Python (``cuda_probe.py``), the Keras backend's GPUs in another, with
a time limit. Tests replace these functions to play other machines.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ...runtime.numba_compat import package_version  # loads no numba

ROOT = Path(__file__).resolve().parents[3]
CUDA_PROBE_TIMEOUT_S = 120
BACKEND_PROBE_TIMEOUT_S = 180


@dataclasses.dataclass
class Facts:
    system: str  # "Linux", "Darwin", "Windows"
    machine: str
    colab: bool
    python: tuple
    pins: dict  # {package: (version, group)} for THIS platform: group "core", "test" or "lab"
    installed: dict  # {package: version or None}
    simulator_here: bool  # this process runs kernels on the simulator
    cuda: dict  # cuda_probe.py's answers, or {"error": ...}
    backend_gpus: dict | None  # {"gpus": [...], "versions": {...}} or {"error": ...}; None: not asked
    disk_free: int | None
    memory_total: int | None
    memory_available: int | None
    executable: str = "python"  # this Python, as the fix lines name it (``shown_path``)
    course_python: str | None = None  # the course's .venv Python when it exists and this is another one


def this_machine(**changes: str) -> dict:
    """The environment-marker variables the pins use, here (``changes`` replace some: a fake Mac)."""
    return {"sys_platform": sys.platform, "platform_machine": platform.machine(),
            "platform_system": platform.system(), "os_name": os.name, "extra": "", **changes}


def marker_holds(marker: str, environment: dict) -> bool:
    """A PEP 508 marker as the pins write it: ``variable ==/!= 'text'`` clauses joined by ``and`` and
    ``or``, no parentheses (a bare Python has no ``packaging``); ValueError for anything else, so that
    a new pin it cannot read is noticed (tests/test_doctor.py reads every pin with it)."""

    def clause(text: str) -> bool:
        match = re.fullmatch(r"\s*(\w+)\s*(==|!=)\s*(['\"])([^'\"]*)\3\s*", text)
        if match is None or match.group(1) not in environment:
            raise ValueError(f"unsupported environment marker {marker!r}")
        return (environment[match.group(1)] == match.group(4)) == (match.group(2) == "==")

    if not marker.strip():
        return True
    return any([all([clause(part) for part in either.split(" and ")]) for either in marker.split(" or ")])


def pins(environment: dict | None = None) -> dict:
    """{package: (version, group)}: pyproject.toml's exact pins whose markers hold on ``environment``
    (default: this machine); {} in a Python without tomllib (older than 3.11, told so anyway)."""
    environment = this_machine() if environment is None else environment
    try:
        import tomllib
    except ImportError:
        return {}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = {}
    for group, lines in {"core": project["dependencies"], **project["optional-dependencies"]}.items():
        for line in lines:
            requirement, _, marker = line.partition(";")
            match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==(\S+)", requirement.strip())
            if match and marker_holds(marker, {**environment, "extra": "" if group == "core" else group}):
                pinned[match.group(1)] = (match.group(3), group)
    return pinned


def shown_path(path: str | Path) -> str:
    """A path as the report prints it (it is shown in a notebook: no user names): relative inside the
    course's folder (".venv/bin/python"), "~/..." inside the home folder (not on Windows), else as is."""
    path = Path(path)
    for base, prefix in [(ROOT, "")] + ([(Path.home(), "~/")] if os.name != "nt" else []):
        try:
            return prefix + path.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def course_python() -> str | None:
    """The course's .venv Python (``make setup`` makes it) when it exists and this Python is another."""
    try:
        if Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
            return None
    except OSError:
        pass
    for candidate in (ROOT / ".venv" / "bin" / "python", ROOT / ".venv" / "Scripts" / "python.exe"):
        if candidate.is_file():
            return shown_path(candidate)
    return None


def fresh_python(what: str, timeout: int, *arguments: str, **options) -> dict:
    """The JSON object a fresh Python prints last, run with ``arguments``; {"error": ...} if it fails."""
    try:
        done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=timeout, **options)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or "").strip().splitlines() if line.strip()]
            return {"error": lines[-1][:300] if lines else "no error message"}
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"{what} did not finish in {timeout} s"}
    except (ValueError, IndexError):
        return {"error": f"{what} printed no answer"}


def cuda_facts() -> dict:
    """What CUDA sees from a fresh Python without the variables that switch on the simulator (fastlstm_lib
    sets the first itself when there is no GPU): ``cuda_probe.py``'s answers."""
    forcing = ("NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR")
    return fresh_python("the CUDA probe", CUDA_PROBE_TIMEOUT_S, str(Path(__file__).with_name("cuda_probe.py")),
                        env={k: v for k, v in os.environ.items() if k not in forcing})


BACKEND_PROBE = """
import json
from fastlstm_lib.runtime.keras_backend import gpu_names, import_keras
import tensorflow
print(json.dumps({"gpus": gpu_names(), "versions": {"keras": import_keras().__version__,
                                                    "tensorflow": tensorflow.__version__}}))
"""


def backend_facts() -> dict:
    """Which GPUs Keras' TensorFlow sees, from a fresh Python (importing TensorFlow takes seconds)."""
    return fresh_python("importing Keras", BACKEND_PROBE_TIMEOUT_S, "-c", BACKEND_PROBE, cwd=str(ROOT))


def memory() -> tuple[int | None, int | None]:
    """(total, available) bytes of RAM; available is None where the system does not say (macOS)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = None
    try:
        with open("/proc/meminfo") as lines:
            available = next((int(line.split()[1]) * 1024 for line in lines if line.startswith("MemAvailable:")), None)
    except OSError:
        available = None
    return total, available


def disk_free() -> int | None:
    try:
        return shutil.disk_usage(ROOT).free
    except OSError:
        return None


def gather(full: bool | None = None) -> Facts:
    """Every answer. ``full``: also ask the Keras backend for its GPUs (None: only if CUDA sees one);
    never when NumPy, Keras or its backend is missing (the packages' finding says so)."""
    pinned = pins()
    installed = {name: package_version(name) for name in sorted(pinned)}
    cuda = cuda_facts()
    ask_backend = full if full is not None else cuda.get("numba_cuda") is True
    ask_backend = ask_backend and all(installed.get(name) for name in ("numpy", "keras", "tensorflow"))
    simulator = sys.modules.get("fastlstm_lib.runtime.simulator")  # loaded unless NumPy or Numba is missing
    total, available = memory()
    return Facts(
        system=platform.system(), machine=platform.machine(),
        colab="google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ,
        python=tuple(sys.version_info[:3]), pins=pinned, installed=installed,
        simulator_here=bool(simulator and simulator.SIMULATOR),
        cuda=cuda, backend_gpus=backend_facts() if ask_backend else None,
        disk_free=disk_free(), memory_total=total, memory_available=available,
        executable=shown_path(sys.executable), course_python=course_python())
