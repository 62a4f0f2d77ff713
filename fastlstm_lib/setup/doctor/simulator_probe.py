"""The simulator's test kernel, imported by ``probes`` only where Numba imports: the kernel must be a
module-level function whose global ``cuda`` is Numba's (the simulator swaps it while the kernel runs).
"""

import numpy as np
from numba import cuda


def _double(values):
    i = cuda.grid(1)
    if i < values.size:
        values[i] *= 2.0


def run_kernel() -> str:
    """Launch a tiny kernel: "ok", or what went wrong."""
    values = cuda.to_device(np.arange(5, dtype=np.float32))
    cuda.jit(_double)[1, 8](values)
    return "ok" if (values.copy_to_host() == 2 * np.arange(5, dtype=np.float32)).all() else "a test kernel gave a wrong result"
