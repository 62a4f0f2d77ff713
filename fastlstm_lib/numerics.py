"""The float64 yardstick's ground floor: the one table of tolerances, the error measure, and the
float64 LSTM layer. NumPy only, so that the kernels' own checks (``kernels/case.py``) and the
reference (``reference.py``, the stacked LSTM every step is checked against) stand on the same
numbers without the kernels importing anything above them.
"""

from __future__ import annotations

import numpy as np

#: The one table of tolerances: the largest relative error (max |y - ref| / max |ref|, against
#: float64) a float32 result may have. "forward": every forward step and every kernel version;
#: "backward": the backward steps and the weight gradients, whose every element is a float32 sum
#: over all T x B (row, step) pairs (``backward/reference.py`` says why ten times more); "tf32": a
#: product on TF32 tensor cores (``kernels/gemm/v9_tf32.py``). TF32 keeps 10 of float32's 23
#: mantissa bits: each input is rounded by up to u = 2**-11 (4.9e-4) of itself, so each product a b
#: by up to 2u. Those errors are independent, so an output's error grows as sqrt(K), as max |ref|
#: does: measured against float64 of the unrounded inputs, standard-normal operands from 7 x 13 x 11 to
#: 64 x 2048 x 512 give 3e-4 to 6e-4 (0.6 to 1.2 u). 2e-3 (4 u) leaves 3x that, and is 200 times the
#: float32 tolerance, which TF32 misses by 30x or more (an honest float32 GEMM stays near 1e-7).
TOLERANCES = {"forward": 1e-5, "backward": 1e-4, "tf32": 2e-3}
#: The forward tolerance every step must meet.
RTOL = TOLERANCES["forward"]


def sigmoid64(z: np.ndarray) -> np.ndarray:
    """The logistic function in float64 NumPy (the kernels' ``sigmoidf`` is its float32 twin). For
    z below about -709, exp(-z) overflows to infinity and the result is 0, as it should be: the
    overflow is expected, so it is not warned about."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def lstm_layer64(layer_input: np.ndarray, layer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One LSTM layer over a whole sequence, float64, straight from the equations.

    ``layer_input`` (batch, seq_len, in); ``layer`` (kernel, recurrent_kernel, bias) in Keras'
    layout. Returns h and c at every step, (batch, seq_len, H) each, and the activated gates
    [i, f, g, o] at every step, (batch, seq_len, 4H): what the backward pass needs (notebook 40).
    """
    kernel, recurrent_kernel, bias = layer
    W = kernel.astype(np.float64)
    U = recurrent_kernel.astype(np.float64)
    b = bias.astype(np.float64)
    batch, seq_len, _ = layer_input.shape
    H = U.shape[0]
    # The input part of every step is known in advance: one matrix product for all steps.
    input_part = layer_input @ W + b  # (batch, seq_len, 4H)
    h = np.zeros((batch, H))
    c = np.zeros((batch, H))
    hs, cs, gates = np.empty((batch, seq_len, H)), np.empty((batch, seq_len, H)), np.empty((batch, seq_len, 4 * H))
    for t in range(seq_len):
        z = input_part[:, t] + h @ U
        i = sigmoid64(z[:, 0 * H : 1 * H])
        f = sigmoid64(z[:, 1 * H : 2 * H])
        g = np.tanh(z[:, 2 * H : 3 * H])
        o = sigmoid64(z[:, 3 * H : 4 * H])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs[:, t], cs[:, t], gates[:, t] = h, c, np.concatenate([i, f, g, o], axis=1)
    return hs, cs, gates


def relative_error(y: np.ndarray, ref: np.ndarray) -> float:
    """max |y - ref| / max |ref|: one number per output, infinite if y has any NaN or infinity.

    Measured against the largest reference value rather than element by element, so outputs
    near zero don't turn rounding noise into a huge ratio.
    """
    y, ref = _numeric("y", y), _numeric("ref", ref)
    if y.shape != ref.shape:
        raise ValueError(f"output shape {y.shape} differs from the reference's {ref.shape}")
    if not np.all(np.isfinite(y)):
        return float("inf")
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(y.astype(np.float64) - ref))) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def _numeric(name: str, value) -> np.ndarray:
    """``value`` as a NumPy array of numbers: a TypeError naming ``name`` for anything else."""
    array = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) or np.isscalar(value) else None
    if array is None or array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    return array
