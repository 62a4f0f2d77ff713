"""``blocked_gemm`` for shapes its tile divides: the same algorithm, compiled with nothing but
the work.

``kernels/gemm.py``'s kernel is correct at any size, and pays for it in its inner loops: every
load checks both bounds, the cooperative loads are loops whose trip count depends on the thread,
and the k loop over a slab is a loop (NVVM does not unroll ``for kk in range(8)``). Compiled, a
slab of K is ~1,000 instructions, of which 128 are the FFMAs that do the work (12.7% on sm_75,
``data/kernel_resources.csv``).

When M, N and K are multiples of the tile, which the host knows before it launches, none of that
is needed. This variant:

- drops the bounds checks: every tile is full;
- unrolls the cooperative loads: each thread loads exactly ``bm * bk / threads`` elements of A
  and as many of B, at ``tid + rep * threads`` (``rep`` a compile-time constant);
- unrolls the k loop by composition: one ``inline="always"`` device function does one k of the
  slab (tm + tn shared loads, tm x tn FFMAs); ``_doubled`` makes a function doing two of them at
  ``kk`` and ``kk + stride``; three doublings give the 8 of a slab, every shared-memory index a
  compile-time constant;
- indexes global memory with 32-bit integers, not Numba's 64-bit ones.

What it computes, and how its threads map onto the tile and onto C, is exactly
``blocked_gemm``'s: only the instructions around the FFMAs go. ``gemm()`` launches it when the
shape allows; ``compile_matrix`` counts both (``blocked_gemm_exact`` and friends).
"""

from __future__ import annotations

import functools

from numba import cuda, float32, uint32


def divides(blocking, m: int, n: int, k: int) -> bool:
    """Whether ``blocking``'s tile divides an (m x n) C over k, with whole cooperative loads."""
    bm, bn, bk, tm, tn = blocking
    threads = (bm // tm) * (bn // tn)
    return (m % bm == 0 and n % bn == 0 and k % bk == 0 and (bm * bk) % threads == 0
            and (bn * bk) % threads == 0 and bk & (bk - 1) == 0)


def _doubled(step, stride: int):
    """A device function doing ``step`` at ``kk`` and at ``kk + stride``."""

    @cuda.jit(device=True, inline="always")
    def doubled(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc):
        step(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc)
        step(a_tile, b_tile, kk + stride, thread_m, thread_n, a_reg, b_reg, acc)

    return doubled


@functools.lru_cache(maxsize=None)
def exact_gemm_kernel(blocking, transpose_b: bool, transpose_a: bool, padding: int, strided_b: bool = False):
    """The kernel for one blocking and layout (``strided_b``: a transposed B loaded in the naive
    order, as ``blocked_gemm``'s); launch it only where ``divides`` says so."""
    bm, bn, bk, tm, tn = blocking
    threads_n = bn // tn
    threads_m = bm // tm
    threads = threads_m * threads_n
    a_loads = bm * bk // threads
    b_loads = bn * bk // threads
    a_shape = (bk, bm + padding)
    b_shape = (bk, bn + padding)
    b_along_k = transpose_b and not strided_b

    @cuda.jit(device=True, inline="always")
    def one_k(a_tile, b_tile, kk, thread_m, thread_n, a_reg, b_reg, acc):
        for i in range(tm):
            a_reg[i] = a_tile[kk, thread_m + i * threads_m]
        for j in range(tn):
            b_reg[j] = b_tile[kk, thread_n + j * threads_n]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] += a_reg[i] * b_reg[j]

    slab, done = one_k, 1
    while done < bk:
        slab, done = _doubled(slab, done), done * 2

    @cuda.jit
    def blocked_gemm(a, b, c, accumulate):
        a_tile = cuda.shared.array(a_shape, float32)
        b_tile = cuda.shared.array(b_shape, float32)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        tid = cuda.threadIdx.x
        thread_m = tid // threads_n
        thread_n = tid % threads_n
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        k_total = a.shape[0] if transpose_a else a.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        for k0 in range(0, k_total, bk):
            for rep in range(a_loads):
                e = tid + rep * threads
                if transpose_a:  # A stored (K, M): consecutive threads on consecutive m
                    a_tile[e // bm, e % bm] = a[uint32(k0 + e // bm), uint32(row0 + e % bm)]
                else:  # consecutive threads on consecutive k
                    a_tile[e % bk, e // bk] = a[uint32(row0 + e // bk), uint32(k0 + e % bk)]
            for rep in range(b_loads):
                e = tid + rep * threads
                if b_along_k:  # B stored (N, K): consecutive threads on consecutive k
                    b_tile[e % bk, e // bk] = b[uint32(col0 + e // bk), uint32(k0 + e % bk)]
                elif transpose_b:  # the naive order: consecutive threads K floats apart
                    b_tile[e // bn, e % bn] = b[uint32(col0 + e % bn), uint32(k0 + e // bn)]
                else:
                    b_tile[e // bn, e % bn] = b[uint32(k0 + e // bn), uint32(col0 + e % bn)]
            cuda.syncthreads()
            slab(a_tile, b_tile, 0, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()  # nobody overwrites the tiles while others still read them
        for i in range(tm):
            row = uint32(row0 + thread_m + i * threads_m)
            for j in range(tn):
                col = uint32(col0 + thread_n + j * threads_n)
                if accumulate:
                    c[row, col] += acc[i, j]
                else:
                    c[row, col] = acc[i, j]

    return blocked_gemm
