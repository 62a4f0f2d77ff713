"""GEMM version 8, ``warptiled_gemm``: version 7 with its threads laid out warp by warp (SGEMM_CUDA's
kernel 10), its next slab loaded a slab earlier and its outputs stored 128 bits at a time.

Read from version 7's machine code, a slab is 77% FFMA with one 128-bit shared load per 8 FFMA, but
the loads are costly in shared-memory wavefronts (the SM serves one a cycle; a warp's LDS.128 returns
512 bytes, 4 wavefronts of 128, halved where every pair of lanes (l, l^1), or every (l, l^2), reads
the same address). Version 7 lays threads out row by row (thread_n = tid % 16): a quarter-warp's
B load reads 8 different 16-byte words and no two neighbouring lanes share one (4 wavefronts), its A
load 1 word (2): 6 wavefronts per warp per k, for 16 FFMA each, 0.375 per FFMA. This version changes three things:

- **A warp tile** (``warp_row``, ``warp_col``: plain functions the kernel and the tests both call):
  a warp is 8 x 4 threads (32 rows by 16 columns of C), the 8 warps 2 x 4 of them over the 64 x 64
  patch, as kernel 10's. A lane's bits alternate between columns and rows (bit 0: column, 1: row,
  2: column, 3 and 4: row), so that lanes l and l^1 read the same word of A and lanes l and l^2
  the same word of B: a quarter-warp reads 2 words of A and 4 of B, in different banks, and each
  load packs into 2 wavefronts: 4 per warp per k, 0.25 per FFMA (kernel 10's plain order, lane % 4
  and lane / 4, shares B words between l and l^4 only, which the packing rule does not count).
  Each thread's 4 x 4 outputs stay runs of neighbours (``owned(..., runs=True)``), but the slab is
  its own (``_slab``): NVVM no longer merges its scalar shared loads into 128-bit ones once thread_m
  and thread_n are bit fields of tid (128 LDS.32 per trip where version 7 has 32 LDS.128), so each
  run is one explicit vector load (``load_vector``).
- **The next slab's loads a slab earlier**: two register sets for it, so a slab's global loads go
  out a whole slab before their store to shared memory, not half of one (one clamp per trip of two
  slabs, no branch). ptxas moves them to mid-slab, and each is stored in the next slab: 139
  instructions from load to use on sm_90 where version 7 has 74 (``load_use_distance``).
- **128-bit epilogue stores**: a thread's 4 neighbouring outputs of a row in one store (``STG.E.128``)
  where that row's address is 16-byte aligned (checked in the kernel, row by row; scalar stores
  where it is not), 4 stores instead of 16.

Compiled (data/kernel_resources.csv): 168 instructions per slab, 128 of them FFMA (76%), on sm_80
and sm_90 as version 7's 167-168; 60 and 62 registers (version 7: 57 and 61), no spills.
Shared-memory wavefronts per FFMA (tests/test_gemm_warptiled.py): version 7 0.375, version 8 0.25.

The contract is version 7's (``recurrent_fits``, the (splits, M, N) parts that the fused cell adds
up, the launch signature), and it takes version 7's place: ``gemm_split`` launches it where it fits
(``warptiled_fits``), version 7 where only that fits, so steps 06-08 under the "fast" policy run it.
"""

from __future__ import annotations

import functools

from numba import cuda, float32, uint32

from ...runtime.device import DEVICE
from ..vector import load_vector
from .pipeline import slab_parts, split_of_k
from .tiles import GPU_LARGE, SHARED_ALIGN, SHARED_PADDING, SHAPES, SPLIT, build, geometry_sms, recurrent_blocking, \
    recurrent_splits, spec, split_k_case, vector_fits, vector_width

#: A warp's threads: WARP_ROWS rows of WARP_COLS (kernel 10's 8 x 4 for a 4 x 4 thread tile).
WARP_ROWS, WARP_COLS = 8, 4


def warp_col(tid, threads_n):
    """Which column of threads (thread_n) thread ``tid`` is, in a block ``threads_n`` threads wide:
    its warp's column of warps, then lane bits 0 and 2. Unsigned integer arithmetic (which NVVM
    follows far enough to prove the slab's shared loads 16-byte aligned, and merges them): the
    kernel compiles it, the tests call it."""
    tid, warps_n = uint32(tid), uint32(threads_n // WARP_COLS)
    lane, warp = tid & uint32(31), tid >> uint32(5)
    return (warp % warps_n) * uint32(WARP_COLS) + (lane & uint32(1)) + ((lane >> uint32(1)) & uint32(2))


def warp_row(tid, threads_n):
    """Which row of threads (thread_m) thread ``tid`` is: its warp's row of warps, then lane bits
    1, 3 and 4 (see ``warp_col``)."""
    tid, warps_n = uint32(tid), uint32(threads_n // WARP_COLS)
    lane, warp = tid & uint32(31), tid >> uint32(5)
    return (warp // warps_n) * uint32(WARP_ROWS) + ((lane >> uint32(1)) & uint32(1)) + ((lane >> uint32(2)) & uint32(6))


def warp_tiled(blocking) -> bool:
    """Whether ``warp_row``/``warp_col`` cover ``blocking``'s threads once each: whole warps of 8 x 4
    threads tiling its thread grid, or (the simulator's 16 threads) one 4 x 4 part-warp."""
    threads_m, threads_n = blocking.bm // blocking.tm, blocking.bn // blocking.tn
    return threads_n % WARP_COLS == 0 and (threads_m % WARP_ROWS == 0 or (threads_m, threads_n) == (4, 4))


_row_of, _col_of = (cuda.jit(device=True, inline="always")(f) for f in (warp_row, warp_col))


@functools.lru_cache(maxsize=None)
def _vector_store(width: int):
    """(aligned(array, row, col), store(array, row, col, values)): whether ``array[row, col]`` lies at
    a multiple of ``4 * width`` bytes, and one ``width``-float store of the tuple ``values`` there
    (on the simulator: plain stores, and the NumPy address)."""
    if not DEVICE.compiled:
        @cuda.jit(device=True)
        def aligned_sim(array, row, col):
            return array[row, col:].__array_interface__["data"][0] % (4 * width) == 0

        @cuda.jit(device=True)
        def store_sim(array, row, col, values):
            for v in range(width):
                array[row, col + v] = values[v]

        return aligned_sim, store_sim

    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    def pointer(context, builder, sig, args):
        array_type, struct = sig.args[0], context.make_array(sig.args[0])(context, builder, value=args[0])
        index = [context.cast(builder, value, kind, types.intp) for value, kind in zip(args[1:3], sig.args[1:3])]
        return cgutils.get_item_pointer(context, builder, array_type, struct, index, wraparound=False)

    def fits(array, row, col):
        return (isinstance(array, types.Array) and array.ndim == 2 and array.dtype == types.float32
                and isinstance(row, types.Integer) and isinstance(col, types.Integer))

    @intrinsic
    def aligned(typingctx, array, row, col):
        def codegen(context, builder, sig, args):
            address = builder.ptrtoint(pointer(context, builder, sig, args), ir.IntType(64))
            low = builder.and_(address, ir.Constant(ir.IntType(64), 4 * width - 1))
            return builder.icmp_unsigned("==", low, ir.Constant(ir.IntType(64), 0))

        return (types.boolean(array, row, col), codegen) if fits(array, row, col) else None

    @intrinsic
    def store(typingctx, array, row, col, values):
        def codegen(context, builder, sig, args):
            vector = ir.Constant(ir.VectorType(ir.FloatType(), width), ir.Undefined)
            for v in range(width):
                value = builder.extract_value(args[3], v)
                vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), v))
            first = pointer(context, builder, sig, args)
            builder.store(vector, builder.bitcast(first, vector.type.as_pointer()), align=4 * width)
            return context.get_dummy_value()

        ok = fits(array, row, col) and values == types.UniTuple(types.float32, width)
        return (types.void(array, row, col, values), codegen) if ok else None

    return aligned, store


@functools.lru_cache(maxsize=None)
def _row_vectors(width: int):
    """(values(acc, i), added(acc, i, old)): row i of ``acc``'s ``width`` outputs as a tuple, and the same
    plus the tuple ``old`` (2 or 4 wide)."""
    if width == 4:
        @cuda.jit(device=True, inline="always")
        def values(acc, i):
            return (acc[i, 0], acc[i, 1], acc[i, 2], acc[i, 3])

        @cuda.jit(device=True, inline="always")
        def added(acc, i, old):
            return (acc[i, 0] + old[0], acc[i, 1] + old[1], acc[i, 2] + old[2], acc[i, 3] + old[3])
    else:
        @cuda.jit(device=True, inline="always")
        def values(acc, i):
            return (acc[i, 0], acc[i, 1])

        @cuda.jit(device=True, inline="always")
        def added(acc, i, old):
            return (acc[i, 0] + old[0], acc[i, 1] + old[1])
    return values, added


@functools.lru_cache(maxsize=None)
def _patch_store(blocking):
    """A device function writing (or adding, ``accumulate``) a thread's tm x tn outputs, runs of
    neighbours as ``owned(..., runs=True)`` places them: one tn-wide store per row where tn is 2 or
    4, the row is contiguous and its address aligned, else tn scalar stores."""
    bm, bn, bk, tm, tn = blocking
    vector = tn in (2, 4)
    aligned, store = _vector_store(tn if vector else 1)
    load = load_vector(tn if vector else 1)
    values, added = _row_vectors(tn if vector else 2)

    @cuda.jit(device=True, inline="always")
    def store_patch(c, acc, row0, col0, thread_m, thread_n, accumulate):
        column = uint32(col0 + thread_n * uint32(tn))
        contiguous = c.strides[1] == 4
        for i in range(tm):
            r = uint32(row0 + thread_m * uint32(tm) + uint32(i))
            if vector and contiguous and aligned(c, r, column):
                if accumulate:
                    store(c, r, column, added(acc, i, load(c, r, column)))
                else:
                    store(c, r, column, values(acc, i))
            else:
                for j in range(tn):
                    if accumulate:
                        c[r, column + uint32(j)] += acc[i, j]
                    else:
                        c[r, column + uint32(j)] = acc[i, j]

    return store_patch


@functools.lru_cache(maxsize=None)
def _slab(blocking, steps: int):
    """A device function doing ``steps`` k's of a slab from ``kk`` (a power of two), unrolled by
    doubling as ``slab.unrolled_slab`` does, for outputs in runs (``owned(..., runs=True)``): per k,
    a thread's tm values of A and tn of B each one vector load (``load_vector``: 128 bits at 4 x 4),
    then tm x tn FFMAs. ``unrolled_slab``'s scalar loads, which NVVM merges into 128-bit ones for
    version 7's layout, stay scalar for this one: it no longer proves them consecutive, as the
    warp tile's thread_m and thread_n are bit fields of tid."""
    bm, bn, bk, tm, tn = blocking
    load_a, load_b = load_vector(tm), load_vector(tn)

    @cuda.jit(device=True, inline="always")
    def one_k(a_tile, b_tile, kk, thread_m, thread_n, acc):
        a_reg = load_a(a_tile, kk, uint32(thread_m * uint32(tm)))
        b_reg = load_b(b_tile, kk, uint32(thread_n * uint32(tn)))
        for i in range(tm):
            for j in range(tn):
                acc[i, j] += a_reg[i] * b_reg[j]

    def doubled(step, stride):
        @cuda.jit(device=True, inline="always")
        def twice(a_tile, b_tile, kk, thread_m, thread_n, acc):
            step(a_tile, b_tile, kk, thread_m, thread_n, acc)
            step(a_tile, b_tile, kk + stride, thread_m, thread_n, acc)

        return twice

    slab, done = one_k, 1
    while done < steps:
        slab, done = doubled(slab, done), done * 2
    return slab


@functools.lru_cache(maxsize=None)
def warptiled_gemm_kernel(blocking, padding: int):
    """The kernel for one blocking (``warp_tiled``): as version 7's, block z of the grid's depth
    computes the z-th of gridDim.z equal parts of K into C[z] (C is (splits, M, N)); each part an
    even number of slabs."""
    bm, bn, bk, tm, tn = blocking
    if not warp_tiled(blocking):
        raise ValueError(f"warptiled_gemm: {blocking} is no whole number of {WARP_ROWS} x {WARP_COLS} warps of threads")
    threads_n = bn // tn
    load_slab, store_slab, _, _, a_count, b_count = slab_parts(blocking, vector_width(blocking), False)
    half = _slab(blocking, bk // 2)  # bk / 2 k's of one buffer
    store_patch = _patch_store(blocking)
    a_shape = (2, bk, bm + padding)
    b_shape = (2, bk, bn + padding)

    @cuda.jit
    def warptiled_gemm(a, b, c, accumulate):
        a_tile = cuda.shared.array(a_shape, float32, alignment=SHARED_ALIGN)
        b_tile = cuda.shared.array(b_shape, float32, alignment=SHARED_ALIGN)
        acc = cuda.local.array((tm, tn), float32)
        a_even = cuda.local.array(a_count, float32)  # slab 2t + 2 on its way from memory...
        b_even = cuda.local.array(b_count, float32)
        a_odd = cuda.local.array(a_count, float32)  # ... and slab 2t + 1
        b_odd = cuda.local.array(b_count, float32)
        tid = uint32(cuda.threadIdx.x)
        thread_m = uint32(_row_of(tid, threads_n))
        thread_n = uint32(_col_of(tid, threads_n))
        row0 = uint32(cuda.blockIdx.y * bm)
        col0 = uint32(cuda.blockIdx.x * bn)
        k_begin, k_length, out = split_of_k(a, c)
        k_last = k_begin + k_length - uint32(bk)
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        # Slab 0 into buffer 0; slab 1 into the odd registers, stored half-way through slab 0.
        load_slab(a, b, k_begin, row0, col0, tid, a_even, b_even)
        store_slab(a_tile[0], b_tile[0], tid, a_even, b_even)
        load_slab(a, b, k_begin + uint32(bk), row0, col0, tid, a_odd, b_odd)
        cuda.syncthreads()
        for k0 in range(k_begin, k_begin + k_length, 2 * bk):
            # Slab k0 is in buffer 0, slab k0 + bk in the odd registers; slab k0 + 2 bk's loads go
            # out now, into the even registers, and reach shared memory half-way through the next slab.
            # (The last trip loads its last two slabs again, so one clamp serves both loads: no branch.)
            k_next = min(k0 + uint32(2 * bk), k_last - uint32(bk))
            load_slab(a, b, k_next, row0, col0, tid, a_even, b_even)
            half(a_tile[0], b_tile[0], 0, thread_m, thread_n, acc)
            store_slab(a_tile[1], b_tile[1], tid, a_odd, b_odd)  # nobody reads buffer 1 until the barrier
            half(a_tile[0], b_tile[0], bk // 2, thread_m, thread_n, acc)
            cuda.syncthreads()
            # The same a slab on.
            load_slab(a, b, k_next + uint32(bk), row0, col0, tid, a_odd, b_odd)
            half(a_tile[1], b_tile[1], 0, thread_m, thread_n, acc)
            store_slab(a_tile[0], b_tile[0], tid, a_even, b_even)
            half(a_tile[1], b_tile[1], bk // 2, thread_m, thread_n, acc)
            cuda.syncthreads()
        store_patch(out, acc, row0, col0, thread_m, thread_n, accumulate)

    return warptiled_gemm


def warptiled_fits(blocking, m: int, n: int, k: int, splits: int) -> bool:
    """Whether version 8 runs ``blocking`` on (m x n) over k in ``splits`` parts: version 7's
    condition (``vector_fits``, each part an even number of slabs) and whole warps (``warp_tiled``)."""
    return (warp_tiled(blocking) and k % (2 * splits * blocking.bk) == 0
            and vector_fits(blocking, m, n, k // splits))


def launch(a, b, parts, blocking=None, stream=0) -> None:
    """parts[z] = A[:, z-th part of K] @ B[z-th part, :], as ``gemm_split`` launches it (A and B
    rows aligned for ``vector_width``'s loads: the caller's check)."""
    blocking = recurrent_blocking() if blocking is None else blocking
    splits, m, n = parts.shape
    k = a.shape[1]
    if not warptiled_fits(blocking, m, n, k, splits):
        raise ValueError(f"warptiled_gemm: {blocking} does not divide {m} x {n} x {k} in {splits} parts")
    grid = (n // blocking.bn, m // blocking.bm, splits)
    warptiled_gemm_kernel(blocking, SHARED_PADDING)[grid, blocking.threads, stream](a, b, parts, False)


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size``, in version 7's parts (2 at least; 2 on the
    simulator), launched as ``launch`` does; each part checked on its own against float64."""
    blocking, sms = recurrent_blocking(), geometry_sms()
    return [split_k_case(m, n, k, rng, blocking, max(2, 2 if sms is None else recurrent_splits(m, n, k, sms)),
                         lambda a, b, parts: launch(a, b, parts, blocking)) for m, n, k in SHAPES[size]]


SPEC = spec(8, "warptiled_gemm", "7 with warp tiles whose lanes share shared-memory words (4 wavefronts per "
            "warp per k, not 6), the next slab loaded a slab earlier, 128-bit epilogue stores",
            lambda: (build("warptiled_gemm", GPU_LARGE, lambda: warptiled_gemm_kernel(GPU_LARGE, SHARED_PADDING),
                           SPLIT, ", exact, runs, warp tiles, double-buffered, split-K"),))
