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
    if len(axes) != mask.ndim:
        raise ValueError(f"{mask.ndim} axes to name, got names {axes}")
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


def first_wrong(y: np.ndarray, ref: np.ndarray, axis: int, rtol: float = RTOL) -> int | None:
    """The first index along ``axis`` where anything is wrong (e.g. the first wrong step)."""
    bad = wrong_mask(y, ref, rtol)
    others = tuple(a for a in range(bad.ndim) if a != axis)
    hit = np.flatnonzero(bad.any(axis=others))
    return int(hit[0]) if hit.size else None


def unwritten_steps(flat: np.ndarray, shape) -> np.ndarray:
    """Flat indices into a time-major (T, B, H) output -> a (B, T, H) mask of the unwritten ones."""
    mask = np.zeros(int(np.prod(shape)), dtype=bool)
    mask[flat] = True
    return mask.reshape(shape).transpose(1, 0, 2)
