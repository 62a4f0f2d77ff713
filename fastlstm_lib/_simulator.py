"""A fix for Numba's CUDA simulator, applied only when the simulator is on.

The simulator runs each CUDA thread of a block as a Python thread, and gives a block's threads
the same ``cuda.shared.array`` by remembering, per source line, the array the first thread
created: ``get`` from a dict, ``np.empty`` if missing, then store. Nothing locks that, so two
threads can both find nothing and each keep an array of its own: "shared" memory that is not
shared, and a kernel that is right on most runs and wrong on some (seen here as the persistent
kernel failing 1 run in ~4 under load; numba-cuda 0.30.4). We replace the method with the same
logic under a lock. Looking up the caller's frame directly, instead of formatting the whole
stack as the original does, also makes every shared-array declaration cheaper there.
"""

from __future__ import annotations

import sys
import threading

import numpy as np


def lock_shared_array_allocation() -> None:
    from numba.core import types
    from numba.np import numpy_support
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "fastlstm_locked", False):
        return
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None:
            raise RuntimeError("Array alignment is not supported in cudasim")
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
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
