"""The GEMM every step uses: C = op(A) @ op(B), or C += op(A) @ op(B), correct at any size.

Its versions, each built on the one before, and the steps that launch them (the README's table
counts every step's launches at the article's size):

1. ``tiled_gemm`` (``tiled_gemm_kernel``): a shared-memory tile, one output per thread. Notebook
   02 explains it and exercise ex02 rebuilds it; no step launches it.
2. ``blocked_gemm`` (``blocked_gemm_kernel``): register-blocked, tm x tn outputs per thread,
   every edge checked. ``gemm()`` launches it where the tile does not divide the shape: every
   GEMM of every step (02-09, bwd01-05) at the course's odd sizes; at the article's size only
   the bias gradient's one-row GEMM (bwd01-03).
3. ``blocked_gemm`` exact-tile (``exact_gemm_kernel``; ``blocked_gemm_exact`` in the compile
   matrix): 2 without the checks, its loops unrolled, where the tile divides M, N and K: every
   other GEMM of every step at the article's size, with the 128 x 128 blocking ``GPU_WIDE``
   (``blocked_gemm_wide``) where its blocks still fill every SM.

4. ``blocked_gemm`` prefetching (``prefetch_gemm_kernel``; ``blocked_gemm_prefetch_*`` in the
   compile matrix): 3 with the next slab of K loaded into registers
   while the block computes this one (register double buffering, as in SGEMM_CUDA's later
   kernels), so a slab's global loads are in flight during its FFMAs instead of before them. A and
   B as stored, exact tiles only. No step launches it yet: ``python -m fastlstm_lib.kernels gemm``
   and the GPU run time it against 3, and ``gemm()`` takes it where a GPU shows it faster.

``transpose_a``, ``transpose_b`` and ``strided_b`` are layouts of versions 2 and 3, not versions.

``tiled_gemm`` (the textbook one, kept for notebook 02): a block of TILE x TILE threads computes
a TILE x TILE patch of C. It walks along K in TILE-wide slabs: every thread loads one element of
A and one of B into shared memory, the block synchronises, and every thread reads a row of the A
tile and a column of the B tile from fast shared memory: TILE times fewer global loads than one
thread per output reading straight from memory.

``blocked_gemm`` (what ``gemm()`` launches): the same shared-memory tiles, but each thread
computes TM x TN outputs held in registers. Per k it loads TM values of A and TN of B from
shared memory and does TM*TN multiply-adds, so shared-memory traffic per FLOP drops by a factor
~TM*TN/(TM+TN) and the FLOPs, not the loads, set the pace (siboehm's SGEMM_CUDA kernel 5, with
the thread's outputs strided across the tile so that a warp reads consecutive shared-memory
words and stores consecutive columns of C).

Both load elements beyond the edge of A, B or C as zeros and never store them: odd sizes are
safe. Where the tile divides M, N and K, ``gemm()`` launches the exact-tile variant of
``blocked_gemm`` instead (below): the same threads and tiles, without the checks, its loops
unrolled. Arrays may be strided views (one gate's columns of a stacked matrix, one time step of
a sequence).

``transpose_b``: B is stored (N, K) and read as its transpose, like BLAS's 'T' flag. The kernel
loads such a B tile the way it loads A: consecutive threads take consecutive k, which are
neighbours in memory, and the tile is transposed on its way into shared memory. So both layouts
cost the same 32-byte sectors per warp-wide load, as they do in cuBLAS. ``strided_b=True`` keeps
the naive alternative for notebook 06: consecutive threads take consecutive columns of op(B),
which for a transposed B are K floats apart in memory, one sector per thread.

``transpose_a``: A is stored (K, M) and read as its transpose (the backward pass's weight
gradients, X^T dZ summed over every step, notebook 41). Its tile is loaded with consecutive threads
on consecutive m, neighbours in that layout, and lands in shared memory k-major, as it is used.

The shared tiles are padded by four columns. A warp's transposing stores (A always, a transposed
B too) write an 8 x 4 patch of a tile, k down and four rows or columns across; with a row stride
of 64 + 4 words, the 32 threads land in 32 different shared-memory banks (with + 1, only 11: a
4-way bank conflict), and a plain B's row-wise stores stay conflict-free.

**The exact-tile version** (``exact_gemm_kernel``): ``blocked_gemm`` for shapes its tile divides,
the same algorithm compiled with nothing but the work.

``blocked_gemm`` is correct at any size, and pays for it in its inner loops: every
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
shape allows; the compile matrix counts both (``blocked_gemm_exact`` and friends).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from numba import cuda, float32, uint32

from .. import simulator
from ..device import multiprocessors

#: Tile edge of ``tiled_gemm``: 16 x 16 = 256 threads on a GPU; 4 x 4 on the simulator, where
#: every simulated thread costs ~0.15 ms per launch.
TILE = 4 if simulator.SIMULATOR else 16


class Blocking(NamedTuple):
    """How ``blocked_gemm`` cuts C: a (bm x bn) patch per block, K in bk-slabs, tm x tn per thread."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


#: Extra words per shared-tile row: 4 keeps a warp's transposing stores in 32 different banks.
SHARED_PADDING = 4

#: On a GPU: 256 threads, 16 outputs each (64 x 64 per block), or a 32 x 32 patch with 4 each
#: when 64 x 64 patches would leave SMs idle (the LSTM's recurrent GEMM is only batch rows tall).
GPU_LARGE = Blocking(bm=64, bn=64, bk=8, tm=4, tn=4)
GPU_SMALL = Blocking(bm=32, bn=32, bk=8, tm=2, tn=2)
#: Where M, N and K are multiples of 128, 128 and 8 and its blocks still fill every SM: 8 x 8
#: outputs per thread, so each value loaded from shared memory feeds 8 FFMAs, not 4.
GPU_WIDE = Blocking(bm=128, bn=128, bk=8, tm=8, tn=8)
#: On the simulator: 16 threads, 4 outputs each: the same code paths, milliseconds per launch.
SIMULATOR_BLOCKING = Blocking(bm=8, bn=8, bk=4, tm=2, tn=2)


# --------------------------------------------------------------------------------------------
# Version 1, tiled_gemm: see the module docstring.


@functools.lru_cache(maxsize=None)
def tiled_gemm_kernel(tile: int):
    """The kernel for one tile size (shared-array shapes must be compile-time constants)."""

    @cuda.jit
    def tiled_gemm(a, b, c, accumulate):
        a_tile = cuda.shared.array((tile, tile), float32)
        b_tile = cuda.shared.array((tile, tile), float32)
        tx = cuda.threadIdx.x  # column inside the tile
        ty = cuda.threadIdx.y  # row inside the tile
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        m, k_total = a.shape
        n = b.shape[1]
        acc = float32(0.0)
        for k0 in range(0, k_total, tile):
            a_col = k0 + tx
            b_row = k0 + ty
            a_tile[ty, tx] = a[row, a_col] if (row < m and a_col < k_total) else float32(0.0)
            b_tile[ty, tx] = b[b_row, col] if (b_row < k_total and col < n) else float32(0.0)
            cuda.syncthreads()
            for kk in range(tile):
                acc += a_tile[ty, kk] * b_tile[kk, tx]
            cuda.syncthreads()  # nobody overwrites the tiles while others still read them
        if row < m and col < n:
            if accumulate:
                c[row, col] += acc
            else:
                c[row, col] = acc

    return tiled_gemm


# --------------------------------------------------------------------------------------------
# Version 2, blocked_gemm: see the module docstring.


@functools.lru_cache(maxsize=None)
def blocked_gemm_kernel(blocking: Blocking, transpose_b: bool, strided_b: bool = False, transpose_a: bool = False):
    """The register-blocked kernel for one blocking and A and B layout (all compile-time constants)."""
    bm, bn, bk, tm, tn = blocking
    threads = blocking.threads
    threads_n = bn // tn  # threads side by side along N
    threads_m = bm // tm
    a_shape = (bk, bm + SHARED_PADDING)  # see the module docstring (bank conflicts)
    b_shape = (bk, bn + SHARED_PADDING)
    b_along_k = transpose_b and not strided_b  # walk B's storage order: k is contiguous in (N, K)

    @cuda.jit
    def blocked_gemm(a, b, c, accumulate):
        # Both tiles are stored k-major, so the inner loop reads a row of each.
        a_tile = cuda.shared.array(a_shape, float32)
        b_tile = cuda.shared.array(b_shape, float32)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        tid = cuda.threadIdx.x
        # This thread owns rows thread_m + i*threads_m and columns thread_n + j*threads_n of the
        # block's patch: neighbouring threads own neighbouring columns (no bank conflicts,
        # coalesced stores).
        thread_m = tid // threads_n
        thread_n = tid % threads_n
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        m, n = c.shape
        k_total = a.shape[0] if transpose_a else a.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        for k0 in range(0, k_total, bk):
            # Cooperative loads. A (M, K): consecutive threads take consecutive k; a transposed A,
            # stored (K, M): consecutive m. Either way, neighbours in memory.
            for e in range(tid, bm * bk, threads):
                if transpose_a:
                    kk = e // bm
                    r = e % bm
                else:
                    r = e // bk
                    kk = e % bk
                if row0 + r < m and k0 + kk < k_total:
                    if transpose_a:
                        a_tile[kk, r] = a[k0 + kk, row0 + r]
                    else:
                        a_tile[kk, r] = a[row0 + r, k0 + kk]
                else:
                    a_tile[kk, r] = float32(0.0)
            # B: consecutive threads take neighbours in memory: consecutive n of a (K, N) B,
            # consecutive k of an (N, K) one (unless strided_b asks for the naive order).
            for e in range(tid, bk * bn, threads):
                if b_along_k:
                    col = e // bk
                    kk = e % bk
                else:
                    kk = e // bn
                    col = e % bn
                if k0 + kk < k_total and col0 + col < n:
                    if transpose_b:
                        b_tile[kk, col] = b[col0 + col, k0 + kk]
                    else:
                        b_tile[kk, col] = b[k0 + kk, col0 + col]
                else:
                    b_tile[kk, col] = float32(0.0)
            cuda.syncthreads()
            for kk in range(bk):
                for i in range(tm):
                    a_reg[i] = a_tile[kk, thread_m + i * threads_m]
                for j in range(tn):
                    b_reg[j] = b_tile[kk, thread_n + j * threads_n]
                for i in range(tm):
                    for j in range(tn):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()  # nobody overwrites the tiles while others still read them
        for i in range(tm):
            row = row0 + thread_m + i * threads_m
            for j in range(tn):
                col = col0 + thread_n + j * threads_n
                if row < m and col < n:
                    if accumulate:
                        c[row, col] += acc[i, j]
                    else:
                        c[row, col] = acc[i, j]

    return blocked_gemm


# --------------------------------------------------------------------------------------------
# Version 3, exact-tile: see the module docstring.


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
def unrolled_slab(blocking):
    """A device function doing a whole slab of K (bk k's, each tm + tn shared loads and tm x tn
    FFMAs), unrolled by doubling so that every shared-memory index is a compile-time constant."""
    bm, bn, bk, tm, tn = blocking
    threads_n, threads_m = bn // tn, bm // tm

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
    return slab


@functools.lru_cache(maxsize=None)
def patch_store(blocking):
    """A device function writing a thread's tm x tn outputs to C (or adding them, ``accumulate``)."""
    bm, bn, bk, tm, tn = blocking
    threads_n, threads_m = bn // tn, bm // tm

    @cuda.jit(device=True, inline="always")
    def store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate):
        for i in range(tm):
            row = uint32(row0 + thread_m + i * threads_m)
            for j in range(tn):
                col = uint32(col0 + thread_n + j * threads_n)
                if accumulate:
                    c[row, col] += acc[i, j]
                else:
                    c[row, col] = acc[i, j]

    return store_patch


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
    slab, store_patch = unrolled_slab(blocking), patch_store(blocking)

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
        store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate)

    return blocked_gemm


# --------------------------------------------------------------------------------------------
# Version 4, the next slab prefetched: see the module docstring.


@functools.lru_cache(maxsize=None)
def prefetch_gemm_kernel(blocking, padding: int):
    """Version 3 (exact tile, A (M, K) and B (K, N) as stored) with the next slab of K loaded into
    registers while the block computes this one; launch it only where ``divides`` says so."""
    bm, bn, bk, tm, tn = blocking
    threads_n = bn // tn
    threads_m = bm // tm
    threads = threads_m * threads_n
    a_loads = bm * bk // threads
    b_loads = bn * bk // threads
    a_shape = (bk, bm + padding)
    b_shape = (bk, bn + padding)
    slab, store_patch = unrolled_slab(blocking), patch_store(blocking)

    @cuda.jit(device=True, inline="always")
    def load_slab(a, b, k0, row0, col0, tid, a_next, b_next):
        # this thread's elements of the slab at k0, into registers (consecutive threads on
        # consecutive k of A and consecutive n of B: the same order as version 3)
        for rep in range(a_loads):
            e = tid + rep * threads
            a_next[rep] = a[uint32(row0 + e // bk), uint32(k0 + e % bk)]
        for rep in range(b_loads):
            e = tid + rep * threads
            b_next[rep] = b[uint32(k0 + e // bn), uint32(col0 + e % bn)]

    @cuda.jit(device=True, inline="always")
    def store_slab(a_tile, b_tile, tid, a_next, b_next):
        for rep in range(a_loads):
            e = tid + rep * threads
            a_tile[e % bk, e // bk] = a_next[rep]
        for rep in range(b_loads):
            e = tid + rep * threads
            b_tile[e // bn, e % bn] = b_next[rep]

    @cuda.jit
    def blocked_gemm(a, b, c, accumulate):  # the name of versions 2 and 3: the profile's formula is theirs
        a_tile = cuda.shared.array(a_shape, float32)
        b_tile = cuda.shared.array(b_shape, float32)
        acc = cuda.local.array((tm, tn), float32)
        a_reg = cuda.local.array(tm, float32)
        b_reg = cuda.local.array(tn, float32)
        a_next = cuda.local.array(a_loads, float32)  # the next slab, on its way from memory
        b_next = cuda.local.array(b_loads, float32)
        tid = cuda.threadIdx.x
        thread_m = tid // threads_n
        thread_n = tid % threads_n
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        k_total = a.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        load_slab(a, b, 0, row0, col0, tid, a_next, b_next)
        store_slab(a_tile, b_tile, tid, a_next, b_next)
        cuda.syncthreads()
        for k0 in range(0, k_total, bk):
            # The next slab's loads go out first and arrive while this slab's FFMAs run. The last
            # slab loads itself again rather than branch: one slab of loads in K / bk.
            load_slab(a, b, min(k0 + bk, k_total - bk), row0, col0, tid, a_next, b_next)
            slab(a_tile, b_tile, 0, thread_m, thread_n, a_reg, b_reg, acc)
            cuda.syncthreads()  # every thread is done with the tiles...
            store_slab(a_tile, b_tile, tid, a_next, b_next)
            cuda.syncthreads()  # ...and the next slab is in them
        store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate)

    return blocked_gemm


# --------------------------------------------------------------------------------------------
# The launchers: which version, which blocking, which grid.


def gemm_shape(a, b, c, transpose_b: bool, transpose_a: bool = False) -> tuple[int, int, int]:
    """(M, N, K) of C = op(A) @ op(B); a ValueError if the shapes don't chain."""
    k, m = a.shape if transpose_a else a.shape[::-1]
    k_b, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if k != k_b or c.shape != (m, n):
        stored_a = f"A {a.shape}" + (" transposed" if transpose_a else "")
        stored_b = f"B {b.shape}" + (" transposed" if transpose_b else "")
        raise ValueError(f"gemm shapes don't chain: {stored_a} @ {stored_b} -> C {c.shape}")
    return m, n, k


def gpu_blocking(m: int, n: int, k: int, sms: int) -> Blocking:
    """What a GPU with ``sms`` SMs runs for an (m x n) C over k: GPU_WIDE patches where they divide
    the shape and fill every SM, else GPU_LARGE ones, unless those would give fewer blocks than it
    has SMs (then GPU_SMALL)."""
    if divides(GPU_WIDE, m, n, k) and (m // GPU_WIDE.bm) * (n // GPU_WIDE.bn) >= sms:
        return GPU_WIDE
    blocks = -(-m // GPU_LARGE.bm) * -(-n // GPU_LARGE.bn)
    return GPU_SMALL if blocks < sms else GPU_LARGE


def choose_blocking(m: int, n: int, k: int) -> Blocking:
    """The blocking ``gemm()`` launches here: this GPU's choice, or the simulator's small one."""
    return SIMULATOR_BLOCKING if simulator.SIMULATOR else gpu_blocking(m, n, k, multiprocessors())


def exact(blocking: Blocking, m: int, n: int, k: int) -> bool:
    """Whether ``gemm()`` launches the exact-tile variant (``exact_gemm_kernel``) for this shape."""
    return divides(blocking, m, n, k)


def gemm(a, b, c, *, accumulate: bool = False, transpose_a: bool = False, transpose_b: bool = False,
         blocking: Blocking | None = None, strided_b: bool = False, stream=0) -> None:
    """Launch C = op(A) @ op(B) (or C += op(A) @ op(B)) on device arrays.

    A is (M, K), or (K, M) with ``transpose_a``; B is (K, N), or (N, K) with ``transpose_b``; C is
    (M, N). ``strided_b``: load a transposed B in the naive, uncoalesced order (notebook 06's
    comparison; never faster). Where ``blocking``'s tile divides the shape, the exact-tile variant
    runs: the same result, fewer instructions.
    """
    simulator.announce()
    m, n, k = gemm_shape(a, b, c, transpose_b, transpose_a)
    blocking = choose_blocking(m, n, k) if blocking is None else blocking
    grid = (-(-n // blocking.bn), -(-m // blocking.bm))
    if exact(blocking, m, n, k):
        kernel = exact_gemm_kernel(blocking, bool(transpose_b), bool(transpose_a), SHARED_PADDING, bool(strided_b))
    else:
        kernel = blocked_gemm_kernel(blocking, bool(transpose_b), bool(strided_b), bool(transpose_a))
    kernel[grid, blocking.threads, stream](a, b, c, accumulate)


def tiled_gemm(a, b, c, *, accumulate: bool = False, tile: int | None = None, stream=0) -> None:
    """Launch the textbook tiled kernel: C = A @ B (or C += A @ B)."""
    simulator.announce()
    tile = TILE if tile is None else tile
    m, n, _ = gemm_shape(a, b, c, False)
    grid = (-(-n // tile), -(-m // tile))
    tiled_gemm_kernel(tile)[grid, (tile, tile), stream](a, b, c, accumulate)
