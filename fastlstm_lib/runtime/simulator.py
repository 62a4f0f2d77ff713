"""Numba's CUDA simulator: whether we run on it, saying so once, and a fix for one of its races.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the choice is
made here, at ``import fastlstm_lib``, with ctypes alone: does the CUDA driver library load,
initialise and see a device? ``SIMULATOR`` holds the answer; ``NUMBA_ENABLE_CUDASIM=1`` or
``FASTLSTM_SIMULATOR=1`` forces the simulator. ``announce()`` prints one line at the first Numba
work, so notebooks that never touch Numba carry no banner.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import numpy as np

from . import numba_compat

_MESSAGE = (
    "fastlstm_lib: {why}; using {which}: kernels run on the CPU, slowly, "
    "problem sizes shrink and timings mean nothing."
)


def _driver_sees_a_gpu() -> bool:
    """True when the CUDA driver loads, initialises and reports at least one device."""
    names = {"win32": ["nvcuda.dll"], "darwin": []}.get(sys.platform, ["libcuda.so.1", "libcuda.so"])
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            count = ctypes.c_int(0)
            return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
        except AttributeError:  # not a real driver library
            return False
    return False


def _forced() -> str | None:
    """Why the environment asks for the simulator whatever the hardware, or None."""
    for name in ("NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR"):
        if os.environ.get(name, "0") not in ("", "0"):
            return f"{name} is set"
    return None


_reason: str | None = None
_announced = False


def switch_to_simulator_if_needed() -> bool:
    """Turn the simulator on when the environment asks for it or there is no usable GPU (decided
    once per process). Returns simulator?"""
    global _reason
    why = _forced() or (None if _driver_sees_a_gpu() else "no CUDA driver or GPU found")
    if why is None:
        return False
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        # Too late: numba.cuda was imported first and chose the real driver.
        print(
            "fastlstm_lib: no usable GPU, but numba.cuda was imported before fastlstm_lib, so the "
            "simulator can't be switched on; import fastlstm_lib first (or set "
            "NUMBA_ENABLE_CUDASIM=1).",
            file=sys.stderr,
        )
        return False
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs each CUDA thread as a Python thread, and its block manager busy-polls
    # them at every cuda.syncthreads(). With Python's default 5 ms GIL switch interval a tiled
    # GEMM spends most of its time waiting for the GIL; 0.2 ms makes it ~6x faster.
    sys.setswitchinterval(min(sys.getswitchinterval(), 2e-4))
    _reason = why
    return True


def announce() -> None:
    """On the simulator, say so in one line: once per process, at the first Numba work.

    On stdout, as information: Jupyter draws stderr in red, like an error, and this is none.
    """
    global _announced
    if SIMULATOR and not _announced:
        _announced = True
        print(_MESSAGE.format(why=_reason, which=numba_compat.simulator_name()), flush=True)


def lock_shared_array_allocation() -> None:
    """Replace the simulator's ``FakeCUDAShared.array`` with the same logic under a lock: it keeps
    one array per declaring source line, looked up and stored unlocked, so two of a block's
    threads could each keep their own "shared" array (the persistent kernel failed 1 run in ~4
    under load; numba-cuda 0.30.4). Reading the caller's frame also beats formatting the stack."""
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "fastlstm_locked", False):
        return
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None:
            raise RuntimeError("Array alignment is not supported in cudasim")
        dtype = numba_compat.as_numpy_dtype(dtype)  # a Numba type of numba-cuda's or numba's own, or NumPy's
        if shape == 0:  # dynamic shared memory: one buffer for every request
            count = self._dynshared_size // dtype.itemsize
            return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)  # one array per declaring line
        with lock:
            allocated = self._allocations.get(caller)
            if allocated is None:
                allocated = self._allocations[caller] = np.empty(shape, dtype)
        return allocated

    array.fastlstm_locked = True
    shared.array = array


SIMULATOR = switch_to_simulator_if_needed()
