"""Launch geometry of the element-wise kernels, sized for the real GPU or for the CUDA simulator.

On a GPU, 256 threads per block keeps every SM busy. On the simulator each thread is a Python
thread costing ~0.15 ms per launch, so blocks shrink to a warp's worth: the code is the same,
only the numbers change. (The GEMM and persistent kernels choose their own blocking.)
"""

from __future__ import annotations

from ..runtime.device import DEVICE

#: Threads per block of the element-wise kernels on a GPU (and, for ``fastlstm_lib.course.profile``'s dry
#: runs, as on a named GPU).
GPU_POINTWISE_THREADS = 256
#: Threads per block of the element-wise kernels on this device.
POINTWISE_THREADS = 32 if DEVICE.small else GPU_POINTWISE_THREADS


def blocks_for(n: int, threads: int) -> int:
    """Enough blocks of ``threads`` to give each of ``n`` elements its own thread."""
    return max(1, (n + threads - 1) // threads)


def pointwise_grid(n: int) -> tuple[int, int]:
    """(blocks, threads) for an element-wise kernel over ``n`` elements."""
    return blocks_for(n, POINTWISE_THREADS), POINTWISE_THREADS
