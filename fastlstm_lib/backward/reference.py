"""The float64 NumPy backward pass (BPTT) that every backward step is checked against.

``reference_backward(x, params, dy)`` differentiates ``fl.reference_forward``: ``dy`` is the
gradient of the loss with respect to its output (the last layer's h at every step), and the
result is the gradient with respect to the input and to every layer's weights, in Keras' layout.

Backpropagation through time, per layer from the top one down, per step from the last one back:

    dh_t  = dy_t + dz_{t+1} U^T                 (the output's gradient, plus the recurrence's)
    dc_t  = dh_t * o * (1 - tanh(c_t)^2) + dc_{t+1} * f_{t+1}
    dz_t  = [dc_t*g*i(1-i) | dc_t*c_{t-1}*f(1-f) | dc_t*i*(1-g^2) | dh_t*tanh(c_t)*o(1-o)]
    dW = sum_t x_t^T dz_t,  dU = sum_t h_{t-1}^T dz_t,  db = sum_t dz_t,  dx_t = dz_t W^T

and ``dx`` is the ``dy`` of the layer below. The forward pass is computed again here, keeping
what the backward needs (each layer's input, h, c and the gate activations at every step).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..checks import check_array
from ..config import LSTMConfig
from ..params import LayerParams, validate_input
from ..numerics import TOLERANCES, lstm_layer64, relative_error
from ..reference import reference_forward

#: Tolerance of the float32 backward steps: max |grad - ref| / max |ref| <= BACKWARD_RTOL for y,
#: dx and every weight gradient. Ten times the forward's 1e-5: every weight-gradient element is a
#: float32 sum over all T x B (batch row, step) pairs (6400 at the article's size) and dh crosses
#: T steps and every layer on its way back, so rounding adds up over ~100x more terms than in one
#: forward output; a random walk of float32 roundings (eps 6e-8) over 6400 terms is ~5e-6, and
#: 1e-4 leaves room for that without letting a wrong index (errors of order 1) pass.
BACKWARD_RTOL = TOLERANCES["backward"]


class LayerCache(NamedTuple):
    """What one layer's forward pass keeps for its backward pass (float64, batch-major)."""

    inputs: np.ndarray  # (B, T, in)
    hs: np.ndarray  # (B, T, H)
    cs: np.ndarray  # (B, T, H)
    gates: np.ndarray  # (B, T, 4H): the activations i, f, g = tanh(z_c), o


class TrainingResult(NamedTuple):
    """A forward and backward pass: the output y, the input's gradient dx, the weights' gradients."""

    y: np.ndarray  # (B, T, H)
    dx: np.ndarray  # (B, T, in)
    grads: list  # one LayerParams of gradients per layer


def output_gradient(cfg: LSTMConfig, seed: int = 2) -> np.ndarray:
    """A float32 dy (batch, seq_len, hidden), standard normal: the gradient every check feeds back.

    A random dy weights every output differently, so a gradient that mixes up two steps or two
    units is caught (a dy of ones would hide a permutation)."""
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"output_gradient() expects an LSTMConfig, got {type(cfg).__name__}")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((cfg.batch, cfg.seq_len, cfg.hidden)).astype(np.float32)


def validate_dy(dy, cfg: LSTMConfig, allowed=(np.float32,)) -> np.ndarray:
    """dy must be the shape of the forward output, (batch, seq_len, hidden), finite. It is never
    optional: a missing gradient is a TypeError, not a random one chosen silently."""
    if dy is None:
        raise TypeError(f"dy is required: the gradient of the loss with respect to the output, a float32 array of "
                        f"shape (batch, seq_len, hidden) = {(cfg.batch, cfg.seq_len, cfg.hidden)}, got None "
                        "(fl.backward.output_gradient(cfg) makes the random one the checks use)")
    dy = check_array("dy", dy, allowed)
    expected = (cfg.batch, cfg.seq_len, cfg.hidden)
    if dy.shape != expected:
        raise ValueError(f"dy must have the forward output's shape (batch, seq_len, hidden) = {expected}, "
                         f"got {dy.shape}")
    if not np.all(np.isfinite(dy)):
        raise ValueError("dy contains NaN or infinity")
    return dy


def forward_with_cache(x: np.ndarray, params) -> tuple[np.ndarray, list[LayerCache]]:
    """``reference_forward``, keeping every layer's ``LayerCache``. Float64 throughout."""
    x, params, _ = validate_input(x, params, allowed=(np.float32, np.float64))
    layer_input = x.astype(np.float64)
    caches = []
    for layer in params:
        hs, cs, gates = lstm_layer64(layer_input, layer)
        caches.append(LayerCache(layer_input, hs, cs, gates))
        layer_input = hs
    return layer_input, caches


def layer_backward(cache: LayerCache, layer: LayerParams, dh_out: np.ndarray) -> tuple[np.ndarray, LayerParams]:
    """One layer's BPTT: dh_out (B, T, H) -> (dx (B, T, in), the layer's gradients)."""
    W, U = layer.kernel.astype(np.float64), layer.recurrent_kernel.astype(np.float64)
    batch, T, H = cache.hs.shape
    dz = np.zeros((batch, T, 4 * H))
    dh_next, dc_next = np.zeros((batch, H)), np.zeros((batch, H))
    for t in reversed(range(T)):
        gates = cache.gates[:, t]
        i, f, g, o = gates[:, :H], gates[:, H:2 * H], gates[:, 2 * H:3 * H], gates[:, 3 * H:]
        c_prev = cache.cs[:, t - 1] if t > 0 else np.zeros((batch, H))
        tanh_c = np.tanh(cache.cs[:, t])
        dh = dh_out[:, t] + dh_next
        dc = dh * o * (1 - tanh_c**2) + dc_next
        dz[:, t] = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g**2),
                                   dh * tanh_c * o * (1 - o)], axis=1)
        dc_next = dc * f
        dh_next = dz[:, t] @ U.T
    grads = LayerParams(  # optimize=True: one BLAS product (without it, a C loop: ~20 s at the article's size)
        kernel=np.einsum("bti,btj->ij", cache.inputs, dz, optimize=True),
        recurrent_kernel=np.einsum("bti,btj->ij", cache.hs[:, :-1], dz[:, 1:], optimize=True),  # h_{-1} = 0
        bias=dz.sum(axis=(0, 1)),
    )
    return dz @ W.T, grads


def reference_backward(x: np.ndarray, params, dy: np.ndarray) -> tuple[np.ndarray, list[LayerParams]]:
    """Gradients of a loss L through the stacked LSTM, float64: ``(dx, grads)``.

    ``dy`` is dL/dy for y = ``reference_forward(x, params)``, shape (batch, seq_len, hidden).
    ``dx`` is dL/dx, (batch, seq_len, input_size); ``grads`` holds one ``LayerParams`` per layer:
    dL/dkernel (in, 4H), dL/drecurrent_kernel (H, 4H), dL/dbias (4H,), gates i, f, c, o (Keras'
    layout). Accepts float32 or float64 arrays.
    """
    return reference_training(x, params, dy)[1:]


def reference_training(x: np.ndarray, params, dy: np.ndarray) -> TrainingResult:
    """Forward and backward in float64: ``TrainingResult(y, dx, grads)`` for the output gradient
    ``dy`` (required; the harness checks every backward step with ``output_gradient(cfg)``)."""
    x, params, cfg = validate_input(x, params, allowed=(np.float32, np.float64))
    dy = validate_dy(dy, cfg, allowed=(np.float32, np.float64))
    y, caches = forward_with_cache(x, params)
    grads = [None] * len(params)
    dh_out = dy.astype(np.float64)
    for index in reversed(range(len(params))):
        dh_out, grads[index] = layer_backward(caches[index], params[index], dh_out)
    return TrainingResult(y, dh_out, grads)


def numerical_gradients(x: np.ndarray, params, dy: np.ndarray,
                        eps: float = 1e-6) -> tuple[np.ndarray, list[LayerParams]]:
    """``(dx, grads)`` by central differences of L = sum(reference_forward(x, params) * dy), in
    float64: (L(w + eps) - L(w - eps)) / (2 eps) for every element w. Two forward passes per
    element: for tiny problems only (the check of ``reference_backward``)."""
    x, params, cfg = validate_input(x, params, allowed=(np.float32, np.float64))
    dy = validate_dy(dy, cfg, allowed=(np.float32, np.float64)).astype(np.float64)
    arrays = [x.astype(np.float64)] + [a.astype(np.float64) for layer in params for a in layer]

    def loss():
        stack = [LayerParams(*arrays[1 + 3 * n:4 + 3 * n]) for n in range(len(params))]
        return float(np.sum(reference_forward(arrays[0], stack) * dy))

    gradients = []
    for array in arrays:
        gradient = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            original = array[index]
            array[index] = original + eps
            up = loss()
            array[index] = original - eps
            down = loss()
            array[index] = original
            gradient[index] = (up - down) / (2 * eps)
        gradients.append(gradient)
    return gradients[0], [LayerParams(*gradients[1 + 3 * n:4 + 3 * n]) for n in range(len(params))]


def gradient_errors(result: TrainingResult, ref: TrainingResult) -> dict:
    """Relative error (``fl.relative_error``) of each part: y, dx and every layer's gradients."""
    errors = {"y": relative_error(result.y, ref.y), "dx": relative_error(result.dx, ref.dx)}
    for index, (ours, theirs) in enumerate(zip(result.grads, ref.grads)):
        for name, a, b in zip(LayerParams._fields, ours, theirs):
            errors[f"layer {index} {name}"] = relative_error(a, b)
    return errors


def training_error(result: TrainingResult, ref: TrainingResult) -> float:
    """The largest relative error of any part (infinite if any part holds a NaN)."""
    if len(result.grads) != len(ref.grads):
        raise ValueError(f"{len(result.grads)} layers of gradients, the reference has {len(ref.grads)}")
    return max(gradient_errors(result, ref).values())
