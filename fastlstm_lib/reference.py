"""The float64 NumPy LSTM that every GPU step is checked against (the stacked layers of
``numerics.lstm_layer64``), and what a check says of a step's output: where it is not finite,
whether it matches."""

from __future__ import annotations

import numpy as np

from .checks import check_number
from .numerics import RTOL, lstm_layer64, relative_error
from .params import validate_input


def reference_forward(x: np.ndarray, params) -> np.ndarray:
    """Stacked LSTM, float64 throughout: returns the last layer's h at every step, (batch, seq_len, H).

    Accepts float32 or float64 arrays; computes in float64 so that it is the yardstick, not a
    competitor, for the float32 GPU steps. Each layer's h sequence is the next layer's input.
    """
    x, params, _ = validate_input(x, params, allowed=(np.float32, np.float64))
    layer_input = x.astype(np.float64)
    for layer in params:
        layer_input, _, _ = lstm_layer64(layer_input, layer)
    return layer_input


#: Names of the axes of a step's output, (batch, seq_len, hidden) like Keras.
OUTPUT_AXES = ("batch row", "step", "unit")


def where_nonfinite(result, name: str = "the output") -> str | None:
    """Where ``result`` first holds NaN or infinity, in words, or None if it is finite.

    ``result``: a step's output (batch, seq_len, hidden), or a named tuple / list of arrays (a
    ``TrainingResult``: y, dx, grads), searched in order; the first array with a non-finite value
    is named by its field and index (``grads[1].kernel``)."""
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        parts = [(f"{name}.{field}" if name != "the output" else field, value)
                 for field, value in zip(result._fields, result)]
    elif isinstance(result, (list, tuple)):
        parts = [(f"{name}[{i}]", value) for i, value in enumerate(result)]
    else:
        array = np.asarray(result)
        bad = ~np.isfinite(array)
        if not bad.any():
            return None
        first = np.unravel_index(int(np.argmax(bad)), array.shape)
        axes = OUTPUT_AXES if array.ndim == 3 and name in ("the output", "y") else ()
        at = ", ".join(f"{axis} {i}" for axis, i in zip(axes, first)) if axes else f"index {tuple(int(i) for i in first)}"
        kinds = " and ".join(kind for kind, mask in (("NaN", np.isnan(array)), ("infinity", np.isinf(array)))
                             if mask.any())
        return f"{name} holds {kinds} in {int(bad.sum())} of {array.size} elements, the first at ({at})"
    for part_name, value in parts:
        found = where_nonfinite(value, part_name)
        if found:
            return found
    return None


def matches(y: np.ndarray, ref: np.ndarray, rtol: float = RTOL) -> bool:
    """True when y is finite everywhere and within ``rtol`` of the reference (NaN never passes)."""
    rtol = check_number("rtol", rtol)
    if rtol <= 0:
        raise ValueError(f"rtol must be a relative error > 0, got {rtol:g}")
    return relative_error(y, ref) <= rtol

