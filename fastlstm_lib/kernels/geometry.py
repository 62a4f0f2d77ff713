"""Launch geometry of the element-wise kernels, sized for the real GPU or for the CUDA simulator.

On a GPU, 256 threads per block keeps every SM busy. On the simulator each thread is a Python
thread costing ~0.15 ms per launch, so blocks shrink to a warp's worth: the code is the same,
only the numbers change. (The GEMM and persistent kernels choose their own blocking.)
"""

from __future__ import annotations

from ..runtime.device import DEVICE
from ..runtime.target import target

#: Threads per block of the element-wise kernels on a GPU ...
GPU_POINTWISE_THREADS = 256
#: ... and on the simulator: a warp's worth.
SIMULATOR_POINTWISE_THREADS = 32
#: Threads per block of the element-wise kernels on this device (what an exercise's sizes are chosen around).
POINTWISE_THREADS = SIMULATOR_POINTWISE_THREADS if DEVICE.small else GPU_POINTWISE_THREADS


def pointwise_threads() -> int:
    """Threads per block of the launch under way: the target's (``runtime.target``: this device, or
    the GPU a dry run lays a pass out for)."""
    return SIMULATOR_POINTWISE_THREADS if target().small else GPU_POINTWISE_THREADS


def blocks_for(n: int, threads: int) -> int:
    """Enough blocks of ``threads`` to give each of ``n`` elements its own thread."""
    return max(1, (n + threads - 1) // threads)


def pointwise_grid(n: int) -> tuple[int, int]:
    """(blocks, threads) for an element-wise kernel over ``n`` elements."""
    threads = pointwise_threads()
    return blocks_for(n, threads), threads
