"""The GEMM family's launchers: which version, which blocking, which grid. ``gemm()`` (versions 2,
3 or 5 by the shape, the layouts and the policy's ``vector``; 9 with its ``tf32`` where
``tf32_launch`` allows), ``gemm_split()`` (version 9 with ``tf32`` where it fits, else 8 where it
fits, else 7 where that fits, else 6: ``recurrent_kernel``) with its plan, and ``tiled_gemm()``
(version 1). ``SPEC`` and ``case`` put ``gemm()`` itself, as the backward pass calls it for the
weight gradient, in the kernel runner's list.
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import cuda

from ...numerics import TOLERANCES
from ...runtime.device import DEVICE
from ..case import Case, f32, poisoned
from ..spec import Spec
from ..vector import aligned
from .tiles import SHARED_PADDING, TILE, Blocking, choose_blocking, choose_splits, divides, gemm_shape, \
    geometry_sms, recurrent_blocking, vector_fits, vector_width
from .v1_tiled import tiled_gemm_kernel
from .v2_blocked import blocked_gemm_kernel
from .v3_exact import exact_gemm_kernel
from .v5_vector import vector_gemm_kernel
from .v6_split import split_gemm_kernel
from .v7_recurrent import recurrent_fits, recurrent_gemm_kernel
from . import v9_tf32
from .v8_warptiled import warptiled_fits, warptiled_gemm_kernel


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


def tf32_launch(m: int, n: int, k: int, splits: int = 1, *, transposed: bool = False) -> bool:
    """Whether a GEMM of (m x n) over k in ``splits`` parts of K runs on version 9 here (the "tf32"
    GEMM policy, ``steps/gemm_policy.py``): A and B stored as read (not ``transposed``: no 'T' flag)
    and its patch dividing the shape, each part of K an even number of slabs (``tf32_fits``)."""
    return not transposed and v9_tf32.tf32_fits(v9_tf32.tf32_blocking(), m, n, k, splits)


def tf32_parts(m: int, n: int, k: int) -> int:
    """The parts of K in which version 9 runs an (m x n) C over k here: ``tf32_splits``' on a GPU
    (or laid out as one), 1 on the simulator (no GPU to fill); 0 where ``tf32_launch`` says no."""
    sms = geometry_sms()
    if sms is None:
        return 1 if tf32_launch(m, n, k) else 0
    return v9_tf32.tf32_splits(m, n, k, sms)


def gemm(a, b, c, *, accumulate: bool = False, transpose_a: bool = False, transpose_b: bool = False,
         blocking: Blocking | None = None, strided_b: bool = False, vector: bool = False, tf32: bool = False,
         stream=0) -> None:
    """Launch C = op(A) @ op(B) (or C += op(A) @ op(B)) on device arrays.

    A is (M, K), or (K, M) with ``transpose_a``; B is (K, N), or (N, K) with ``transpose_b``; C is
    (M, N). ``strided_b``: load a transposed B in the naive, uncoalesced order (notebook 06's
    comparison; never faster). Where ``blocking``'s tile divides the shape, an exact-tile version
    runs: with ``vector``, 5 where ``vector_launch`` allows (the ladder's "fast" GEMM policy,
    ``steps/gemm_policy.py``), else 3 (its "2016" policy); the same result to the bit. With ``tf32``
    (the "tf32" policy), version 9 in one part of K where ``tf32_launch`` allows, C written (not
    ``accumulate``) and contiguous, A and B aligned to its 128-bit loads: TF32 products.
    """
    DEVICE.announce()
    m, n, k = gemm_shape(a, b, c, transpose_b, transpose_a)
    if (tf32 and blocking is None and not accumulate and c.is_c_contiguous() and aligned(a, v9_tf32.WIDTH)
            and aligned(b, v9_tf32.WIDTH)
            and tf32_launch(m, n, k, transposed=transpose_a or transpose_b or strided_b)):
        v9_tf32.launch(a, b, c.reshape(1, m, n), stream=stream)
        return
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


def recurrent_kernel(blocking: Blocking, m: int, n: int, k: int, splits: int):
    """The kernel factory ``gemm_split`` takes for ``blocking`` (``recurrent_blocking()``'s) on (m x n)
    over k in ``splits`` parts: version 8 where it fits (``warptiled_fits``: version 7's condition
    and whole warps of 8 x 4 threads), else version 7 where it fits (``recurrent_fits``), else None
    (version 6, on ``choose_blocking``'s tile)."""
    if splits < 1:
        return None
    if warptiled_fits(blocking, m, n, k, splits):
        return warptiled_gemm_kernel
    if recurrent_fits(blocking, m, n, k, splits):
        return recurrent_gemm_kernel
    return None


def gemm_split(a, b, parts, *, blocking: Blocking | None = None, tf32: bool = False, stream=0) -> None:
    """Launch parts[z] = A[:, z-th K part] @ B[z-th K part, :] for z < len(parts), so that C =
    parts.sum(0) (whoever reads C adds them: the fused cell, in one pass): with ``tf32`` (the "tf32"
    policy) version 9 where ``tf32_launch`` allows; else, with no ``blocking`` given, version 8 where
    it fits, else 7 (``recurrent_kernel``), else version 6. A (M, K), B (K, N) as stored, rows
    contiguous and aligned (``vector.aligned``); parts (splits, M, N), C-contiguous; the tile must
    divide M, N and K / splits (``vector_fits``)."""
    DEVICE.announce()
    if len(parts.shape) != 3:
        raise ValueError(f"parts must be (splits, M, N), got shape {tuple(parts.shape)}")
    splits = parts.shape[0]
    m, n, k = gemm_shape(a, b, parts[0], False)
    if tf32 and blocking is None and tf32_launch(m, n, k, splits):
        v9_tf32.launch(a, b, parts, stream=stream)
        return
    kernel = split_gemm_kernel
    if blocking is None:
        recurrent = recurrent_kernel(recurrent_blocking(), m, n, k, splits)
        if recurrent is not None:
            blocking, kernel = recurrent_blocking(), recurrent
    blocking = choose_blocking(m, n, k // splits) if blocking is None else blocking
    if splits < 1 or not split_fits(blocking, m, n, k, splits):
        raise ValueError(f"gemm_split: {blocking} does not divide {m} x {n} x {k} in {splits} parts of K")
    width = vector_width(blocking)
    if not (aligned(a, width) and aligned(b, width)):
        raise ValueError(f"gemm_split: A and B need contiguous rows aligned to {4 * width} bytes")
    grid = (n // blocking.bn, m // blocking.bm, splits)
    kernel(blocking, SHARED_PADDING)[grid, blocking.threads, stream](a, b, parts, False)


def tiled_gemm(a, b, c, *, accumulate: bool = False, tile: int | None = None, stream=0) -> None:
    """Launch the textbook tiled kernel: C = A @ B (or C += A @ B)."""
    DEVICE.announce()
    tile = TILE if tile is None else tile
    m, n, _ = gemm_shape(a, b, c, False)
    grid = (-(-n // tile), -(-m // tile))
    tiled_gemm_kernel(tile)[grid, (tile, tile), stream](a, b, c, accumulate)


#: (steps, batch, inputs) of the weight gradient dW = X^T dZ of one layer over every step.
WEIGHT_GRADIENT = {"odd": (3, 5, 7), "article": (100, 64, 512)}
#: ``gemm()`` in the runner's list: no version of its own (number None), it launches 2 or 3.
SPEC = Spec("gemm", None, "gemm", "as the backward pass calls it: the weight gradient, one launch a step or one in all",
            None, None)


def case(size: str, rng) -> list:
    """The runner's cases of ``gemm()``: the weight gradient both ways at ``WEIGHT_GRADIENT[size]``."""
    return list(weight_gradient_cases(WEIGHT_GRADIENT[size], rng).values())


def weight_gradient_cases(dims: tuple, rng) -> dict:
    """The backward pass's weight gradient dW = X^T dZ of one layer over every step (notebook 41):
    {"per_step": one ``gemm()`` a step, accumulating; "all_steps": one over the (T x B) rows of
    every step}, at ``dims`` = (steps, batch, inputs), checked to the backward tolerance. Timed,
    each includes ``gemm()``'s own host work, as the backward pass pays it."""
    steps, batch, inputs = dims
    xs, dz = f32(rng, steps * batch, inputs), f32(rng, steps * batch, 4 * inputs)
    xs_d, dz_d, dw_d = cuda.to_device(xs), cuda.to_device(dz), poisoned(inputs, 4 * inputs)
    want = xs.T.astype(np.float64) @ dz

    def per_step():
        for t in range(steps):
            rows = slice(t * batch, (t + 1) * batch)
            gemm(xs_d[rows], dz_d[rows], dw_d, accumulate=t > 0, transpose_a=True)

    def all_steps():
        gemm(xs_d, dz_d, dw_d, transpose_a=True)

    shape = f"{inputs} x {4 * inputs} x {steps * batch}"  # M x N x K of X^T dZ
    flop, moved = 2.0 * inputs * 4 * inputs * steps * batch, 4.0 * (steps * batch * 5 * inputs + 4 * inputs * inputs)
    return {"per_step": Case(shape, per_step, {"dw": dw_d}, {"dw": want}, flop, moved, rtol=TOLERANCES["backward"],
                             variant=f"weight gradient, one launch a step ({steps})"),
            "all_steps": Case(shape, all_steps, {"dw": dw_d}, {"dw": want}, flop, moved, rtol=TOLERANCES["backward"],
                              variant="weight gradient, one launch")}
