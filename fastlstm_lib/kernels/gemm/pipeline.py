"""What the register-double-buffered GEMM versions (4-7) share: a slab's way from global memory
through registers into shared memory (``slab_parts``), a block's part of K (``all_of_k``,
``split_of_k``), the opening of every such kernel (``prologue``) and versions 4-6's kernel
(``double_buffered``).
"""

from __future__ import annotations

from numba import cuda, float32, uint32

from ..vector import load_vector
from .slab import patch_store, unrolled_slab


@cuda.jit(device=True, inline="always")
def all_of_k(a, c):
    """Versions 4 and 5: the block's K range is all of K, its output C."""
    return uint32(0), uint32(a.shape[1]), c


@cuda.jit(device=True, inline="always")
def split_of_k(a, c):
    """Versions 6 and 7: block z of the grid's depth takes the z-th of gridDim.z equal parts of K
    and writes its partial product to C[z]."""
    length = uint32(a.shape[1]) // uint32(cuda.gridDim.z)
    return uint32(cuda.blockIdx.z) * length, length, c[cuda.blockIdx.z]


def slab_parts(blocking, width: int, halves: bool):
    """``double_buffered``'s parts: the loads of a slab into registers, ``width`` neighbours per load
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


def prologue(blocking, load_slab, store_slab, k_range):
    """A device function opening a double-buffered kernel: where this thread and block lie in C,
    the block's part of K (``k_range(a, c)``), the accumulators zeroed, the first slab loaded
    (``load_slab``) and stored into the tiles it is given (``store_slab``), then a barrier. It
    returns (tid, thread_m, thread_n, row0, col0, k_begin, k_length, k_last, out): k_last is the
    part's last slab, out the block's output (C, or C[z])."""
    bm, bn, bk, tm, tn = blocking
    threads_n = bn // tn

    @cuda.jit(device=True, inline="always")
    def begin(a, b, c, a_tile, b_tile, acc, a_next, b_next):
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
        return tid, thread_m, thread_n, row0, col0, k_begin, k_length, k_last, out

    return begin


def double_buffered(name: str, blocking, padding: int, align, parts, k_range=all_of_k):
    """Versions 4-6's kernel: the slab at k0 + bk loaded into registers (``load_slab``) while
    the block computes the slab at k0 from shared memory, then stored there (``store_slab``).
    ``parts`` = (load_slab, store_slab, slab, store_patch, registers per thread for A's share of a
    slab, for B's); ``align``: the shared tiles' byte alignment (None: the dtype's); ``k_range(a, c)``:
    the block's part of K and its output (``all_of_k``, or version 6's ``split_of_k``). ``name``:
    the kernel's, as SASS listings, profiles and tables show it."""
    bm, bn, bk, tm, tn = blocking
    load_slab, store_slab, slab, store_patch, a_count, b_count = parts
    begin = prologue(blocking, load_slab, store_slab, k_range)
    a_shape = (bk, bm + padding)
    b_shape = (bk, bn + padding)

    def kernel(a, b, c, accumulate):
        a_tile = cuda.shared.array(a_shape, float32, alignment=align)
        b_tile = cuda.shared.array(b_shape, float32, alignment=align)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        a_next = cuda.local.array(a_count, float32)  # the next slab, on its way from memory
        b_next = cuda.local.array(b_count, float32)
        tid, thread_m, thread_n, row0, col0, k_begin, k_length, k_last, out = begin(a, b, c, a_tile, b_tile, acc,
                                                                                    a_next, b_next)
        for k0 in range(k_begin, k_begin + k_length, bk):
            # The next slab's loads go out first and arrive while this slab's FFMAs run. The last
            # slab loads itself again rather than branch: one slab of loads in K / bk.
            load_slab(a, b, min(k0 + uint32(bk), k_last), row0, col0, tid, a_next, b_next)
            slab(a_tile, b_tile, 0, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()  # every thread is done with the tiles...
            store_slab(a_tile, b_tile, tid, a_next, b_next)
            cuda.syncthreads()  # ...and the next slab is in them
        store_patch(out, acc, row0, col0, thread_m, thread_n, accumulate)

    kernel.__name__ = kernel.__qualname__ = name
    return cuda.jit(kernel)
