"""The float64 NumPy LSTM that every GPU step is checked against, and the error measure."""

from __future__ import annotations

import numpy as np

from .params import validate_input


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def reference_forward(x: np.ndarray, params) -> np.ndarray:
    """Stacked LSTM, float64 throughout: returns the last layer's h at every step, (batch, seq_len, H).

    Accepts float32 or float64 arrays; computes in float64 so that it is the yardstick, not a
    competitor, for the float32 GPU steps.
    """
    x, params, cfg = validate_input(x, params, allowed=(np.float32, np.float64))
    H = cfg.hidden
    layer_input = x.astype(np.float64)
    for kernel, recurrent_kernel, bias in params:
        W = kernel.astype(np.float64)
        U = recurrent_kernel.astype(np.float64)
        b = bias.astype(np.float64)
        # The input part of every step is known in advance: one matrix product for all steps.
        input_part = layer_input @ W + b  # (batch, seq_len, 4H)
        h = np.zeros((cfg.batch, H))
        c = np.zeros((cfg.batch, H))
        outputs = np.empty((cfg.batch, cfg.seq_len, H))
        for t in range(cfg.seq_len):
            z = input_part[:, t] + h @ U
            i = sigmoid(z[:, 0 * H : 1 * H])
            f = sigmoid(z[:, 1 * H : 2 * H])
            g = np.tanh(z[:, 2 * H : 3 * H])
            o = sigmoid(z[:, 3 * H : 4 * H])
            c = f * c + i * g
            h = o * np.tanh(c)
            outputs[:, t] = h
        layer_input = outputs
    return layer_input


def relative_error(y: np.ndarray, ref: np.ndarray) -> float:
    """max |y - ref| / max |ref|: one number per output, infinite if y has any NaN or infinity.

    Measured against the largest reference value rather than element by element, so outputs
    near zero don't turn rounding noise into a huge ratio.
    """
    y = np.asarray(y)
    ref = np.asarray(ref)
    if y.shape != ref.shape:
        raise ValueError(f"output shape {y.shape} differs from the reference's {ref.shape}")
    if not np.all(np.isfinite(y)):
        return float("inf")
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(y.astype(np.float64) - ref))) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def matches(y: np.ndarray, ref: np.ndarray, rtol: float = 1e-5) -> bool:
    """True when y is finite everywhere and within ``rtol`` of the reference (NaN never passes)."""
    return relative_error(y, ref) <= rtol
