"""GEMM version 3, ``exact_gemm``: version 2 without the checks, its loops unrolled, where the tile
divides M, N and K.

Every GEMM of the ladder's "2016" policy (``steps/gemm_policy.py``, the default) at the article's
size launches it, in steps 02-09 and the backward pass, with the 128 x 128 blocking ``GPU_WIDE``
(row ``exact_gemm_wide``) where its blocks still fill every SM.

Version 2 (``blocked_gemm``) is correct at any size, and pays for it in its inner loops: every
load checks both bounds, the cooperative loads are loops whose trip count depends on the thread,
and the k loop over a slab is a loop (NVVM does not unroll ``for kk in range(8)``). Compiled, a
slab of K is ~1,000 instructions, of which 128 are the FFMAs that do the work (12.7% on sm_75,
``data/kernel_resources.csv``).

When M, N and K are multiples of the tile, which the host knows before it launches, none of that
is needed. This version:

- drops the bounds checks: every tile is full;
- unrolls the cooperative loads: each thread loads exactly ``bm * bk / threads`` elements of A
  and as many of B, at ``tid + rep * threads`` (``rep`` a compile-time constant);
- unrolls the k loop by composition: one ``inline="always"`` device function does one k of the
  slab (tm + tn shared loads, tm x tn FFMAs); ``slab._doubled`` makes a function doing two of them at
  ``kk`` and ``kk + stride``; three doublings give the 8 of a slab, every shared-memory index a
  compile-time constant;
- indexes global memory with 32-bit integers, not Numba's 64-bit ones.

What it computes, and how its threads map onto the tile and onto C, is exactly
version 2's: only the instructions around the FFMAs go. ``gemm()`` launches it when the
shape allows; the compile matrix counts both (``exact_gemm`` and its rows per blocking and layout).
"""

from __future__ import annotations

import functools

from numba import cuda, float32, uint32

from .slab import patch_store, unrolled_slab
from .tiles import B_LAYOUTS, CONTIGUOUS, GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING, build, cases, spec

@functools.lru_cache(maxsize=None)
def exact_gemm_kernel(blocking, transpose_b: bool, transpose_a: bool, padding: int, strided_b: bool = False):
    """The kernel for one blocking and layout (``strided_b``: a transposed B loaded in the naive
    order, as version 2's); launch it only where ``divides`` says so."""
    bm, bn, bk, tm, tn = blocking
    threads_n = bn // tn
    threads_m = bm // tm
    threads = threads_m * threads_n
    a_loads = bm * bk // threads
    b_loads = bn * bk // threads
    a_shape = (bk, bm + padding)
    b_shape = (bk, bn + padding)
    b_along_k = transpose_b and not strided_b
    slab, store_patch = unrolled_slab(blocking), patch_store(blocking)

    @cuda.jit
    def exact_gemm(a, b, c, accumulate):
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
        store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate)

    return exact_gemm


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` rounded up to the tile, B in each of
    ``B_LAYOUTS`` on the first."""
    return cases(size, rng, lambda blocking, m, n, k, a, b, transposed, strided: (
        exact_gemm_kernel(blocking, transposed, False, SHARED_PADDING, strided),
        (-(-n // blocking.bn), -(-m // blocking.bm)), blocking.threads), exact=True, layouts=B_LAYOUTS)


def _v3_rows() -> tuple:
    """Version 3's rows in the compile matrix, one per blocking (and layout) it runs."""
    L, S, W, pad = GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING
    return (build("exact_gemm", L, lambda: exact_gemm_kernel(L, False, False, pad), CONTIGUOUS, ", exact"),
            build("exact_gemm_t", S, lambda: exact_gemm_kernel(S, True, False, pad), CONTIGUOUS, ", B^T, exact"),
            build("exact_gemm_wide", W, lambda: exact_gemm_kernel(W, False, False, pad), CONTIGUOUS, ", exact"))


SPEC = spec(3, "exact_gemm", "2 without the checks, unrolled, where the tile divides the shape", _v3_rows)
