"""GEMM version 5, ``vector_gemm``: version 4 with 128-bit loads, global and shared.

Each thread loads its share of a slab as one float4 of A and one of B (``kernels/vector.py``), and
its outputs lie in runs of tm / 2 neighbours, so the slab reads them from shared memory 4 floats
per load: 4 loads per 64 FFMA instead of 16 (SGEMM_CUDA's kernels 6 and 10). ``gemm(...,
vector=True)`` launches it where ``vector_launch`` allows: exact tiles of 64 x 64 or 128 x 128, A
and B without a 'T' flag, rows contiguous and aligned; the ladder's "fast" policy asks for it
(steps 06-09, whose weights are stored as read; at the article's size on an H100 their input
GEMMs, on an M40 every GEMM). Versions 3, 4 and 5 add each output's products in the same order:
the same result to the bit.

Versions 2-4 give a thread the rows thread_m + i * (bm / tm): a warp's
reads of one k are neighbouring words, but each of a thread's tm values is a separate 32-bit load.
This version gives it rows thread_m * tm/2 + i and bm/2 + thread_m * tm/2 + i (i < tm/2), columns
likewise: two runs of 4 neighbours in the 128 x 128 patch. A run is one 128-bit load; a quarter-warp's
eight loads read 8 consecutive 16-byte words (or the same one), so no bank conflict; and the
shared tiles are aligned to 16 bytes, their rows 132 floats (528 bytes) apart, so every run starts
on a 16-byte boundary, which is what lets NVVM merge the four loads into one.
"""

from __future__ import annotations

import functools

from ..vector import aligned
from .pipeline import double_buffered, slab_parts
from .tiles import CONTIGUOUS, GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_ALIGN, SHARED_PADDING, build, cases, spec, \
    vector_fits, vector_width


@functools.lru_cache(maxsize=None)
def vector_gemm_kernel(blocking, padding: int):
    """Version 4 with vector loads: each thread's share of a slab in ``vector_width`` -float global
    loads, and its outputs in two runs of neighbours (``owned``) read from shared memory with
    128-bit loads. Launch it only where ``vector_fits`` says so and A and B are ``vector.aligned``."""
    return double_buffered("vector_gemm", blocking, padding, SHARED_ALIGN,
                           slab_parts(blocking, vector_width(blocking), True))


def _launcher(blocking, m, n, k, a, b, transposed, strided):
    if not (vector_fits(blocking, m, n, k) and all(aligned(x, vector_width(blocking)) for x in (a, b))):
        raise RuntimeError(f"version 5 cannot run {blocking} on {m} x {n} x {k} with these arrays")
    return vector_gemm_kernel(blocking, SHARED_PADDING), (-(-n // blocking.bn), -(-m // blocking.bm)), blocking.threads


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size`` rounded up to the tile (fresh allocations: aligned rows)."""
    return cases(size, rng, _launcher, exact=True)


def _v5_rows() -> tuple:
    """Version 5's rows in the compile matrix, one per blocking (and layout) it runs."""
    L, S, W, pad = GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING
    return (build("vector_gemm", L, lambda: vector_gemm_kernel(L, pad), CONTIGUOUS, ", exact, vector"),
            build("vector_gemm_wide", W, lambda: vector_gemm_kernel(W, pad), CONTIGUOUS, ", exact, vector"),
            build("vector_gemm_small", S, lambda: vector_gemm_kernel(S, pad), CONTIGUOUS, ", exact, vector"))


SPEC = spec(5, "vector_gemm", "4 with 128-bit loads: global float4, shared outputs in runs of 4", _v5_rows)
