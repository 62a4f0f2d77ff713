"""Which Numba CUDA this process uses, and the imports whose place depends on it.

numba-cuda (NVIDIA's package, Linux and Windows) takes over the ``numba.cuda`` name and runs on a
GPU, the simulator or a stand-in driver; where it has no wheel (macOS) the ``numba.cuda`` built
into numba is used, its simulator only. The two keep their settings in different modules, and the
built-in simulator lacks a few calls (``complete_builtin_simulator`` adds them). Everything here
that touches ``numba.cuda`` imports it lazily: ``runtime.simulator`` must choose first. The course's
own Numba setting lives here too: ``quiet_low_occupancy_warnings``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from importlib import metadata


def package_version(package: str) -> str | None:
    """The installed version of a distribution ("numba-cuda"), or None if it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


#: numba-cuda's version ("0.30.4"), or None when ``numba.cuda`` is numba's built-in one.
NUMBA_CUDA_VERSION = package_version("numba-cuda") if importlib.util.find_spec("numba_cuda") else None
#: Whether ``numba.cuda`` is numba-cuda's (a GPU, a stand-in driver and the compile matrix need it).
HAS_NUMBA_CUDA = NUMBA_CUDA_VERSION is not None
#: The reason to show where something needs numba-cuda and it is absent.
NEEDS_NUMBA_CUDA = ("needs numba-cuda (pip install numba-cuda; it has no macOS wheel: there the "
                    "course runs on numba's built-in CUDA simulator)")


def describe(simulator: bool) -> str:
    """Which Numba CUDA runs the kernels: "numba-cuda 0.30.4" or "numba 0.68.1's built-in simulator"."""
    if HAS_NUMBA_CUDA:
        return f"numba-cuda {NUMBA_CUDA_VERSION}"
    which = "simulator" if simulator else "numba.cuda"
    return f"numba {package_version('numba')}'s built-in {which}"


def simulator_name() -> str:
    """How the one-line simulator notice names it: "Numba's CUDA simulator" (numba-cuda's), or
    "numba 0.68.1's built-in CUDA simulator"."""
    if HAS_NUMBA_CUDA:
        return "Numba's CUDA simulator"
    return f"numba {package_version('numba')}'s built-in CUDA simulator"


def require_numba_cuda(what: str) -> None:
    """Raise a clear ImportError when ``what`` runs without numba-cuda."""
    if not HAS_NUMBA_CUDA:
        raise ImportError(f"{what} {NEEDS_NUMBA_CUDA}")


def cuda_config():
    """The module holding Numba's CUDA_* settings (``CUDA_LOW_OCCUPANCY_WARNINGS``...)."""
    if HAS_NUMBA_CUDA:
        from numba.cuda.core import config
    else:
        from numba.core import config
    return config


@functools.lru_cache(maxsize=1)
def simulator_types():
    """(types module, numpy_support module) that the simulator's ``cuda.*.array`` calls use for dtypes."""
    if HAS_NUMBA_CUDA:
        from numba.cuda import types
        from numba.cuda.np import numpy_support
    else:
        from numba.core import types
        from numba.np import numpy_support
    return types, numpy_support


def as_numpy_dtype(dtype):
    """A dtype given to ``cuda.shared.array`` (a Numba type of either kind, or NumPy's) as a NumPy dtype."""
    import numpy as np
    from numba.core import types as core_types
    from numba.np import numpy_support as core_support

    types, numpy_support = simulator_types()
    if isinstance(dtype, types.Type):
        return numpy_support.as_dtype(dtype)
    if isinstance(dtype, core_types.Type):
        return core_support.as_dtype(dtype)
    return np.dtype(dtype)


def function_name(kernel) -> str:
    """The name of a kernel's Python function: what a recorded launch calls it (a compiled
    kernel holds its function as ``py_func``, a simulated one as ``fn``)."""
    function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    return getattr(function, "__name__", repr(kernel))


def complete_builtin_simulator() -> None:
    """Give numba's built-in simulator the calls that only numba-cuda's simulator has, defined as
    it defines them: the default streams (plain ``cuda.stream``s) and ``get_current_device``
    (the simulated device). Nothing with numba-cuda, or off the simulator."""
    from numba.core import config

    if HAS_NUMBA_CUDA or not config.ENABLE_CUDASIM:
        return
    from numba import cuda

    for name in ("default_stream", "legacy_default_stream", "per_thread_default_stream"):
        if not hasattr(cuda, name):
            setattr(cuda, name, cuda.stream)
    if not hasattr(cuda, "get_current_device"):
        cuda.get_current_device = lambda: cuda.gpus[0].device


#: NumPy aliases that NumPy removed and numba-cuda still names: (name, what it was an alias of).
REMOVED_NUMPY_ALIASES = (("row_stack", "vstack"),)


def restore_numpy_aliases() -> list[str]:
    """Put back the NumPy aliases numba-cuda needs that NumPy removed; return the names restored.
    numba-cuda 0.30.4 overloads ``np.row_stack``, which NumPy 2.5 removed: there no kernel compiles
    (``AttributeError: module 'numpy' has no attribute 'row_stack'``; the GPU machine's NumPy 2.5.2).
    With the course's pins (NumPy 2.4.6) there is nothing to restore."""
    import numpy as np

    restored = []
    for name, original in REMOVED_NUMPY_ALIASES:
        if not hasattr(np, name):
            setattr(np, name, getattr(np, original))
            restored.append(name)
    return restored


LOW_OCCUPANCY = "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"


def quiet_low_occupancy_warnings() -> None:
    """Turn numba-cuda's "Grid size N will likely result in GPU under-utilization" warning (every
    launch of fewer than 128 blocks) off, unless ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` is set: the
    course's grids are small on purpose, the simulator never warns (stored outputs would differ
    between a GPU and a CPU) and each warning costs host time in timed launches. Set in the
    environment too: Numba re-reads it when a NUMBA_* variable changes, at the next compile."""
    if os.environ.get(LOW_OCCUPANCY, "").strip() == "":
        os.environ[LOW_OCCUPANCY] = "0"
    config = cuda_config()
    try:
        config.CUDA_LOW_OCCUPANCY_WARNINGS = int(os.environ[LOW_OCCUPANCY])
    except ValueError:  # not a number: Numba keeps its own reading of it
        pass
