"""Launch geometry, sized for the real GPU or for the CUDA simulator.

On a GPU, 256 threads per block keeps every SM busy. On the simulator each thread is a Python
thread costing ~0.15 ms per launch, so blocks shrink to a warp's worth: the code is the same,
only the numbers change.
"""

from __future__ import annotations

from .. import _device

#: Threads per block of the element-wise kernels.
POINTWISE_THREADS = 32 if _device.SIMULATOR else 256


def blocks_for(n: int, threads: int) -> int:
    """Enough blocks of ``threads`` to give each of ``n`` elements its own thread."""
    return max(1, (n + threads - 1) // threads)


def pointwise_grid(n: int) -> tuple[int, int]:
    """(blocks, threads) for an element-wise kernel over ``n`` elements."""
    return blocks_for(n, POINTWISE_THREADS), POINTWISE_THREADS


def ordering_event():
    """A CUDA event used only to order streams, not to time them (cheaper on a GPU: no timestamp).

    The simulator's events take no arguments; its streams run synchronously anyway.
    """
    from numba import cuda

    return cuda.event() if _device.SIMULATOR else cuda.event(timing=False)
