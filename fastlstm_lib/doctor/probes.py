"""The doctor's questions to this machine: each a small function, so tests can replace it.

Nothing here imports TensorFlow, torch or Keras: what CUDA sees is asked in a fresh Python
(``cuda_probe.py``), and whether the Keras backend sees a GPU in another one, with a time limit,
only when it matters (a GPU is present) or when asked (``full``). ``gather`` collects all the
answers into one ``Facts``.
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

from numba import cuda

from ..device import package_version

ROOT = Path(__file__).resolve().parents[2]
#: Either switches this process to the simulator (fastlstm_lib sets the first itself when there is no GPU).
SIMULATOR_VARIABLES = ("NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR")
CUDA_PROBE_TIMEOUT_S = 120
BACKEND_PROBE_TIMEOUT_S = 180


@dataclasses.dataclass
class Facts:
    system: str  # "Linux", "Darwin", "Windows"
    machine: str
    colab: bool
    python: tuple
    requires_python: str  # ">=3.11"
    pins: dict  # {package: (version, group)}: group "core", "test" or "lab"
    installed: dict  # {package: version or None}
    keras_backend: str
    simulator_here: bool  # this process runs kernels on the simulator
    forced_by: str | None  # the simulator variable set in this process, if any
    simulator_kernel: str | None  # "ok", an error, or None when not asked (GPU)
    cuda: dict  # cuda_probe.py's answers, or {"error": ...}
    backend_gpus: dict | None  # {"gpus": [...], "versions": {...}} or {"error": ...}; None: not asked
    disk_free: int | None
    memory_total: int | None
    memory_available: int | None


def pins() -> tuple[str, dict]:
    """(requires-python, {package: (version, group)}) from pyproject.toml, else the installed metadata."""
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        project = tomllib.loads(pyproject.read_text())["project"]
        groups = {"core": project["dependencies"], **project.get("optional-dependencies", {})}
        requirement_lists = [(group, requirement) for group, items in groups.items() for requirement in items]
        requires = project.get("requires-python", "")
    else:
        from importlib import metadata

        requires = metadata.metadata("fastlstm_lib").get("Requires-Python", "")
        requirement_lists = []
        for line in metadata.requires("fastlstm_lib") or []:
            extra = re.search(r'extra\s*==\s*"([^"]+)"', line)
            requirement_lists.append((extra.group(1) if extra else "core", line.split(";")[0].strip()))
    pinned = {}
    for group, requirement in requirement_lists:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==(\S+)", requirement.strip())
        if match:
            pinned[match.group(1)] = (match.group(3), group)
    return requires, pinned


def cuda_facts() -> dict:
    """What CUDA sees from a fresh Python without the simulator variables (``cuda_probe.py``)."""
    environment = {k: v for k, v in os.environ.items() if k not in SIMULATOR_VARIABLES}
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).with_name("cuda_probe.py"))], capture_output=True,
                              text=True, timeout=CUDA_PROBE_TIMEOUT_S, env=environment)
        return json.loads(done.stdout) if done.returncode == 0 else {"error": _last_line(done.stderr)}
    except subprocess.TimeoutExpired:
        return {"error": f"the CUDA probe did not finish in {CUDA_PROBE_TIMEOUT_S} s"}
    except ValueError:
        return {"error": "the CUDA probe printed no answer"}


BACKEND_PROBE = """
import json
from fastlstm_lib.keras_backend import backend_name, gpu_names, import_keras
keras = import_keras()
versions = {"keras": keras.__version__}
backend = backend_name()
if backend in ("tensorflow", "torch", "jax"):
    versions[backend] = __import__(backend).__version__
print(json.dumps({"backend": backend, "gpus": gpu_names(), "versions": versions}))
"""


def backend_facts() -> dict:
    """Which GPUs the Keras backend sees, from a fresh Python (importing TensorFlow takes seconds)."""
    try:
        done = subprocess.run([sys.executable, "-c", BACKEND_PROBE], capture_output=True, text=True,
                              timeout=BACKEND_PROBE_TIMEOUT_S, cwd=str(ROOT))
        if done.returncode != 0:
            return {"error": _last_line(done.stderr)}
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"importing Keras took more than {BACKEND_PROBE_TIMEOUT_S} s"}
    except (ValueError, IndexError):
        return {"error": "the Keras probe printed no answer"}


def _double(values):
    # A module-level function: the simulator swaps the global name `cuda` for its fake module.
    i = cuda.grid(1)
    if i < values.size:
        values[i] *= 2.0


def simulator_kernel() -> str:
    """Launch a tiny kernel on this process's simulator: "ok", or what went wrong."""
    import numpy as np

    try:
        values = cuda.to_device(np.arange(5, dtype=np.float32))
        cuda.jit(_double)[1, 8](values)
        right = (values.copy_to_host() == 2 * np.arange(5, dtype=np.float32)).all()
        return "ok" if right else "a test kernel gave a wrong result"
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def memory() -> tuple[int | None, int | None]:
    """(total, available) bytes of RAM; available is None where the system does not say (macOS)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = None
    available = None
    try:
        with open("/proc/meminfo") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:
        pass
    return total, available


def disk_free() -> int | None:
    try:
        return shutil.disk_usage(ROOT).free
    except OSError:
        return None


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no error message"


def gather(full: bool | None = None) -> Facts:
    """Every answer. ``full``: also ask the Keras backend for its GPUs (None: only if CUDA sees one)."""
    from .. import simulator

    requires, pinned = pins()
    names = set(pinned) | {"torch", "jax", "tensorflow"}
    cuda = cuda_facts()
    ask_backend = full if full is not None else cuda.get("numba_cuda") is True
    forced = next((v for v in reversed(SIMULATOR_VARIABLES) if os.environ.get(v, "0") not in ("", "0")), None)
    total, available = memory()
    return Facts(
        system=platform.system(), machine=platform.machine(),
        colab="google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ,
        python=tuple(sys.version_info[:3]), requires_python=requires, pins=pinned,
        installed={name: package_version(name) for name in sorted(names)},
        keras_backend=os.environ.get("KERAS_BACKEND", "tensorflow"),
        simulator_here=simulator.SIMULATOR, forced_by=forced,
        simulator_kernel=simulator_kernel() if simulator.SIMULATOR else None,
        cuda=cuda, backend_gpus=backend_facts() if ask_backend else None,
        disk_free=disk_free(), memory_total=total, memory_available=available)
