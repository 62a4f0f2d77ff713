"""GEMM version 4, ``prefetch_gemm``: version 3 with the next slab of K loaded into registers while
the block computes this one (register double buffering, as in SGEMM_CUDA's later kernels), so a
slab's global loads are in flight during its FFMAs instead of before them.

A and B as stored, exact tiles only. No step launches it: it is the step between 3 and 5, timed on
its own by ``python -m fastlstm_lib.kernels gemm`` and the GPU run. Its kernel is
``pipeline.double_buffered`` with width-1 loads and strided outputs; versions 5 and 6 are the same
kernel with other parts.
"""

from __future__ import annotations

import functools

from .pipeline import double_buffered, slab_parts
from .tiles import CONTIGUOUS, GPU_SMALL, GPU_WIDE, SHARED_PADDING, build, cases, spec


@functools.lru_cache(maxsize=None)
def prefetch_gemm_kernel(blocking, padding: int):
    """Version 3 (exact tile, A (M, K) and B (K, N) as stored) with the next slab of K loaded into
    registers while the block computes this one; launch it only where ``divides`` says so."""
    return double_buffered("prefetch_gemm", blocking, padding, None, slab_parts(blocking, 1, False))


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` rounded up to the tile."""
    return cases(size, rng, lambda blocking, m, n, k, a, b, transposed, strided: (
        prefetch_gemm_kernel(blocking, SHARED_PADDING), (-(-n // blocking.bn), -(-m // blocking.bm)),
        blocking.threads), exact=True)


def _v4_rows() -> tuple:
    """Version 4's rows in the compile matrix, one per blocking (and layout) it runs."""
    S, W, pad = GPU_SMALL, GPU_WIDE, SHARED_PADDING
    return (build("prefetch_gemm_wide", W, lambda: prefetch_gemm_kernel(W, pad), CONTIGUOUS, ", exact, prefetch"),
            build("prefetch_gemm_small", S, lambda: prefetch_gemm_kernel(S, pad), CONTIGUOUS, ", exact, prefetch"))


SPEC = spec(4, "prefetch_gemm", "3 with the next slab loaded into registers during this one's FFMAs", _v4_rows)
