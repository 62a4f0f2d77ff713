"""Column-sum version 1, ``column_sum``: out[j] = sum over the rows r of a[r, j] (or out[j] += that
sum), one reduction, a shared-memory tree per block.

The bias gradient of bwd04-05 (combined_weights, wavefront) launches it (``column_sum_kernel``),
once per layer and pass. bwd01-03 compute the same sum as a GEMM with a row of ones.

The backward pass's bias gradient is such a sum, db = 1^T dZ over every row of dZ (notebook 41).
Written as a GEMM with a row of ones, it is an M = 1 product: each block of the GEMM computes a
tile of 32 or 64 output rows of which one is real, and issues a multiply-add for every entry of
the tile. Here each element of ``a`` is loaded once and added once.

A block owns ``COLUMNS`` = 32 neighbouring columns, with ``ROW_THREADS`` threads down each of
them: the block is (32, ROW_THREADS) threads, and a warp is 32 threads with the same
``threadIdx.y`` and consecutive ``threadIdx.x``, so each of its loads reads 32 neighbouring
floats of one row (coalesced: 4 sectors of 32 bytes where the row is aligned). Then:

1. thread (x, y) adds up rows y, y + ROW_THREADS, y + 2 ROW_THREADS, ... of its column, in a
   register: every row is read by exactly one thread;
2. it stores that partial sum in shared memory, ``partial[y, x]``, and the block waits
   (``cuda.syncthreads()``) until every partial is there;
3. a tree adds them: at each level the upper half of the rows of ``partial`` that are still in
   play is added into the lower half (half = ROW_THREADS / 2, then / 4, ... 1), with a barrier
   after each level, since the next level reads what this one wrote;
4. thread (x, 0) writes ``partial[0, x]`` to out[j] (or adds it, ``accumulate``).

Columns past the last (the last block's tile may hang over the edge) are skipped by a guard,
both in the loads and in the write. There are no atomics: each out[j] is written by one thread,
after a fixed order of additions, so the result is the same on every run (an atomic add of each
block's share would depend on the order the blocks finish in, and the simulator, which runs one
block at a time, would never show that).

The grid is one block per 32 columns: 64 blocks at the article's size (4H = 2048), fewer than an
H100's 132 SMs. Splitting the rows across blocks too would fill it, at the price of a second
pass over the blocks' partial sums (or of atomics).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import boolean, cuda, float32

from ...runtime.device import DEVICE
from ...runtime.target import target
from ...checks import check_bool
from ..case import Case, f32, poisoned
from ..geometry import blocks_for
from ..spec import Build, Spec, Traffic
from ..views import view_of

#: Columns per block: one warp across them.
COLUMNS = 32
#: Threads down each column on a GPU (a block of 32 x 8 = 256 threads). A power of two: the tree halves it.
GPU_ROW_THREADS = 8
#: ... and on the simulator (every simulated thread costs time): 4 still gives the tree two levels.
SIMULATOR_ROW_THREADS = 4
#: Threads down each column on this device (what a learner's kernel is written for).
ROW_THREADS = SIMULATOR_ROW_THREADS if DEVICE.small else GPU_ROW_THREADS


def row_threads() -> int:
    """Threads down each column of the launch under way: the target's (``runtime.target``: this
    device, or the GPU a dry run lays a pass out for)."""
    return SIMULATOR_ROW_THREADS if target().small else GPU_ROW_THREADS


@functools.lru_cache(maxsize=None)
def column_sum_kernel(row_threads: int):
    """The kernel for ``row_threads`` threads per column (a shared array's shape is a compile-time
    constant)."""
    if row_threads < 1 or row_threads & (row_threads - 1):
        raise ValueError(f"row_threads must be a power of two, got {row_threads}")

    @cuda.jit
    def column_sum(a, out, accumulate):
        partial = cuda.shared.array((row_threads, COLUMNS), float32)
        tx = cuda.threadIdx.x  # the column inside the block's tile: a warp reads 32 neighbours
        ty = cuda.threadIdx.y  # which rows of it this thread adds up
        col = cuda.blockIdx.x * COLUMNS + tx
        rows, cols = a.shape
        acc = float32(0.0)
        if col < cols:  # the last tile may hang past the last column
            for r in range(ty, rows, row_threads):
                acc += a[r, col]
        partial[ty, tx] = acc
        cuda.syncthreads()  # every partial sum is stored before any is read
        half = row_threads // 2
        while half > 0:
            if ty < half:
                partial[ty, tx] += partial[ty + half, tx]
            cuda.syncthreads()  # this level is done before the next one reads it
            half //= 2
        if ty == 0 and col < cols:
            if accumulate:
                out[col] += partial[0, tx]
            else:
                out[col] = partial[0, tx]

    return column_sum


def check_operands(a, out) -> tuple[int, int]:
    """(rows, cols) of a column sum of ``a`` into ``out``; TypeError / ValueError naming the argument."""
    for name, array, ndim in (("a", a, 2), ("out", out, 1)):
        shape, dtype = getattr(array, "shape", None), getattr(array, "dtype", None)
        on_device = hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host")
        if shape is None or dtype is None or not on_device:
            raise TypeError(f"{name} must be a device array (cuda.to_device, cuda.device_array), "
                            f"got {type(array).__name__}")
        if len(shape) != ndim:
            raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(shape)}")
        if str(dtype) != "float32":
            raise TypeError(f"{name} must have dtype float32, got {dtype}")
    rows, cols = a.shape
    if out.shape[0] != cols:
        raise ValueError(f"out must hold one value per column of a ({cols}), got shape {tuple(out.shape)}")
    return rows, cols


def column_sum(a, out, accumulate: bool = False, stream=0) -> None:
    """Launch out[j] = sum_r a[r, j] (with ``accumulate``: out[j] += it) on device arrays: ``a``
    (rows, cols), possibly a strided view, and ``out`` (cols,)."""
    _, cols = check_operands(a, out)
    accumulate = check_bool("accumulate", accumulate)
    DEVICE.announce()
    threads = row_threads()
    column_sum_kernel(threads)[blocks_for(cols, COLUMNS), (COLUMNS, threads), stream](a, out, accumulate)


#: (rows, cols) of the runner's cases: at the article's size, dZ of every step, (T x B, 4H).
SHAPES = {"odd": (13, 37), "article": (6400, 2048)}


def case(size: str, rng) -> list:
    """The runner's case: the sum of every column of a fresh (rows, cols) at ``SHAPES[size]``."""
    rows, cols = SHAPES[size]
    a = f32(rng, rows, cols)
    a_d, out = cuda.to_device(a), poisoned(cols)
    return [Case(f"{rows} x {cols}", lambda: column_sum(a_d, out), {"out": out}, {"out": a.astype(np.float64).sum(axis=0)},
                 float(rows * cols), 4.0 * (rows * cols + cols))]


# ---- the version's facts (kernels/spec.py) ----------------------------------------------------------


def column_sum_traffic(args, grid, block, constants) -> Traffic:
    """Every element of ``a`` loaded once and added once, by the one thread of its column and rows;
    then each block's tree: (threads per column - 1) adds for each of its 32 columns, those past
    the last column included (they add zeros); out stored once (and loaded once to accumulate)."""
    a, out, accumulate = args["a"], args["out"], bool(args["accumulate"])
    rows, cols = a.shape
    tree = grid[0] * block[0] * (block[1] - 1)
    loads, reads = {"a": rows * cols}, [view_of(a)]
    if accumulate:
        loads["out"] = cols
        reads.append(view_of(out))
    flop = rows * cols + tree + (cols if accumulate else 0)
    return Traffic(flop, loads, {"out": cols}, tuple(reads), (view_of(out),), tuple(reads))


SPECS = (
    Spec("reduce", 1, "column_sum", "out[j] = sum of column j, a shared-memory tree (bwd04-05)",
         ((0,), (1,)), column_sum_traffic,
         lambda: (Build("column_sum", lambda: (column_sum_kernel(GPU_ROW_THREADS), (float32[:, :], float32[:], boolean)),
                        f"{COLUMNS} columns x {GPU_ROW_THREADS} threads down them, a shared-memory tree"),)),
)
