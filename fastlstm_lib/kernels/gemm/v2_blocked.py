"""GEMM version 2, ``blocked_gemm``: register-blocked, tm x tn outputs per thread, every edge checked.

Version 1's shared-memory tiles, but each thread computes TM x TN outputs held in registers. Per k it loads TM values of A and TN of B from
shared memory and does TM*TN multiply-adds, so shared-memory traffic per FLOP drops by a factor
~TM*TN/(TM+TN) and the FLOPs, not the loads, set the pace (siboehm's SGEMM_CUDA kernel 5, with
the thread's outputs strided across the tile so that a warp reads consecutive shared-memory
words and stores consecutive columns of C).

It loads elements beyond the edge of A, B or C as zeros and never stores them: odd sizes are
safe. Where the tile divides M, N and K, ``gemm()`` launches version 3 (``exact_gemm``) instead:
the same threads and tiles, without the checks, its loops unrolled. Arrays may be strided views (one gate's columns of a stacked matrix, one time step of
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

``gemm()`` launches it where the tile does not divide the shape: every GEMM of every step (02-09,
bwd01-05) at the course's odd sizes; at the article's size only the bias gradient's one-row GEMM
(bwd01-03).
"""

from __future__ import annotations

import functools

from numba import cuda, float32

from .tiles import ANY, GPU_LARGE, GPU_SMALL, B_LAYOUTS, SHARED_PADDING, Blocking, build, cases, spec


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


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` with B as stored, and on the first shape B in
    each of ``B_LAYOUTS`` (notebook 06)."""
    return cases(size, rng, lambda blocking, m, n, k, a, b, transposed, strided: (
        blocked_gemm_kernel(blocking, transposed, strided), (-(-n // blocking.bn), -(-m // blocking.bm)),
        blocking.threads), exact=False, layouts=B_LAYOUTS)


def _v2_rows() -> tuple:
    """Version 2's rows in the compile matrix, one per blocking (and layout) it runs."""
    L, S = GPU_LARGE, GPU_SMALL
    return (build("blocked_gemm", L, lambda: blocked_gemm_kernel(L, False), ANY),
            build("blocked_gemm_t", S, lambda: blocked_gemm_kernel(S, True), ANY, ", B^T"),
            build("blocked_gemm_t_strided", L, lambda: blocked_gemm_kernel(L, True, True), ANY, ", B^T strided", False),
            build("blocked_gemm_ta", L, lambda: blocked_gemm_kernel(L, False, False, True), ANY, ", A^T", False),
            build("blocked_gemm_ta_tb", S, lambda: blocked_gemm_kernel(S, True, False, True), ANY, ", A^T B^T", False))


SPEC = spec(2, "blocked_gemm", "tm x tn outputs per thread in registers, every edge checked", _v2_rows)
