"""A fake GPU for tests: numba-cuda's real host path, with the CUDA driver replaced underneath.

Numba's simulator runs kernels as Python and never calls the driver, so it cannot see what a
real GPU refuses: a wrong device-attribute name, a launch beyond a limit, a cooperative grid
too large, dynamic shared memory above 48 KiB without the opt-in, code a compiler rejects. This
mode keeps everything real down to the driver: numba-cuda compiles every kernel for the named
GPU's architecture with the CUDA compilers from pip, links with nvJitLink, and calls
cuda.core and cuda.bindings as on a GPU. Only ``libcuda.so.1`` is fake (``shim.py``): it presents a
GPU of ``data/gpus.csv`` (``device.py``), reads each loaded kernel's registers and shared memory
from its cubin (``cubin.py``), checks every launch as the driver would and records every call
(``api.py``, ``streams.py``, ``launch.py``, ``store.py``).

Kernels are not run: **values are not computed in this mode** (the simulator checks values).
It is the project's test code, not part of the installed package: the top-level package
``fakegpu`` in ``tests/``, importable with ``tests/`` on ``PYTHONPATH`` (pytest puts it on
``sys.path``). Use it in a fresh process, before anything touches CUDA, from the clone's root:

    PYTHONPATH=$PWD/tests FASTLSTM_FAKE_GPU=T4 python -c "import fastlstm_lib as fl; ..."

(``tests/sitecustomize.py`` activates it when ``FASTLSTM_FAKE_GPU`` is set) or
``fakegpu.activate("T4")`` first thing. ``fakegpu.state()`` gives the log; ``child_environment``
the environment of a fresh Python that presents a fake GPU. Linux only (it builds a small C
library with the machine's compiler), and numba-cuda only (numba's built-in ``numba.cuda`` is
not faked: ``fastlstm_lib.runtime.numba_compat``).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

from . import store as _state

ENVIRONMENT = "FASTLSTM_FAKE_GPU"
#: The folder that holds this package (the clone's tests/): a fresh Python needs it on PYTHONPATH.
HOME = str(Path(__file__).resolve().parents[1])


def _with_home_on_pythonpath(environment) -> None:
    paths = [path for path in environment.get("PYTHONPATH", "").split(os.pathsep) if path and path != HOME]
    environment["PYTHONPATH"] = os.pathsep.join([HOME, *paths])


def child_environment(gpu: str, base=None) -> dict:
    """The environment (``base``, else os.environ) of a fresh Python that presents the fake ``gpu``:
    FASTLSTM_FAKE_GPU set, tests/ first on PYTHONPATH (so that fastlstm_lib finds fakegpu), the
    simulator's variables removed."""
    environment = {**(os.environ if base is None else base), ENVIRONMENT: gpu}
    for name in ("NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR"):
        environment.pop(name, None)
    _with_home_on_pythonpath(environment)
    return environment


def active() -> str | None:
    """The short name of the fake GPU this process runs on, or None."""
    return _state.STATE.device.short_name if _state.STATE is not None else None


def state() -> _state.State:
    """The fake driver's state and call log (``.calls``, ``.launches()``, ``.refused``, ``.errors``)."""
    if _state.STATE is None:
        raise RuntimeError("no fake GPU in this process: set FASTLSTM_FAKE_GPU=<GPU> before importing fastlstm_lib")
    return _state.STATE


def activate(name: str) -> _state.State:
    """Present the GPU ``name`` (a row of data/gpus.csv: "T4", "A100", "L4", "H100", "M40", ...).

    Must run before numba-cuda first talks to the driver, once per process. Chooses the CUDA
    compilers for that GPU's architecture (CUDA 12 below sm_75) and loads the fake driver.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a GPU name (str), got {type(name).__name__}")
    from fastlstm_lib import gpus
    from fastlstm_lib.runtime import numba_compat

    numba_compat.require_numba_cuda("the fake-GPU test mode")
    row = gpus.gpu(name)  # ValueError naming the known GPUs
    if _state.STATE is not None:
        if _state.STATE.device.short_name != row["name"]:
            raise RuntimeError(f"this process already presents a fake {_state.STATE.device.short_name}")
        return _state.STATE
    from . import api, graphs, launch, shim, streams, toolchain  # noqa: F401  (they register the entry points)
    from .device import FakeDevice
    from .registry import resolve

    device = FakeDevice(row)
    toolchain.select_compilers(device.compute_capability)
    _state.STATE = _state.State(device=device)
    os.environ[ENVIRONMENT] = row["name"]  # child processes (the doctor's probe) present the same GPU
    _with_home_on_pythonpath(os.environ)  # and find fakegpu
    shim.load(resolve)
    _declare_stand_in(f"fake {row['name']}")
    return _state.STATE


_DEVICE_MODULE = "fastlstm_lib.runtime.device"


def _declare_stand_in(name: str) -> None:
    """Tell the package that its driver runs nothing (``fastlstm_lib.runtime.device.declare_stand_in``):
    now if that module is loaded, else as soon as it is (the fake loads while ``fastlstm_lib``
    imports its simulator probe, before the device module). Where the simulator was forced anyway
    (NUMBA_ENABLE_CUDASIM), the simulator computes and nothing is declared."""
    def declare(module):
        if module.DEVICE.kind == "gpu":
            module.declare_stand_in(name)

    if _DEVICE_MODULE in sys.modules:
        declare(sys.modules[_DEVICE_MODULE])
        return

    class _AfterImport(importlib.abc.MetaPathFinder):
        """Finds the device module with the other finders and declares, once, after it executes."""

        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname != _DEVICE_MODULE:
                return None
            sys.meta_path.remove(cls)
            spec = importlib.util.find_spec(fullname)
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                declare(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _AfterImport)


def activate_from_environment() -> str | None:
    """Activate the GPU named by $FASTLSTM_FAKE_GPU, if set; return its name."""
    name = os.environ.get(ENVIRONMENT, "").strip()
    if not name:
        return None
    return activate(name).device.short_name
