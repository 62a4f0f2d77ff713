"""What the exact-tile GEMM versions (3-7) share: where a thread's outputs lie in its block's patch
(``owned``), a slab of K unrolled into straight-line code (``unrolled_slab``) and the store of a
thread's outputs (``patch_store``).
"""

from __future__ import annotations

import functools

from numba import cuda, uint32


def _doubled(step, stride: int):
    """A device function doing ``step`` at ``kk`` and at ``kk + stride``."""

    @cuda.jit(device=True, inline="always")
    def doubled(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc):
        step(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc)
        step(a_tile, b_tile, kk + stride, thread_m, thread_n, a_reg, b_reg, acc)

    return doubled


@functools.lru_cache(maxsize=None)
def owned(blocking, halves: bool = False, runs: bool = False):
    """Two device functions, ``row(i, thread_m)`` and ``col(j, thread_n)``: where in the block's
    patch a thread's i-th row and j-th column of outputs lie. Versions 2-4: strided across the
    patch, thread_m + i * (bm / tm). ``halves`` (versions 5, 6): two runs of tm / 2 neighbours half
    a patch apart, so that a run is one vector load from shared memory. ``runs`` (version 7): one
    run of tm neighbours, thread_m * tm + i: one 128-bit load at tm = 4."""
    bm, bn, bk, tm, tn = blocking
    threads_n, threads_m = bn // tn, bm // tm
    hm, hn = tm // 2, tn // 2
    if runs:
        @cuda.jit(device=True, inline="always")
        def row(i, thread_m):
            return uint32(thread_m * tm + i)

        @cuda.jit(device=True, inline="always")
        def col(j, thread_n):
            return uint32(thread_n * tn + j)
    elif halves:
        @cuda.jit(device=True, inline="always")
        def row(i, thread_m):
            return uint32((i // hm) * (bm // 2) + thread_m * hm + i % hm)

        @cuda.jit(device=True, inline="always")
        def col(j, thread_n):
            return uint32((j // hn) * (bn // 2) + thread_n * hn + j % hn)
    else:
        @cuda.jit(device=True, inline="always")
        def row(i, thread_m):
            return thread_m + i * threads_m

        @cuda.jit(device=True, inline="always")
        def col(j, thread_n):
            return thread_n + j * threads_n
    return row, col


@functools.lru_cache(maxsize=None)
def unrolled_slab(blocking, halves: bool = False, runs: bool = False, steps: int | None = None):
    """A device function doing a whole slab of K (bk k's, or ``steps`` of them from ``kk``: a power
    of two; each tm + tn shared loads and tm x tn FFMAs), unrolled by doubling so that every
    shared-memory index is a compile-time constant; each thread's outputs where ``owned`` puts them."""
    bm, bn, bk, tm, tn = blocking
    row, col = owned(blocking, halves, runs)

    @cuda.jit(device=True, inline="always")
    def one_k(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc):
        for i in range(tm):
            a_reg[i] = a_tile[kk, row(i, thread_m)]
        for j in range(tn):
            b_reg[j] = b_tile[kk, col(j, thread_n)]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] += a_reg[i] * b_reg[j]

    slab, done = one_k, 1
    while done < (bk if steps is None else steps):
        slab, done = _doubled(slab, done), done * 2
    return slab


@functools.lru_cache(maxsize=None)
def patch_store(blocking, halves: bool = False, runs: bool = False):
    """A device function writing a thread's tm x tn outputs to C (or adding them, ``accumulate``),
    where ``owned(blocking, halves, runs)`` puts them."""
    bm, bn, bk, tm, tn = blocking
    row, col = owned(blocking, halves, runs)

    @cuda.jit(device=True, inline="always")
    def store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate):
        for i in range(tm):
            r = uint32(row0 + row(i, thread_m))
            for j in range(tn):
                column = uint32(col0 + col(j, thread_n))
                if accumulate:
                    c[r, column] += acc[i, j]
                else:
                    c[r, column] = acc[i, j]

    return store_patch
