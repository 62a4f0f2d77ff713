"""GEMM version 7, ``recurrent_gemm``: version 6 shaped for the recurrent GEMM (M = batch rows,
N = 4H, K = H), at the level of SGEMM_CUDA's kernels 9-10 where Numba allows.

Read from version 6's machine code at the article's size (32 x 32 patch, 2 x 2 outputs per
thread), a slab is 35% FFMA with one shared load per FFMA, and ptxas sinks the next slab's
"prefetch" to the end of the slab, where nothing overlaps it. This version changes three things:

- **4 x 4 outputs per thread, in runs** (``owned(..., runs=True)``): a thread's 4 rows and 4
  columns are neighbours, so per k one 128-bit shared load of A and one of B feed 16 FFMAs (1 load
  per 8 FFMA), and 16 independent accumulators hide the FFMA latency. A quarter-warp's loads of B
  read 8 consecutive 16-byte words; of A, one word (a broadcast): no bank conflict.
- **A double-buffered shared tile** (one array with a leading dimension of 2: the simulator aliases
  several allocations declared together): the next slab's registers are stored into the other
  buffer half-way through this slab's FFMAs, so its global loads must be issued before the first
  half and overlap it; one barrier per slab instead of two. The loop takes two slabs per trip,
  so that each buffer's index is a compile-time constant.
- **K split only as far as the GPU needs** (``tiles.recurrent_splits``): every SM a block of 8
  warps (the 64 x 64 patch, ``GPU_LARGE``: 256 blocks at batch 64 on an H100, K in 8 parts of 64).

No warp shuffles (the simulator has none), no asynchronous copies. The parts are added up by the
fused cell, as version 6's (``pointwise``'s version 3). ``gemm_split`` launches it where it fits
(``recurrent_fits``) and version 8 does not (a blocking of no whole warps of 8 x 4 threads), version
6 where neither fits; under the "fast" policy, steps 06-08 launch version 8, this version's warp-tiled
successor.
"""

from __future__ import annotations

import functools

from numba import cuda, float32, uint32

from .pipeline import prologue, slab_parts, split_of_k
from .slab import patch_store, unrolled_slab
from .tiles import GPU_LARGE, SHARED_ALIGN, SHARED_PADDING, SHAPES, SPLIT, build, geometry_sms, recurrent_blocking, \
    recurrent_splits, spec, split_k_case, vector_fits, vector_width


@functools.lru_cache(maxsize=None)
def recurrent_gemm_kernel(blocking, padding: int):
    """The kernel for one blocking: block z of the grid's depth computes the z-th of gridDim.z equal
    parts of K into C[z] (C is (splits, M, N)); each part an even number of slabs."""
    bm, bn, bk, tm, tn = blocking
    load_slab, store_slab, _, _, a_count, b_count = slab_parts(blocking, vector_width(blocking), False)
    begin = prologue(blocking, load_slab, store_slab, split_of_k)
    half = unrolled_slab(blocking, runs=True, steps=bk // 2)  # bk / 2 k's of one buffer
    store_patch = patch_store(blocking, runs=True)
    a_shape = (2, bk, bm + padding)
    b_shape = (2, bk, bn + padding)

    @cuda.jit
    def recurrent_gemm(a, b, c, accumulate):
        a_tile = cuda.shared.array(a_shape, float32, alignment=SHARED_ALIGN)
        b_tile = cuda.shared.array(b_shape, float32, alignment=SHARED_ALIGN)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        a_next = cuda.local.array(a_count, float32)  # the next slab, on its way from memory
        b_next = cuda.local.array(b_count, float32)
        # The first slab into buffer 0.
        tid, thread_m, thread_n, row0, col0, k_begin, k_length, k_last, out = begin(a, b, c, a_tile[0], b_tile[0], acc,
                                                                                    a_next, b_next)
        for k0 in range(k_begin, k_begin + k_length, 2 * bk):
            # This slab is in buffer 0; the next one's loads go out now, and land in buffer 1 half-way.
            load_slab(a, b, k0 + uint32(bk), row0, col0, tid, a_next, b_next)
            half(a_tile[0], b_tile[0], 0, thread_m, thread_n, a_reg, b_reg, acc)
            store_slab(a_tile[1], b_tile[1], tid, a_next, b_next)  # nobody reads buffer 1 until the barrier
            half(a_tile[0], b_tile[0], bk // 2, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()
            # The same from buffer 1 into buffer 0 (the last trip loads its last slab again: no branch).
            load_slab(a, b, min(k0 + uint32(2 * bk), k_last), row0, col0, tid, a_next, b_next)
            half(a_tile[1], b_tile[1], 0, thread_m, thread_n, a_reg, b_reg, acc)
            store_slab(a_tile[0], b_tile[0], tid, a_next, b_next)
            half(a_tile[1], b_tile[1], bk // 2, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()
        store_patch(out, acc, row0, col0, thread_m, thread_n, accumulate)

    return recurrent_gemm


def plan(m: int, n: int, k: int) -> tuple:
    """(blocking, splits) version 7 runs (m x n) over k in here: ``GPU_LARGE`` in
    ``recurrent_splits``' parts on a GPU (splits 0: it does not fit), the simulator's blocking in 2."""
    sms = geometry_sms()
    return (recurrent_blocking(), 2) if sms is None else (recurrent_blocking(), recurrent_splits(m, n, k, sms))


def recurrent_fits(blocking, m: int, n: int, k: int, splits: int) -> bool:
    """Whether version 7 runs ``blocking`` on (m x n) over k in ``splits`` parts: its tile divides
    the shape (``vector_fits``), each part of K an even number of slabs."""
    return k % (2 * splits * blocking.bk) == 0 and vector_fits(blocking, m, n, k // splits)


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` rounded up to whole parts of K (two slabs each at
    least), as ``gemm_split`` launches it; each part checked on its own."""
    found = []
    for m, n, k in SHAPES[size]:
        blocking, splits = plan(m, n, k)
        kernel = recurrent_gemm_kernel(blocking, SHARED_PADDING)

        def launch(a, b, parts, kernel=kernel, blocking=blocking):
            kernel[(parts.shape[2] // blocking.bn, parts.shape[1] // blocking.bm, parts.shape[0]), blocking.threads](
                a, b, parts, False)

        found.append(split_k_case(m, n, k, rng, blocking, max(splits, 2), launch))
    return found


SPEC = spec(7, "recurrent_gemm", "6 for the recurrent GEMM: 4 x 4 runs read by 128-bit shared loads, a double-buffered "
            "tile filled half-way through each slab",
            lambda: (build("recurrent_gemm", GPU_LARGE, lambda: recurrent_gemm_kernel(GPU_LARGE, SHARED_PADDING),
                           SPLIT, ", exact, runs, double-buffered, split-K"),))
