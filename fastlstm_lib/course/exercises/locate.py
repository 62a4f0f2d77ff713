"""Where an output is wrong, in words (steps, batch rows, units, the worst element, the first
NaN), from the arrays alone, so that the same mistake always gets the same words."""

from __future__ import annotations

import numpy as np

from ...numerics import RTOL
from ...reference import OUTPUT_AXES as STEP_AXES  # a step's output axes, (batch, seq_len, hidden)


def wrong_mask(y: np.ndarray, ref: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """Elements that are NaN/infinite, or off by more than ``rtol`` of the largest reference value."""
    scale = float(np.max(np.abs(ref))) or 1.0
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(y) | (np.abs(y.astype(np.float64) - ref) > rtol * scale)


def spans(indices, extent: int, noun: str) -> str:
    """[2, 3, 4] of 5 -> 'steps 2..4'; all of them -> 'every step'; [0, 2] -> 'steps 0, 2'."""
    indices = sorted(int(i) for i in indices)
    if len(indices) == extent:
        return f"every {noun}"
    if len(indices) == 1:
        return f"{noun} {indices[0]}"
    plural = noun + ("es" if noun.endswith("h") else "s")
    if indices[-1] - indices[0] + 1 == len(indices):
        return f"{plural} {indices[0]}..{indices[-1]}"
    return f"{plural} {', '.join(str(i) for i in indices)}"


def spread(mask: np.ndarray, axes=STEP_AXES) -> str:
    """'step 2, every batch row, units 7..12': the extent of ``mask`` along each axis."""
    parts = []
    for axis, noun in enumerate(axes):
        others = tuple(a for a in range(mask.ndim) if a != axis)
        hit = np.flatnonzero(mask.any(axis=others))
        parts.append(spans(hit, mask.shape[axis], noun))
    return ", ".join(parts)


def point(index, axes=STEP_AXES) -> str:
    return "(" + ", ".join(f"{noun} {i}" for noun, i in zip(axes, index)) + ")"


def where_wrong(y: np.ndarray, ref: np.ndarray, axes=STEP_AXES, rtol: float = RTOL) -> str | None:
    """None when ``y`` matches ``ref``; otherwise where it does not, and its worst element."""
    bad = wrong_mask(y, ref, rtol)
    if not bad.any():
        return None
    nan = ~np.isfinite(y)
    if nan.any():
        first = np.unravel_index(np.argmax(nan), y.shape)
        return (f"NaN at {spread(nan, axes)} ({int(nan.sum())} of {y.size} elements); the first is at "
                f"{point(first, axes)}" + ("" if nan.all() else f"; wrong at {spread(bad, axes)}"))
    error = np.abs(y.astype(np.float64) - ref)
    worst = np.unravel_index(np.argmax(error), y.shape)
    return (f"wrong at {spread(bad, axes)}; the worst at {point(worst, axes)}: got {float(y[worst]):.4g}, "
            f"expected {float(ref[worst]):.4g}")
