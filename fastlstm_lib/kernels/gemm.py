"""The GEMM every step uses: C = A @ op(B), or C += A @ op(B), correct at any size.

Two kernels, the second built on the first's idea:

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
safe. Arrays may be strided views (one gate's columns of a stacked matrix, one time step of a
sequence).

``transpose_b``: B is stored (N, K) and read as its transpose, like BLAS's 'T' flag. A warp's
loads of a B tile then walk down a column of that storage, 32 rows apart, instead of along a
row: the layout the pre-transposed step (notebook 06) removes.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from numba import cuda, float32

from .. import _device

#: Tile edge of ``tiled_gemm``: 16 x 16 = 256 threads on a GPU; 4 x 4 on the simulator, where
#: every simulated thread costs ~0.15 ms per launch.
TILE = 4 if _device.SIMULATOR else 16


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


#: On a GPU: 256 threads, 16 outputs each (64 x 64 per block), or a 32 x 32 patch with 4 each
#: when 64 x 64 patches would leave SMs idle (the LSTM's recurrent GEMM is only batch rows tall).
#: On the simulator: 16 threads, 4 outputs each: the same code paths, milliseconds per launch.
LARGE = Blocking(bm=8, bn=8, bk=4, tm=2, tn=2) if _device.SIMULATOR else Blocking(bm=64, bn=64, bk=8, tm=4, tn=4)
SMALL = LARGE if _device.SIMULATOR else Blocking(bm=32, bn=32, bk=8, tm=2, tn=2)


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


@functools.lru_cache(maxsize=None)
def blocked_gemm_kernel(blocking: Blocking, transpose_b: bool):
    """The register-blocked kernel for one blocking and B layout (all compile-time constants)."""
    bm, bn, bk, tm, tn = blocking
    threads = blocking.threads
    threads_n = bn // tn  # threads side by side along N
    threads_m = bm // tm

    @cuda.jit
    def blocked_gemm(a, b, c, accumulate):
        # Both tiles are stored k-major, so the inner loop reads a row of each.
        a_tile = cuda.shared.array((bk, bm), float32)
        b_tile = cuda.shared.array((bk, bn), float32)
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
        m, k_total = a.shape
        n = c.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)
        for k0 in range(0, k_total, bk):
            # Cooperative loads. A is row-major (M, K): consecutive threads take consecutive k.
            for e in range(tid, bm * bk, threads):
                r = e // bk
                kk = e % bk
                in_range = row0 + r < m and k0 + kk < k_total
                a_tile[kk, r] = a[row0 + r, k0 + kk] if in_range else float32(0.0)
            # B: consecutive threads take consecutive n, which is contiguous only if B is (K, N).
            for e in range(tid, bk * bn, threads):
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


def gemm_shape(a, b, c, transpose_b: bool) -> tuple[int, int, int]:
    """(M, N, K) of C = A @ op(B); a ValueError if the shapes don't chain."""
    m, k = a.shape
    k_b, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if k != k_b or c.shape != (m, n):
        stored = f"B {b.shape}" + (" transposed" if transpose_b else "")
        raise ValueError(f"gemm shapes don't chain: A {a.shape} @ {stored} -> C {c.shape}")
    return m, n, k


def choose_blocking(m: int, n: int) -> Blocking:
    """LARGE patches, unless they would give fewer blocks than the GPU has SMs."""
    blocks = -(-m // LARGE.bm) * -(-n // LARGE.bn)
    return SMALL if blocks < multiprocessors() else LARGE


@functools.lru_cache(maxsize=1)
def multiprocessors() -> int:
    return 1 if _device.SIMULATOR else int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def gemm(a, b, c, *, accumulate: bool = False, transpose_b: bool = False, blocking: Blocking | None = None,
         stream=0) -> None:
    """Launch C = A @ op(B) (or C += A @ op(B)) on device arrays.

    A is (M, K); B is (K, N), or (N, K) with ``transpose_b``; C is (M, N).
    """
    m, n, _ = gemm_shape(a, b, c, transpose_b)
    blocking = choose_blocking(m, n) if blocking is None else blocking
    grid = (-(-n // blocking.bn), -(-m // blocking.bm))
    blocked_gemm_kernel(blocking, bool(transpose_b))[grid, blocking.threads, stream](a, b, c, accumulate)


def tiled_gemm(a, b, c, *, accumulate: bool = False, tile: int | None = None, stream=0) -> None:
    """Launch the textbook tiled kernel: C = A @ B (or C += A @ B)."""
    tile = TILE if tile is None else tile
    m, n, _ = gemm_shape(a, b, c, False)
    grid = (-(-n // tile), -(-m // tile))
    tiled_gemm_kernel(tile)[grid, (tile, tile), stream](a, b, c, accumulate)
