"""GEMM version 9, ``tf32_gemm``: version 7's recurrent GEMM with the product on tensor cores, each
warp's 32 x 32 block of C from ``mma.sync.m16n8k8`` with TF32 inputs (``kernels/mma``), not FFMAs.

A tensor core multiplies a 16 x 8 x 8 tile in one warp-wide instruction (``HMMA.1688.F32.TF32``):
128 multiply-adds per lane where an FFMA is one. What changes from version 7:

- **Warps of mma tiles**: 4 warps of 32 x 32 outputs over the 64 x 64 patch (2 x 2 warps), each
  warp 2 x 4 tiles of 16 x 8, so 8 ``mma`` per k-step of 8: per lane 4 rows (group, group + 8 of
  each tile row) by 8 columns (2 tig, 2 tig + 1 of each tile column): ``Blocking`` tm = 4, tn = 8,
  128 threads. Per k-step a lane loads its fragments, 4 of A per tile row and 2 of B per tile
  column (16 shared loads for 8 ``mma``), in the PTX ISA's layout (``mma.layout``: group = lane
  >> 2, tig = lane % 4).
- **Inputs rounded to TF32 once**, by ``to_tf32`` (``cvt.rna``) as each slab is stored to shared
  memory, never in the k loop: every fragment is read from shared memory already rounded.
- **Shared tiles laid out for the fragments, padded so that a warp's fragment loads hit 32 banks**
  (a word's bank is its index mod 32). A's tile is row-major (``a_tile[m, k]``, as the mma reads A;
  versions 3-8 store it k-major), ``bk + 4`` words a row: lane (group, tig) reads word
  group x (bk + 4) + tig, and (bk + 4) / 4 odd puts the 8 groups' rows 4 banks apart (mod 32:
  0, 4, ..., 28 in some order) with the 4 tigs filling each 4: 32 banks. (Versions 3-8's k-major
  tile would need a leading dimension of 8 mod 32 for the same loads, and then their transposing
  stores fall 4 to a bank.) B's tile is k-major as versions 3-8 write it (``b_tile[k, n]``),
  ``bn + 8`` words a row: lane (group, tig) reads word tig x (bn + 8) + group, and (bn + 8) / 8 odd
  puts the 4 tigs' rows 8 banks apart with the 8 groups filling each 8: 32 banks. The stores are
  conflict-free as well: a quarter-warp stores 8 neighbouring 16-byte words of one row (one row of
  A's 64 x 32 slab is 8 of them, one of B's 32 x 64 slab 16), in 32 different banks.
- **A 32-deep slab** (bk = 32: 4 k-steps, 32 ``mma`` per warp between barriers; versions 7-8 take
  8), two slabs per trip as version 7's double buffer, the next slab stored half-way through this
  one. Its loads are 128-bit (``load_vector``): A's and B's rows aligned to 16 bytes (``launch``
  checks).

Split-K and the launch contract are version 7's: block z of the grid's depth computes the z-th of
gridDim.z equal parts of K into C[z] (C is (splits, M, N), added up by the fused cell), each part an
even number of slabs (``tf32_fits``), so that it can take version 7's place in a policy; nothing
launches it yet but the runner and the tests. It runs only on compute capability 8.0 and newer
(``launch`` refuses older GPUs, naming theirs; the compile matrix builds it for sm_80 and newer).

Accuracy (``numerics.TOLERANCES["tf32"]``, 2e-3): equal to float64 of the TF32-rounded inputs within
float32 accumulation, and to float64 of the inputs within TF32's rounding (3e-4 to 6e-4 relative at
standard-normal operands; tests/test_gemm_tf32.py). Compiled (data/kernel_resources.csv, sm_80,
sm_89 and sm_90): the main loop (a trip of two slabs) is 538-541 instructions, 64 of them
``HMMA.1688.F32.TF32`` and no FFMA (``loop_hmma``, ``loop_ffma``), 128 fragment loads (LDS), 16
128-bit global loads, 16 128-bit shared stores, and about 250 integer instructions: the TF32
rounding (an FSETP, an add and a LOP3 per value stored) and 64-bit addresses of the next slab's
loads, which a later version can take out of the loop; 94 (sm_89) to 102 registers, no spills.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, uint32

from ...numerics import TOLERANCES
from ..case import Unavailable
from ..mma import MIN_COMPUTE_CAPABILITY, mma_tf32_m16n8k8, require_tf32, round_tf32, to_tf32
from ..vector import aligned, load_vector
from .pipeline import split_of_k
from .tiles import SHARED_ALIGN, SPLIT, Blocking, build, geometry_sms, spec, split_k_cases

#: The tolerance of every check of this version against float64 (``numerics``: why 2e-3).
RTOL = TOLERANCES["tf32"]
#: One warp's block of C (32 x 32) in mma tiles of 16 x 8: 2 tile rows of 4 tiles.
WARP_M, WARP_N = 32, 32
TILES_M, TILES_N = 2, 4
MMA_M, MMA_N, MMA_K = 16, 8, 8
#: Extra words per row of A's (row-major) and B's (k-major) shared tiles: see the module docstring.
A_PADDING, B_PADDING = 4, 8
#: Floats per global load: 128 bits.
WIDTH = 4

#: On a GPU: 4 warps of 32 x 32 over a 64 x 64 patch, slabs of 32. On the simulator: one warp, a
#: 32 x 32 patch, slabs of 16 (2 k-steps): the same code paths, every lane a Python thread.
TF32_GPU = Blocking(bm=64, bn=64, bk=32, tm=4, tn=8)
TF32_SIMULATOR = Blocking(bm=32, bn=32, bk=16, tm=4, tn=8)


def tf32_blocking() -> Blocking:
    """The blocking this version runs here: ``TF32_GPU`` on a GPU (or laid out as one, a dry run),
    else ``TF32_SIMULATOR``."""
    return TF32_SIMULATOR if geometry_sms() is None else TF32_GPU


def tf32_tiled(blocking) -> bool:
    """Whether ``blocking`` is whole warps of 32 x 32 outputs (tm x tn = 4 x 8 a lane), its slab
    an even number of k-steps of 8, its tiles' rows whole 128-bit words, and its paddings keep
    fragment loads conflict-free: (bk + 4) / 4 and (bn + 8) / 8 odd."""
    bm, bn, bk, tm, tn = blocking
    return (bm % WARP_M == 0 and bn % WARP_N == 0 and (tm, tn) == (4, 8) and bk % (2 * MMA_K) == 0
            and ((bk + A_PADDING) // 4) % 2 == 1 and ((bn + B_PADDING) // 8) % 2 == 1
            and (bm * bk) % (WIDTH * blocking.threads) == 0 and (bk * bn) % (WIDTH * blocking.threads) == 0)


@functools.lru_cache(maxsize=None)
def _steps(blocking, first: int, count: int):
    """A device function doing ``count`` k-steps of 8 from ``first`` of one buffer: per step, this
    lane's fragments of its warp's 2 tile rows of A and 4 tile columns of B from the shared tiles,
    then the warp's 8 ``mma`` into the accumulators (every shared index a compile-time offset)."""

    @cuda.jit(device=True, inline="always")
    def one_step(a_tile, b_tile, kk, warp_m, warp_n, group, tig, acc, a_frag, b_frag):
        for i in range(TILES_M):
            r = warp_m + uint32(MMA_M * i) + group
            a_frag[i, 0] = a_tile[r, kk + tig]
            a_frag[i, 1] = a_tile[r + uint32(8), kk + tig]
            a_frag[i, 2] = a_tile[r, kk + tig + uint32(4)]
            a_frag[i, 3] = a_tile[r + uint32(8), kk + tig + uint32(4)]
        for j in range(TILES_N):
            col = warp_n + uint32(MMA_N * j) + group
            b_frag[j, 0] = b_tile[kk + tig, col]
            b_frag[j, 1] = b_tile[kk + tig + uint32(4), col]
        for i in range(TILES_M):
            for j in range(TILES_N):
                acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3] = mma_tf32_m16n8k8(
                    a_frag[i, 0], a_frag[i, 1], a_frag[i, 2], a_frag[i, 3], b_frag[j, 0], b_frag[j, 1],
                    acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3])

    steps = one_step
    if count == 2:
        @cuda.jit(device=True, inline="always")
        def two_steps(a_tile, b_tile, kk, warp_m, warp_n, group, tig, acc, a_frag, b_frag):
            one_step(a_tile, b_tile, kk, warp_m, warp_n, group, tig, acc, a_frag, b_frag)
            one_step(a_tile, b_tile, kk + uint32(MMA_K), warp_m, warp_n, group, tig, acc, a_frag, b_frag)

        steps = two_steps
    elif count != 1:
        raise ValueError(f"tf32_gemm: {count} k-steps per half slab, not 1 or 2 (bk 16 or 32)")

    @cuda.jit(device=True, inline="always")
    def run(a_tile, b_tile, warp_m, warp_n, group, tig, acc, a_frag, b_frag):
        steps(a_tile, b_tile, uint32(first), warp_m, warp_n, group, tig, acc, a_frag, b_frag)

    return run


@functools.lru_cache(maxsize=None)
def _slab_copy(blocking):
    """(load_slab, store_slab, a_count, b_count): a slab of A (bm x bk) and B (bk x bn) from global
    memory into registers, 128 bits per load (consecutive lanes on consecutive words of a row), and
    from there into the shared tiles, each value rounded to TF32 on the way (``to_tf32``)."""
    bm, bn, bk, tm, tn = blocking
    threads = blocking.threads
    a_row, b_row = bk // WIDTH, bn // WIDTH  # 128-bit words per row of A's slab, of B's
    a_reps, b_reps = bm * bk // WIDTH // threads, bk * bn // WIDTH // threads
    load = load_vector(WIDTH)

    @cuda.jit(device=True, inline="always")
    def load_slab(a, b, k0, row0, col0, tid, a_next, b_next):
        for rep in range(a_reps):
            e = tid + uint32(rep * threads)
            values = load(a, row0 + e // uint32(a_row), k0 + (e % uint32(a_row)) * uint32(WIDTH))
            for v in range(WIDTH):
                a_next[rep * WIDTH + v] = values[v]
        for rep in range(b_reps):
            e = tid + uint32(rep * threads)
            values = load(b, k0 + e // uint32(b_row), col0 + (e % uint32(b_row)) * uint32(WIDTH))
            for v in range(WIDTH):
                b_next[rep * WIDTH + v] = values[v]

    @cuda.jit(device=True, inline="always")
    def store_slab(a_tile, b_tile, tid, a_next, b_next):
        for rep in range(a_reps):  # row-major, as the mma reads A
            e = tid + uint32(rep * threads)
            row, col = e // uint32(a_row), (e % uint32(a_row)) * uint32(WIDTH)
            for v in range(WIDTH):
                a_tile[row, col + uint32(v)] = to_tf32(a_next[rep * WIDTH + v])
        for rep in range(b_reps):
            e = tid + uint32(rep * threads)
            row, col = e // uint32(b_row), (e % uint32(b_row)) * uint32(WIDTH)
            for v in range(WIDTH):
                b_tile[row, col + uint32(v)] = to_tf32(b_next[rep * WIDTH + v])

    return load_slab, store_slab, a_reps * WIDTH, b_reps * WIDTH


@functools.lru_cache(maxsize=None)
def tf32_gemm_kernel(blocking):
    """The kernel for one blocking (``tf32_tiled``): block z of the grid's depth computes the z-th of
    gridDim.z equal parts of K into C[z] (C is (splits, M, N)); each part an even number of slabs."""
    if not tf32_tiled(blocking):
        raise ValueError(f"tf32_gemm: {blocking} is no whole number of warps of 32 x 32 outputs (tm x tn 4 x 8) "
                         f"with slabs of whole k-steps and conflict-free paddings")
    bm, bn, bk, tm, tn = blocking
    warps_n = bn // WARP_N
    load_slab, store_slab, a_count, b_count = _slab_copy(blocking)
    half = bk // MMA_K // 2  # k-steps in half a slab
    first_half, second_half = _steps(blocking, 0, half), _steps(blocking, half * MMA_K, half)
    a_shape = (2, bm, bk + A_PADDING)
    b_shape = (2, bk, bn + B_PADDING)

    @cuda.jit(device=True, inline="always")
    def put(c, row, col, value, accumulate):
        if accumulate:
            c[row, col] += value
        else:
            c[row, col] = value

    @cuda.jit
    def tf32_gemm(a, b, c, accumulate):
        a_tile = cuda.shared.array(a_shape, float32, alignment=SHARED_ALIGN)
        b_tile = cuda.shared.array(b_shape, float32, alignment=SHARED_ALIGN)
        acc = cuda.local.array((TILES_M, TILES_N, 4), float32)
        a_frag = cuda.local.array((TILES_M, 4), float32)
        b_frag = cuda.local.array((TILES_N, 2), float32)
        a_next = cuda.local.array(a_count, float32)  # the next slab, on its way from memory
        b_next = cuda.local.array(b_count, float32)
        tid = uint32(cuda.threadIdx.x)
        warp, lane = tid >> uint32(5), tid & uint32(31)
        warp_m = (warp // uint32(warps_n)) * uint32(WARP_M)
        warp_n = (warp % uint32(warps_n)) * uint32(WARP_N)
        group, tig = lane >> uint32(2), lane & uint32(3)
        row0 = uint32(cuda.blockIdx.y * bm)
        col0 = uint32(cuda.blockIdx.x * bn)
        k_begin, k_length, out = split_of_k(a, c)
        k_last = k_begin + k_length - uint32(bk)
        for i in range(TILES_M):
            for j in range(TILES_N):
                for r in range(4):
                    acc[i, j, r] = float32(0.0)
        load_slab(a, b, k_begin, row0, col0, tid, a_next, b_next)
        store_slab(a_tile[0], b_tile[0], tid, a_next, b_next)
        cuda.syncthreads()
        for k0 in range(k_begin, k_begin + k_length, 2 * bk):
            # This slab is in buffer 0; the next one's loads go out now, and land in buffer 1 half-way.
            load_slab(a, b, k0 + uint32(bk), row0, col0, tid, a_next, b_next)
            first_half(a_tile[0], b_tile[0], warp_m, warp_n, group, tig, acc, a_frag, b_frag)
            store_slab(a_tile[1], b_tile[1], tid, a_next, b_next)  # nobody reads buffer 1 until the barrier
            second_half(a_tile[0], b_tile[0], warp_m, warp_n, group, tig, acc, a_frag, b_frag)
            cuda.syncthreads()
            # The same from buffer 1 into buffer 0 (the last trip loads its last slab again: no branch).
            load_slab(a, b, min(k0 + uint32(2 * bk), k_last), row0, col0, tid, a_next, b_next)
            first_half(a_tile[1], b_tile[1], warp_m, warp_n, group, tig, acc, a_frag, b_frag)
            store_slab(a_tile[0], b_tile[0], tid, a_next, b_next)
            second_half(a_tile[1], b_tile[1], warp_m, warp_n, group, tig, acc, a_frag, b_frag)
            cuda.syncthreads()
        # Lane (group, tig) holds rows group and group + 8, columns 2 tig and 2 tig + 1 of each tile.
        for i in range(TILES_M):
            row = row0 + warp_m + uint32(MMA_M * i) + group
            for j in range(TILES_N):
                col = col0 + warp_n + uint32(MMA_N * j) + uint32(2) * tig
                put(out, row, col, acc[i, j, 0], accumulate)
                put(out, row, col + uint32(1), acc[i, j, 1], accumulate)
                put(out, row + uint32(8), col, acc[i, j, 2], accumulate)
                put(out, row + uint32(8), col + uint32(1), acc[i, j, 3], accumulate)

    return tf32_gemm


def tf32_fits(blocking, m: int, n: int, k: int, splits: int) -> bool:
    """Whether version 9 runs ``blocking`` on (m x n) over k in ``splits`` parts: its patch divides
    M and N, and each part of K is an even number of slabs (version 7's contract, ``recurrent_fits``)."""
    return (tf32_tiled(blocking) and splits >= 1 and m % blocking.bm == 0 and n % blocking.bn == 0
            and k % (2 * splits * blocking.bk) == 0)


#: Version 9 cuts K until the grid holds this many warps per SM on average (version 7's 8, its
#: ``RECURRENT_WARPS_PER_SM``: here 2 blocks of 4 warps).
WARPS_PER_SM = 8


def tf32_splits(m: int, n: int, k: int, sms: int) -> int:
    """Parts of K in which version 9 runs an (m x n) C over k on a GPU with ``sms`` SMs, as version
    7's ``recurrent_splits`` chooses its own: the fewest (a power of two) that give every SM a block
    of ``TF32_GPU`` and ``WARPS_PER_SM`` warps, each part an even number of slabs; 0 where the patch
    does not divide the shape or K cannot be cut so."""
    b = TF32_GPU
    if not tf32_fits(b, m, n, k, 1):
        return 0
    blocks, warps, splits = (m // b.bm) * (n // b.bn), b.threads // 32, 1
    while (blocks * splits < sms or blocks * splits * warps < WARPS_PER_SM * sms) and k % (4 * splits * b.bk) == 0:
        splits *= 2
    return splits


def launch(a, b, parts, blocking=None, stream=0) -> None:
    """parts[z] = A[:, z-th part of K] @ B[z-th part, :] for z < len(parts), so that C = parts.sum(0),
    on tensor cores (inputs rounded to TF32), as ``gemm_split`` launches version 7: A (M, K) and B
    (K, N) as stored, rows contiguous and 16-byte aligned; parts (splits, M, N), C-contiguous; the
    patch must divide M and N, and each part of K be an even number of slabs (``tf32_fits``). A
    RuntimeError on a GPU older than compute capability 8.0 (``mma.require_tf32``)."""
    blocking = tf32_blocking() if blocking is None else blocking
    if len(parts.shape) != 3:
        raise ValueError(f"parts must be (splits, M, N), got shape {tuple(parts.shape)}")
    splits, m, n = parts.shape
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[0] != m or b.shape != (a.shape[1], n):
        raise ValueError(f"tf32_gemm: shapes don't chain: A {tuple(a.shape)} @ B {tuple(b.shape)} -> parts "
                         f"{tuple(parts.shape)}")
    k = a.shape[1]
    if not tf32_fits(blocking, m, n, k, splits):
        raise ValueError(f"tf32_gemm: {blocking} does not divide {m} x {n} x {k} in {splits} parts of K")
    if not (aligned(a, WIDTH) and aligned(b, WIDTH)):
        raise ValueError(f"tf32_gemm: A and B need contiguous rows aligned to {4 * WIDTH} bytes")
    require_tf32("tf32_gemm")
    grid = (n // blocking.bn, m // blocking.bm, splits)
    tf32_gemm_kernel(blocking)[grid, blocking.threads, stream](a, b, parts, False)


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` rounded up to whole patches and parts of K, in
    ``tf32_splits``' parts on a GPU (2 at least), 3 on the simulator (an odd number of parts of 2
    slabs, over the odd shape's one patch), launched as ``launch`` does; each part checked on its
    own against float64 of the unrounded inputs, within the TF32 tolerance. ``Unavailable`` (the
    runner skips it, saying why) on a GPU older than compute capability 8.0."""
    try:
        require_tf32("tf32_gemm")
    except RuntimeError as error:
        raise Unavailable(str(error)) from None
    return split_k_cases(size, rng, tf32_blocking(), tf32_splits, launch, simulator_splits=3, rtol=RTOL)


def rounded_product(a, b):
    """The float64 product of ``a`` and ``b`` (float32 arrays) rounded to TF32 as this version rounds
    them: what it computes, but for float32 accumulation."""
    return round_tf32(np.ascontiguousarray(a)).astype(np.float64) @ round_tf32(np.ascontiguousarray(b))


SPEC = spec(9, "tf32_gemm", "7 on tensor cores: each warp's 32 x 32 block from 8 TF32 mma.sync m16n8k8 per k-step, "
            "inputs rounded to TF32 as stored to padded shared tiles, split-K; compute capability 8.0+",
            lambda: (build("tf32_gemm", TF32_GPU, lambda: tf32_gemm_kernel(TF32_GPU), SPLIT,
                           f", exact, 4 warps of 2 x 4 mma tiles, TF32, double-buffered, split-K; sm_"
                           f"{MIN_COMPUTE_CAPABILITY[0]}{MIN_COMPUTE_CAPABILITY[1]}+ (TF32 mma.sync)",
                           timed=False)._replace(min_cc=MIN_COMPUTE_CAPABILITY),), peak="tf32")
