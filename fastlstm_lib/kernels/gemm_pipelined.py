"""Versions 4-6 of the GEMM (``gemm.py`` lists every version): the double-buffered main loop,
the next slab of K loaded into registers while the block computes this one (4); the same with
128-bit loads, global and shared (5, what ``gemm()`` launches where the layouts allow); and 5 over
one part of K per layer of the grid, each part's product kept apart for its reader to add (6,
split-K). Exact tiles only, A (M, K) and B (K, N) as stored.
"""

from __future__ import annotations

import functools

from numba import cuda, float32, uint32

from ..runtime.device import DEVICE
from .gemm_slab import divides, numbered, patch_store, unrolled_slab
from .vector import load_vector


# --------------------------------------------------------------------------------------------
# Version 4, the next slab prefetched: see the module docstring.


@cuda.jit(device=True, inline="always")
def _all_of_k(a, c):
    """Versions 4 and 5: the block's K range is all of K, its output C."""
    return uint32(0), uint32(a.shape[1]), c


@cuda.jit(device=True, inline="always")
def _split_of_k(a, c):
    """Version 6: block z of the grid's depth takes the z-th of gridDim.z equal parts of K and
    writes its partial product to C[z]."""
    length = uint32(a.shape[1]) // uint32(cuda.gridDim.z)
    return uint32(cuda.blockIdx.z) * length, length, c[cuda.blockIdx.z]


def _double_buffered(blocking, padding: int, align, parts, split: bool = False):
    """Versions 4-6's kernel: the slab at k0 + bk loaded into registers (``load_slab``) while
    the block computes the slab at k0 from shared memory, then stored there (``store_slab``).
    ``parts`` = (load_slab, store_slab, slab, store_patch, registers per thread for A's share of a
    slab, for B's); ``align``: the shared tiles' byte alignment (None: the dtype's); ``split``:
    over the block's share of K only, into its own slice of C (version 6)."""
    bm, bn, bk, tm, tn = blocking
    threads_n = bn // tn
    load_slab, store_slab, slab, store_patch, a_count, b_count = parts
    a_shape = (bk, bm + padding)
    b_shape = (bk, bn + padding)
    k_range = _split_of_k if split else _all_of_k

    @cuda.jit
    def blocked_gemm(a, b, c, accumulate):  # the name of versions 2 and 3: the profile's formula is theirs
        a_tile = cuda.shared.array(a_shape, float32, alignment=align)
        b_tile = cuda.shared.array(b_shape, float32, alignment=align)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        a_next = cuda.local.array(a_count, float32)  # the next slab, on its way from memory
        b_next = cuda.local.array(b_count, float32)
        tid = uint32(cuda.threadIdx.x)
        thread_m = tid // uint32(threads_n)
        thread_n = tid % uint32(threads_n)
        row0 = uint32(cuda.blockIdx.y * bm)
        col0 = uint32(cuda.blockIdx.x * bn)
        k_begin, k_length, out = k_range(a, c)
        k_last = k_begin + k_length - uint32(bk)
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        load_slab(a, b, k_begin, row0, col0, tid, a_next, b_next)
        store_slab(a_tile, b_tile, tid, a_next, b_next)
        cuda.syncthreads()
        for k0 in range(k_begin, k_begin + k_length, bk):
            # The next slab's loads go out first and arrive while this slab's FFMAs run. The last
            # slab loads itself again rather than branch: one slab of loads in K / bk.
            load_slab(a, b, min(k0 + uint32(bk), k_last), row0, col0, tid, a_next, b_next)
            slab(a_tile, b_tile, 0, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()  # every thread is done with the tiles...
            store_slab(a_tile, b_tile, tid, a_next, b_next)
            cuda.syncthreads()  # ...and the next slab is in them
        store_patch(out, acc, row0, col0, thread_m, thread_n, accumulate)

    return blocked_gemm


@numbered(4)
@functools.lru_cache(maxsize=None)
def prefetch_gemm_kernel(blocking, padding: int):
    """Version 3 (exact tile, A (M, K) and B (K, N) as stored) with the next slab of K loaded into
    registers while the block computes this one; launch it only where ``divides`` says so."""
    return _double_buffered(blocking, padding, None, _slab_parts(blocking, 1, False))


# --------------------------------------------------------------------------------------------
# Version 5, vector loads: see the module docstring.

#: Byte alignment of version 5's shared tiles, so that 4 neighbouring floats are one 128-bit load
#: (the simulator takes no alignment: it has no vector loads).
SHARED_ALIGN = DEVICE.shared_alignment


def vector_width(blocking) -> int:
    """The widest vector (4, 2 or 1 floats) in which version 5's threads load their slab of A and B:
    it must divide each thread's share of both and the rows it is cut from."""
    bm, bn, bk, tm, tn = blocking
    a_loads, b_loads = bm * bk // blocking.threads, bn * bk // blocking.threads
    return next(w for w in (4, 2, 1) if a_loads % w == 0 and b_loads % w == 0 and bk % w == 0 and bn % w == 0)


def vector_fits(blocking, m: int, n: int, k: int) -> bool:
    """Whether version 5 can run ``blocking`` on this shape: ``divides``, and an even number of
    outputs per thread along M and N (its two halves, see ``owned``)."""
    return divides(blocking, m, n, k) and blocking.tm % 2 == 0 and blocking.tn % 2 == 0


@numbered(5)
@functools.lru_cache(maxsize=None)
def vector_gemm_kernel(blocking, padding: int):
    """Version 4 with vector loads: each thread's share of a slab in ``vector_width`` -float global
    loads, and its outputs in two runs of neighbours (``owned``) read from shared memory with
    128-bit loads. Launch it only where ``vector_fits`` says so and A and B are ``vector.aligned``."""
    return _double_buffered(blocking, padding, SHARED_ALIGN, _slab_parts(blocking, vector_width(blocking), True))


@numbered(6)
@functools.lru_cache(maxsize=None)
def split_gemm_kernel(blocking, padding: int):
    """Version 5 over one of gridDim.z equal parts of K, its partial product into C[z] (C is
    (splits, M, N)); launch it through ``gemm_split``."""
    return _double_buffered(blocking, padding, SHARED_ALIGN, _slab_parts(blocking, vector_width(blocking), True),
                            split=True)


def _slab_parts(blocking, width: int, halves: bool):
    """``_double_buffered``'s parts: the loads of a slab into registers, ``width`` neighbours per load
    (consecutive threads on consecutive k of A and n of B, as version 3 loads them), their stores
    to shared memory, and the slab and patch store for outputs placed by ``owned(blocking, halves)``.
    Version 4: width 1, outputs strided; 5 and 6: ``vector_width``, outputs in two runs."""
    bm, bn, bk, tm, tn = blocking
    threads = blocking.threads
    a_vectors = bm * bk // threads // width
    b_vectors = bn * bk // threads // width
    a_count, b_count = a_vectors * width, b_vectors * width
    slab, store_patch, load = unrolled_slab(blocking, halves), patch_store(blocking, halves), load_vector(width)

    @cuda.jit(device=True, inline="always")
    def load_slab(a, b, k0, row0, col0, tid, a_next, b_next):
        # vector rep of this thread: `width` neighbours along k of A, along n of B
        for rep in range(a_vectors):
            e = (tid + rep * threads) * width
            values = load(a, uint32(row0 + e // bk), uint32(k0 + e % bk))
            for v in range(width):
                a_next[rep * width + v] = values[v]
        for rep in range(b_vectors):
            e = (tid + rep * threads) * width
            values = load(b, uint32(k0 + e // bn), uint32(col0 + e % bn))
            for v in range(width):
                b_next[rep * width + v] = values[v]

    @cuda.jit(device=True, inline="always")
    def store_slab(a_tile, b_tile, tid, a_next, b_next):
        for rep in range(a_vectors):  # transposed on the way in: k-major, as the slab reads it
            e = (tid + rep * threads) * width
            for v in range(width):
                a_tile[uint32(e % bk + v), uint32(e // bk)] = a_next[rep * width + v]
        for rep in range(b_vectors):
            e = (tid + rep * threads) * width
            for v in range(width):
                b_tile[uint32(e // bn), uint32(e % bn + v)] = b_next[rep * width + v]

    return load_slab, store_slab, slab, store_patch, a_count, b_count
