"""A tiled shared-memory GEMM, correct at any size: C = A @ B, or C += A @ B.

Each block computes a TILE x TILE patch of C. It walks along K in TILE-wide slabs: every thread
loads one element of A and one of B into shared memory, the block synchronises, and every
thread then reads a row of the A tile and a column of the B tile from fast shared memory instead
of global memory, TILE times fewer global loads than the naive kernel. Elements beyond the edge
of A, B or C are loaded as zeros and never stored, which is what makes odd sizes safe.

Arrays may be strided views (for example one gate's columns of a stacked weight matrix).
"""

from __future__ import annotations

import functools

from numba import cuda, float32

from .. import _device

#: Tile edge used by ``gemm``. 16 x 16 = 256 threads per block on a GPU; on the simulator
#: 4 x 4 = 16 threads, so a launch costs milliseconds, not seconds.
TILE = 4 if _device.SIMULATOR else 16


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


def gemm(a, b, c, *, accumulate: bool = False, tile: int | None = None, stream=0) -> None:
    """Launch C = A @ B (or C += A @ B) on device arrays: A (M, K), B (K, N), C (M, N)."""
    tile = TILE if tile is None else tile
    m, k = a.shape
    k_b, n = b.shape
    if k != k_b or c.shape != (m, n):
        raise ValueError(f"gemm shapes don't chain: A {a.shape} @ B {b.shape} -> C {c.shape}")
    grid = ((n + tile - 1) // tile, (m + tile - 1) // tile)
    tiled_gemm_kernel(tile)[grid, (tile, tile), stream](a, b, c, accumulate)
