"""GEMM version 1, ``tiled_gemm``: a shared-memory tile, one output per thread (the textbook kernel).

A block of TILE x TILE threads computes a TILE x TILE patch of C. It walks along K in TILE-wide
slabs: every thread loads one element of A and one of B into shared memory, the block
synchronises, and every thread reads a row of the A tile and a column of the B tile from fast
shared memory: TILE times fewer global loads than one thread per output reading straight from
memory. Elements beyond the edge of A, B or C load as zeros and are never stored: odd sizes are
safe. Notebook 02 explains it and exercise ex02 rebuilds it; no step launches it.
"""

from __future__ import annotations

import functools

from numba import cuda, float32

from .tiles import ANY, TILE, cases, spec
from ..spec import Build


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


def case(size: str, rng) -> list:
    """The runner's cases: C = A @ B at every shape of ``size``, the tile ``TILE``."""
    return cases(size, rng, lambda blocking, m, n, k, a, b, transposed, strided:
                 (tiled_gemm_kernel(TILE), (-(-n // TILE), -(-m // TILE)), (TILE, TILE)), exact=False)


SPEC = spec(1, "tiled_gemm", "a shared-memory tile, one output per thread (notebook 02)",
            lambda: (Build("tiled_gemm", lambda: (tiled_gemm_kernel(16), ANY), "16x16 tile"),), colour="tab:olive")
