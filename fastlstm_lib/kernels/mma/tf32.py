"""TF32, the tensor cores' 19-bit float, on the host: ``round_tf32`` (what ``to_tf32`` and PTX's
``cvt.rna.tf32.f32`` do to a float32) and ``truncate_tf32`` (what the ``mma`` reads of an A or B
register that was not rounded: its top 19 bits).

TF32 keeps float32's sign and 8-bit exponent (its range) and 10 of its 23 mantissa bits (FP16's
precision): a float32 whose 13 low bits are zero. ``cvt.rna`` rounds to nearest, ties away from
zero. ptxas expands it (seen in the SASS for sm_80 and sm_90) as: add 0x1000 to the bits unless
|x| is infinite or NaN, then clear the 13 low bits. On the bits of a sign-magnitude number that
is round-half-away on the magnitude, a carry into the exponent included (the largest floats round
to infinity, subnormals round like normals). Infinities pass unchanged, and so does the usual NaN
(0x7fc00000); a NaN whose payload lies only in the 13 low bits comes out as an infinity, as the
expansion makes it. This module computes exactly that, bit for bit.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...checks import check_array

#: The 13 mantissa bits TF32 drops, and the add that rounds them half away from zero.
DROPPED_BITS = 13
KEEP_MASK = np.uint32(0xFFFFE000)
HALF = np.uint32(0x1000)


def _as_float32(name: str, values):
    """(float32 array, was a scalar) for a float32 array or a real number."""
    if isinstance(values, np.ndarray):
        return check_array(name, values, (np.float32,)), False
    if isinstance(values, bool) or not isinstance(values, numbers.Real):
        raise TypeError(f"{name} must be a float32 NumPy array or a real number, "
                        f"got {type(values).__name__} {values!r}")
    return np.array([values], dtype=np.float32), True  # 1-d: NumPy wraps array adds silently, not scalar ones


def round_tf32(values):
    """``values`` (a float32 array, or a number: then a np.float32) rounded to TF32 as
    ``cvt.rna.tf32.f32`` does, as float32s whose 13 low mantissa bits are zero."""
    array, scalar = _as_float32("values", values)
    bits = np.atleast_1d(array).view(np.uint32)  # a 0-d array's add would be a scalar one
    finite = np.isfinite(np.atleast_1d(array))
    rounded = (np.where(finite, bits + HALF, bits) & KEEP_MASK).astype(np.uint32).view(np.float32).reshape(array.shape)
    return rounded[0] if scalar else rounded


def truncate_tf32(values):
    """``values`` as the tensor core reads an A or B register: its 13 low bits ignored (cleared),
    NaNs kept NaN. The identity on what ``round_tf32`` returns."""
    array, scalar = _as_float32("values", values)
    truncated = (array.view(np.uint32) & KEEP_MASK).view(np.float32)
    truncated = np.where(np.isnan(array), array, truncated).astype(np.float32)
    return truncated[0] if scalar else truncated
