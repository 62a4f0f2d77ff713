"""The simulator's test kernel, run in the doctor's own process: imported only where Numba imports.

A module of its own because the kernel must be a module-level function whose global ``cuda`` is
Numba's module (the simulator swaps that global name for its fake module while the kernel runs),
and because ``probes`` must import with the standard library alone.
"""

import numpy as np
from numba import cuda


def _double(values):
    i = cuda.grid(1)
    if i < values.size:
        values[i] *= 2.0


def run_kernel() -> str:
    """Launch a tiny kernel: "ok", or what went wrong."""
    try:
        values = cuda.to_device(np.arange(5, dtype=np.float32))
        cuda.jit(_double)[1, 8](values)
        right = (values.copy_to_host() == 2 * np.arange(5, dtype=np.float32)).all()
        return "ok" if right else "a test kernel gave a wrong result"
    except Exception as error:
        return f"{type(error).__name__}: {error}"
