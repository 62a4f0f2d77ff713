"""GEMM version 6, ``split_gemm``: version 5 over one of ``splits`` parts of K, grid depth ``splits``,
each part's product into its own slice of a (splits, M, N) C, which its reader adds up (no atomics).

For the recurrent GEMM, whose C is only batch rows tall: at batch 64 on an H100 a 32 x 32 patch
gives 128 blocks for 132 SMs, one block of 8 warps each, and ``split_plan`` cuts K in 4 for 512.
``gemm_split`` launches it where neither version 8 nor 7 fits (under the "fast" policy, steps 06-08 cut
K where ``choose_splits`` says so); the fused cell that adds the parts is ``pointwise``'s version 3.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ...runtime.device import DEVICE, multiprocessors
from ..case import Case, f32, poisoned
from .pipeline import double_buffered, slab_parts, split_of_k
from .tiles import GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_ALIGN, SHARED_PADDING, SHAPES, SIMULATOR_BLOCKING, SPLIT, \
    build, choose_blocking, rounded_up, spec, split_plan, vector_width


@functools.lru_cache(maxsize=None)
def split_gemm_kernel(blocking, padding: int):
    """Version 5 over one of gridDim.z equal parts of K, its partial product into C[z] (C is
    (splits, M, N)); launch it through ``gemm_split``."""
    return double_buffered("split_gemm", blocking, padding, SHARED_ALIGN,
                           slab_parts(blocking, vector_width(blocking), True), k_range=split_of_k)


def case(size: str, rng) -> list:
    """The runner's cases: every shape of ``size``, as ``gemm_split`` launches it."""
    found = []
    for m, n, k in SHAPES[size]:
        m, n, k = rounded_up(choose_blocking(m, n, k), m, n, k)
        found.append(_split_case(m, n, k, rng))
    return found


def _split_case(m, n, k, rng):
    """Version 6 as ``gemm_split`` launches it (its grid here), K in ``split_plan``'s parts for this GPU (4 at 64 x
    2048 x 512 on an H100; 2 on the simulator); each part checked on its own."""
    if DEVICE.small:
        blocking, splits = SIMULATOR_BLOCKING, 2
    else:
        blocking, splits = split_plan(m, n, k, multiprocessors())
    splits = max(splits, 2)  # two parts at least, even where the plan would not split
    step = blocking.bk * splits
    m, n, k = (-(-m // blocking.bm) * blocking.bm, -(-n // blocking.bn) * blocking.bn, -(-k // step) * step)
    a, b = f32(rng, m, k), f32(rng, k, n)
    a_d, b_d, parts = cuda.to_device(a), cuda.to_device(b), poisoned(splits, m, n)
    part = k // splits
    want = np.stack([a[:, s * part:(s + 1) * part].astype(np.float64) @ b[s * part:(s + 1) * part] for s in range(splits)])
    kernel = split_gemm_kernel(blocking, SHARED_PADDING)[(n // blocking.bn, m // blocking.bm, splits), blocking.threads]
    return Case(f"{m} x {n} x {k}", lambda: kernel(a_d, b_d, parts, False), {"parts": parts}, {"parts": want},
                2.0 * m * n * k, 4.0 * (m * k + k * n + splits * m * n))


def _v6_rows() -> tuple:
    """Version 6's rows in the compile matrix, one per blocking (and layout) it runs."""
    L, S, W, pad = GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING
    return (build("split_gemm_small", S, lambda: split_gemm_kernel(S, pad), SPLIT, ", exact, vector, split-K"),
            build("split_gemm", L, lambda: split_gemm_kernel(L, pad), SPLIT, ", exact, vector, split-K"),
            build("split_gemm_wide", W, lambda: split_gemm_kernel(W, pad), SPLIT, ", exact, vector, split-K"))


SPEC = spec(6, "split_gemm", "5 over one part of K per grid layer, each part's product kept apart", _v6_rows)
