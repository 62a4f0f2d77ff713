"""The GEMM every step uses: C = op(A) @ op(B), or C += op(A) @ op(B), correct at any size.

Its versions, each built on the one before, and the steps that launch them (the README's table
counts every step's launches at the article's size; ``SPECS`` at the end holds each version's facts,
checked against a dry run of every step):

1. ``tiled_gemm`` (``tiled_gemm_kernel``): a shared-memory tile, one output per thread. Notebook
   02 explains it and exercise ex02 rebuilds it; no step launches it.
2. ``blocked_gemm`` (``blocked_gemm_kernel``): register-blocked, tm x tn outputs per thread,
   every edge checked. ``gemm()`` launches it where the tile does not divide the shape: every
   GEMM of every step (02-09, bwd01-05) at the course's odd sizes; at the article's size only
   the bias gradient's one-row GEMM (bwd01-03).
3. ``blocked_gemm`` exact-tile (``exact_gemm_kernel``; ``blocked_gemm_exact`` in the compile
   matrix): 2 without the checks, its loops unrolled, where the tile divides M, N and K: every GEMM
   of the ladder's "2016" policy (``steps/gemm_policy.py``, the default) at the article's size, in
   steps 02-09 and the backward pass, with the 128 x 128 blocking ``GPU_WIDE``
   (``blocked_gemm_wide``) where its blocks still fill every SM.
4. ``blocked_gemm`` prefetching (``gemm_pipelined.prefetch_gemm_kernel``; ``blocked_gemm_prefetch_*`` in the
   compile matrix): 3 with the next slab of K loaded into registers while the block computes this
   one (register double buffering, as in SGEMM_CUDA's later kernels), so a slab's global loads
   are in flight during its FFMAs instead of before them. A and B as stored, exact tiles only. No
   step launches it: it is the step between 3 and 5, timed on its own by ``python -m
   fastlstm_lib.kernels gemm`` and the GPU run.
5. ``blocked_gemm`` vector loads (``gemm_pipelined.vector_gemm_kernel``; ``blocked_gemm_vector*`` in the compile
   matrix): 4 with 128-bit loads, global and shared. Each thread loads its share of a slab as one
   float4 of A and one of B (``kernels/vector.py``), and its outputs lie in runs of tm / 2
   neighbours, so the slab reads them from shared memory 4 floats per load: 4 loads per 64 FFMA
   instead of 16 (SGEMM_CUDA's kernels 6 and 10). ``gemm(..., vector=True)`` launches it where
   ``vector_launch`` allows: exact tiles of 64 x 64 or 128 x 128, A and B without a 'T' flag, rows
   contiguous and aligned; the ladder's "fast" policy asks for it (steps 06-09, whose weights are
   stored as read; at the article's size on an H100 their input GEMMs, on an M40 every GEMM).
   Versions 3, 4 and 5 add each output's products in the same order: the same result to the bit.
6. ``blocked_gemm`` split-K (``gemm_pipelined.split_gemm_kernel``; ``blocked_gemm_split(_small, _wide)`` in the compile matrix,
   ``gemm_split``): 5 over one of ``splits`` parts of K, grid depth ``splits``, each part's product
   into its own slice of a (splits, M, N) C, which its reader adds up (no atomics). For the
   recurrent GEMM, whose C is only batch rows tall: at batch 64 on an H100 a 32 x 32 patch gives
   128 blocks for 132 SMs, one block of 8 warps each, and ``split_plan`` cuts K in 4 for 512.
   Steps 06-08 launch it under the "fast" policy where ``choose_splits`` says so; the fused cell
   that adds the parts is ``pointwise``'s version 3.

``transpose_a``, ``transpose_b`` and ``strided_b`` are layouts of versions 2 and 3, not versions.
Versions 1-3 and the launchers are in this file, 4-6 in ``gemm_pipelined.py``, and what the
blocked versions share (the slab, the store of a thread's outputs, the registry behind
``version_of``) in ``gemm_slab.py``; this module's namespace holds all of them.

**Version 5's outputs.** Versions 2-4 give a thread the rows thread_m + i * (bm / tm): a warp's
reads of one k are neighbouring words, but each of a thread's tm values is a separate 32-bit load.
Version 5 gives it rows thread_m * tm/2 + i and bm/2 + thread_m * tm/2 + i (i < tm/2), columns
likewise: two runs of 4 neighbours in the 128 x 128 patch. A run is one 128-bit load; a quarter-warp's
eight loads read 8 consecutive 16-byte words (or the same one), so no bank conflict; and the
shared tiles are aligned to 16 bytes, their rows 132 floats (528 bytes) apart, so every run starts
on a 16-byte boundary, which is what lets NVVM merge the four loads into one.

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
import numbers
from typing import NamedTuple

from numba import boolean, cuda, float32, uint32

from ..runtime.device import DEVICE
from ..runtime.device import multiprocessors
# The family's versions in one namespace (the list above): 1-3 here, the shared parts and 4-6 beside.
from .gemm_pipelined import (SHARED_ALIGN, prefetch_gemm_kernel, split_gemm_kernel, vector_fits,  # noqa: F401
                             vector_gemm_kernel, vector_width)
from .gemm_slab import divides, numbered, owned, patch_store, unrolled_slab, version_of  # noqa: F401
from .spec import BACKWARD_STEPS, Build, Spec, Traffic
from .vector import aligned
from .views import view_of

#: Tile edge of ``tiled_gemm``: 16 x 16 = 256 threads on a GPU; 4 x 4 on the simulator, where
#: every simulated thread costs ~0.15 ms per launch.
TILE = 4 if DEVICE.small else 16


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


@numbered(1)
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


@numbered(2)
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


@numbered(3)
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
    return SIMULATOR_BLOCKING if DEVICE.small else gpu_blocking(m, n, k, multiprocessors())


def exact(blocking: Blocking, m: int, n: int, k: int) -> bool:
    """Whether ``gemm()`` launches an exact-tile version (3, or 5 where its layouts allow) for this shape."""
    return divides(blocking, m, n, k)


def vector_launch(blocking: Blocking, m: int, n: int, k: int, a, b, *, transpose_a: bool = False,
                  transpose_b: bool = False, strided_b: bool = False) -> bool:
    """Whether ``gemm()`` launches version 5 (vector loads) rather than 3: the tile divides the
    shape with an even split of outputs (``vector_fits``), its vectors are wider than one float
    (the 32 x 32 patch has one element of A and one of B per thread: nothing to vectorize), A and
    B are stored as read (no 'T' flag) and their rows are contiguous and aligned to the vector."""
    if transpose_a or transpose_b or strided_b or not vector_fits(blocking, m, n, k):
        return False
    width = vector_width(blocking)
    return width > 1 and aligned(a, width) and aligned(b, width)


def gemm(a, b, c, *, accumulate: bool = False, transpose_a: bool = False, transpose_b: bool = False,
         blocking: Blocking | None = None, strided_b: bool = False, vector: bool = False, stream=0) -> None:
    """Launch C = op(A) @ op(B) (or C += op(A) @ op(B)) on device arrays.

    A is (M, K), or (K, M) with ``transpose_a``; B is (K, N), or (N, K) with ``transpose_b``; C is
    (M, N). ``strided_b``: load a transposed B in the naive, uncoalesced order (notebook 06's
    comparison; never faster). Where ``blocking``'s tile divides the shape, an exact-tile version
    runs: with ``vector``, 5 where ``vector_launch`` allows (the ladder's "fast" GEMM policy,
    ``steps/gemm_policy.py``), else 3 (its "2016" policy); the same result to the bit.
    """
    DEVICE.announce()
    m, n, k = gemm_shape(a, b, c, transpose_b, transpose_a)
    blocking = choose_blocking(m, n, k) if blocking is None else blocking
    grid = (-(-n // blocking.bn), -(-m // blocking.bm))
    if vector and vector_launch(blocking, m, n, k, a, b, transpose_a=transpose_a, transpose_b=transpose_b,
                                strided_b=strided_b):
        kernel = vector_gemm_kernel(blocking, SHARED_PADDING)
    elif exact(blocking, m, n, k):
        kernel = exact_gemm_kernel(blocking, bool(transpose_b), bool(transpose_a), SHARED_PADDING, bool(strided_b))
    else:
        kernel = blocked_gemm_kernel(blocking, bool(transpose_b), bool(strided_b), bool(transpose_a))
    kernel[grid, blocking.threads, stream](a, b, c, accumulate)


#: Version 6 splits K until the grid holds this many warps per SM on average: 28 of the 64 an
#: H100 SM can hold (the kernel issue's target, 3.5 blocks of 8 warps), so that while some warps
#: wait on memory others issue (V. Volkov, "Understanding Latency Hiding on GPUs", 2016). A
#: starting point for the GPU run to time against version 3, not a measured optimum.
SPLIT_WARPS_PER_SM = 28
#: ...but no part of K shorter than this many slabs (each part pays a prologue and an epilogue).
SPLIT_MIN_SLABS = 8


def split_plan(m: int, n: int, k: int, sms: int) -> tuple[Blocking, int]:
    """(blocking, splits) for an (m x n) C over k on a GPU with ``sms`` SMs: ``gpu_blocking``'s
    patch, and K cut into the fewest power-of-two parts whose blocks give ``SPLIT_WARPS_PER_SM``
    warps per SM, each part at least ``SPLIT_MIN_SLABS`` slabs long and its slabs whole (1: no
    split, and wherever the patch does not divide the shape)."""
    for name, value in (("m", m), ("n", n), ("k", k), ("sms", sms)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    blocking = gpu_blocking(m, n, k, sms)
    blocks = -(-m // blocking.bm) * -(-n // blocking.bn)
    splits = 1
    if not vector_fits(blocking, m, n, k):  # version 6 runs exact tiles only
        return blocking, splits
    warps = blocking.threads // 32
    while (blocks * splits * warps < SPLIT_WARPS_PER_SM * sms and k % (2 * splits * blocking.bk) == 0
           and k // (2 * splits) >= SPLIT_MIN_SLABS * blocking.bk):
        splits *= 2
    return blocking, splits


def choose_splits(m: int, n: int, k: int) -> int:
    """The parts of K a recurrent GEMM of (m x n) over k runs in here (``gemm_split``): ``split_plan``'s
    on a GPU, 1 on the simulator (its blocks run one at a time: there is no GPU to fill)."""
    return 1 if DEVICE.small else split_plan(m, n, k, multiprocessors())[1]


def split_fits(blocking: Blocking, m: int, n: int, k: int, splits: int) -> bool:
    """Whether version 6 can run ``blocking`` on (m x n) over k in ``splits`` equal parts of K."""
    return k % splits == 0 and vector_fits(blocking, m, n, k // splits)


def checked_splits(m: int, n: int, k: int, splits=None) -> int:
    """``splits`` parts of K for a GEMM of (m x n) over k, checked: a positive int for which the
    blocking ``gemm_split`` chooses here divides the shape; None: ``choose_splits``'s."""
    if splits is None:
        return choose_splits(m, n, k)
    if isinstance(splits, bool) or not isinstance(splits, numbers.Integral) or splits < 1:
        raise ValueError(f"splits must be a positive int (parts of K), got {splits!r}")
    splits = int(splits)
    if splits > 1 and not split_fits(choose_blocking(m, n, k // splits), m, n, k, splits):
        raise ValueError(f"splits={splits}: no GEMM tile here divides {m} x {n} and K = {k} in {splits} parts")
    return splits


def gemm_split(a, b, parts, *, blocking: Blocking | None = None, stream=0) -> None:
    """Launch version 6: parts[z] = A[:, z-th K part] @ B[z-th K part, :] for z < len(parts), so that
    C = parts.sum(0) (whoever reads C adds them: the fused cell, in one pass). A (M, K), B (K, N)
    as stored, rows contiguous and aligned (``vector.aligned``); parts (splits, M, N), C-contiguous;
    the tile must divide M, N and K / splits (``vector_fits``)."""
    DEVICE.announce()
    if len(parts.shape) != 3:
        raise ValueError(f"parts must be (splits, M, N), got shape {tuple(parts.shape)}")
    splits = parts.shape[0]
    m, n, k = gemm_shape(a, b, parts[0], False)
    blocking = choose_blocking(m, n, k // splits) if blocking is None else blocking
    if splits < 1 or not split_fits(blocking, m, n, k, splits):
        raise ValueError(f"gemm_split: {blocking} does not divide {m} x {n} x {k} in {splits} parts of K")
    width = vector_width(blocking)
    if not (aligned(a, width) and aligned(b, width)):
        raise ValueError(f"gemm_split: A and B need contiguous rows aligned to {4 * width} bytes")
    grid = (n // blocking.bn, m // blocking.bm, splits)
    split_gemm_kernel(blocking, SHARED_PADDING)[grid, blocking.threads, stream](a, b, parts, False)


def tiled_gemm(a, b, c, *, accumulate: bool = False, tile: int | None = None, stream=0) -> None:
    """Launch the textbook tiled kernel: C = A @ B (or C += A @ B)."""
    DEVICE.announce()
    tile = TILE if tile is None else tile
    m, n, _ = gemm_shape(a, b, c, False)
    grid = (-(-n // tile), -(-m // tile))
    tiled_gemm_kernel(tile)[grid, (tile, tile), stream](a, b, c, accumulate)


# --------------------------------------------------------------------------------------------
# The versions' facts (kernels/spec.py): what each reads and writes, its traffic, its compiled rows.


def gemm_traffic(args, grid, block, constants) -> Traffic:
    """Every GEMM kernel: every block loads its rows of A and its columns of op(B) over all of K
    (elements past an edge are zeros, not loads), so A is loaded once per block column of C and
    B once per block row; C is stored once (and loaded once to accumulate). FLOPs: 2 M N K (+ M N
    to accumulate). Split-K (version 6, C of shape (splits, M, N), grid depth splits): each layer
    of blocks loads its part of K, so A and B are loaded as often, and each part of C is stored once."""
    a, b, c, accumulate = args["a"], args["b"], args["c"], bool(args["accumulate"])
    m, k = a.shape
    parts = c.shape[0] if len(c.shape) == 3 else 1
    n = c.shape[len(c.shape) - 1]  # (the simulator's shapes take no negative index)
    blocks_n, blocks_m = grid[0], grid[1]
    loads = {"a": blocks_n * m * k, "b": blocks_m * k * n}
    reads = [view_of(a), view_of(b)]
    if accumulate:
        loads["c"] = parts * m * n
        reads.append(view_of(c))
    flop = 2 * m * n * k + (parts * m * n if accumulate else 0)
    return Traffic(flop, loads, {"c": parts * m * n}, tuple(reads), (view_of(c),), tuple(reads))


#: The signatures the compile matrix builds: any layout; C-contiguous rows (what every step passes
#: at the article's size); split-K's parts.
_ANY = (float32[:, :],) * 3 + (boolean,)
_CONTIGUOUS = (float32[:, ::1],) * 3 + (boolean,)
_SPLIT = (float32[:, ::1], float32[:, ::1], float32[:, :, ::1], boolean)


def _blocked(row: str, blocking: Blocking, make, signature: tuple, what: str = "", timed: bool = True) -> Build:
    tiling = f"{blocking.bm}x{blocking.bn}x{blocking.bk} tile, {blocking.tm}x{blocking.tn} per thread"
    return Build(row, lambda: (make(), signature), tiling + what, blocking, timed)


def _builds(number: int) -> tuple:
    """Version ``number``'s rows in the compile matrix, one per blocking (and layout) it runs."""
    L, S, W, pad = GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING
    rows = {
        1: (Build("tiled_gemm", lambda: (tiled_gemm_kernel(16), _ANY), "16x16 tile"),),
        2: (_blocked("blocked_gemm", L, lambda: blocked_gemm_kernel(L, False), _ANY),
            _blocked("blocked_gemm_t", S, lambda: blocked_gemm_kernel(S, True), _ANY, ", B^T"),
            _blocked("blocked_gemm_t_strided", L, lambda: blocked_gemm_kernel(L, True, True), _ANY, ", B^T strided", False),
            _blocked("blocked_gemm_ta", L, lambda: blocked_gemm_kernel(L, False, False, True), _ANY, ", A^T", False),
            _blocked("blocked_gemm_ta_tb", S, lambda: blocked_gemm_kernel(S, True, False, True), _ANY, ", A^T B^T", False)),
        3: (_blocked("blocked_gemm_exact", L, lambda: exact_gemm_kernel(L, False, False, pad), _CONTIGUOUS, ", exact"),
            _blocked("blocked_gemm_t_exact", S, lambda: exact_gemm_kernel(S, True, False, pad), _CONTIGUOUS, ", B^T, exact"),
            _blocked("blocked_gemm_wide", W, lambda: exact_gemm_kernel(W, False, False, pad), _CONTIGUOUS, ", exact")),
        4: (_blocked("blocked_gemm_prefetch_wide", W, lambda: prefetch_gemm_kernel(W, pad), _CONTIGUOUS, ", exact, prefetch"),
            _blocked("blocked_gemm_prefetch_small", S, lambda: prefetch_gemm_kernel(S, pad), _CONTIGUOUS,
                     ", exact, prefetch")),
        5: (_blocked("blocked_gemm_vector", L, lambda: vector_gemm_kernel(L, pad), _CONTIGUOUS, ", exact, vector"),
            _blocked("blocked_gemm_vector_wide", W, lambda: vector_gemm_kernel(W, pad), _CONTIGUOUS, ", exact, vector"),
            _blocked("blocked_gemm_vector_small", S, lambda: vector_gemm_kernel(S, pad), _CONTIGUOUS, ", exact, vector")),
        6: (_blocked("blocked_gemm_split_small", S, lambda: split_gemm_kernel(S, pad), _SPLIT, ", exact, vector, split-K"),
            _blocked("blocked_gemm_split", L, lambda: split_gemm_kernel(L, pad), _SPLIT, ", exact, vector, split-K"),
            _blocked("blocked_gemm_split_wide", W, lambda: split_gemm_kernel(W, pad), _SPLIT, ", exact, vector, split-K")),
    }
    return rows[number]


#: The backward ladder: every step's pass runs the training forward (its input GEMMs version 5).
_ACCESS = ((0, 1), (2,))  # reads a and b, writes c


def _spec(number: int, name: str, what: str, steps: tuple, variant: str = "") -> Spec:
    return Spec("gemm", number, name, what, steps, _ACCESS, gemm_traffic, functools.partial(_builds, number), variant)


SPECS = (
    _spec(1, "tiled_gemm", "a shared-memory tile, one output per thread (notebook 02)", ()),
    _spec(2, "blocked_gemm", "tm x tn outputs per thread in registers, every edge checked", BACKWARD_STEPS[:3]),
    _spec(3, "blocked_gemm", "2 without the checks, unrolled, where the tile divides the shape",
          ("baseline", "combined_gemms", "streams", "fused_pointwise", "pretransposed", "combined_inputs", "wavefront",
           "persistent") + BACKWARD_STEPS, "exact-tile"),
    _spec(4, "blocked_gemm", "3 with the next slab loaded into registers during this one's FFMAs", (), "prefetch"),
    _spec(5, "blocked_gemm", "4 with 128-bit loads: global float4, shared outputs in runs of 4", (), "vector loads"),
    _spec(6, "blocked_gemm", "5 over one part of K per grid layer, each part's product kept apart", (), "split-K"),
)
