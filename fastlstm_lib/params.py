"""LSTM weights and inputs: creation, and the validation every public function shares.

Weights use the Keras 3 layout and gate order, so they can be copied into ``keras.layers.LSTM``
unchanged: per layer ``kernel`` (in, 4H), ``recurrent_kernel`` (H, 4H), ``bias`` (4H,), the 4H
columns being the gates i, f, c, o in that order.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .checks import check_array, check_int
from .config import LSTMConfig

GATES = ("i", "f", "c", "o")


class LayerParams(NamedTuple):
    kernel: np.ndarray  # (input, 4H)
    recurrent_kernel: np.ndarray  # (H, 4H)
    bias: np.ndarray  # (4H,)


# Scale of the weights relative to 1/sqrt(fan_in). With inputs ~ N(0, 1) and |h| < 1 this keeps
# the gate pre-activations around N(0, 0.5^2): the sigmoids and tanhs stay in their steep middle,
# so every weight influences the output and a bug cannot hide behind a saturated gate (the
# blog's program used uniform [0, 1) weights, and every h came out as 1.0).
WEIGHT_SCALE = 0.5
BIAS_SCALE = 0.1


def init_params(cfg: LSTMConfig, seed: int = 0) -> list[LayerParams]:
    """Random float32 weights for ``cfg``, scaled so the gates don't saturate."""
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"init_params() expects an LSTMConfig, got {type(cfg).__name__}")
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    H = cfg.hidden
    params = []
    for layer in range(cfg.layers):
        inputs = cfg.input_size if layer == 0 else H
        fan_in = inputs + H
        scale = WEIGHT_SCALE / np.sqrt(fan_in)
        params.append(
            LayerParams(
                kernel=(rng.standard_normal((inputs, 4 * H)) * scale).astype(np.float32),
                recurrent_kernel=(rng.standard_normal((H, 4 * H)) * scale).astype(np.float32),
                bias=(rng.standard_normal(4 * H) * BIAS_SCALE).astype(np.float32),
            )
        )
    return params


def random_input(cfg: LSTMConfig, seed: int = 1) -> np.ndarray:
    """A float32 input of shape (batch, seq_len, input_size), standard normal, like Keras expects."""
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"random_input() expects an LSTMConfig, got {type(cfg).__name__}")
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    return rng.standard_normal((cfg.batch, cfg.seq_len, cfg.input_size)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Validation: one place, so every step and the reference reject bad input with the same words.


def validate_params(params: Sequence, *, allowed=(np.float32,)) -> list[LayerParams]:
    """Check a stack of layers: shapes chain, one hidden size, float32. Returns LayerParams."""
    if isinstance(params, LayerParams) or not isinstance(params, (list, tuple)):
        raise TypeError(
            "params must be a list with one (kernel, recurrent_kernel, bias) per layer, "
            f"got {type(params).__name__}"
        )
    if len(params) == 0:
        raise ValueError("params must hold at least one layer, got an empty list")
    checked = []
    hidden = None
    previous_out = None
    for index, layer in enumerate(params):
        if not isinstance(layer, (list, tuple)) or len(layer) != 3:
            raise TypeError(
                f"params[{index}] must be (kernel, recurrent_kernel, bias), got "
                f"{type(layer).__name__}" + (f" of length {len(layer)}" if hasattr(layer, "__len__") else "")
            )
        kernel, recurrent, bias = (
            check_array(f"params[{index}].{part}", array, allowed)
            for part, array in zip(LayerParams._fields, layer)
        )
        for part, array in zip(LayerParams._fields, (kernel, recurrent, bias)):
            if not np.all(np.isfinite(array)):  # refused like x's: a NaN weight would poison every output
                raise ValueError(f"params[{index}].{part} contains NaN or infinity")
        if recurrent.ndim != 2 or recurrent.shape[1] != 4 * recurrent.shape[0] or recurrent.shape[0] == 0:
            raise ValueError(
                f"params[{index}].recurrent_kernel must have shape (H, 4H), got {recurrent.shape}"
            )
        H = recurrent.shape[0]
        if hidden is not None and H != hidden:
            raise ValueError(
                f"every layer must have the same hidden size: layer 0 has {hidden}, layer {index} has {H}"
            )
        hidden = H
        if kernel.ndim != 2 or kernel.shape[1] != 4 * H or kernel.shape[0] == 0:
            raise ValueError(f"params[{index}].kernel must have shape (input, {4 * H}), got {kernel.shape}")
        if previous_out is not None and kernel.shape[0] != previous_out:
            raise ValueError(
                f"params[{index}].kernel must read the {previous_out} outputs of layer {index - 1}: "
                f"expected shape ({previous_out}, {4 * H}), got {kernel.shape}"
            )
        if bias.shape != (4 * H,):
            raise ValueError(f"params[{index}].bias must have shape ({4 * H},), got {bias.shape}")
        previous_out = H
        checked.append(LayerParams(kernel, recurrent, bias))
    return checked


def validate_input(x, params: Sequence, *, allowed=(np.float32,)) -> tuple[np.ndarray, list[LayerParams], LSTMConfig]:
    """Check ``x`` against ``params``; return them checked, with the LSTMConfig they describe."""
    params = validate_params(params, allowed=allowed)
    x = check_array("x", x, allowed)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (batch, seq_len, input_size), got {x.ndim} dimensions {x.shape}")
    batch, seq_len, features = x.shape
    if batch == 0 or seq_len == 0:
        raise ValueError(f"x must hold at least one sequence of at least one step, got shape {x.shape}")
    expected = params[0].kernel.shape[0]
    if features != expected:
        raise ValueError(
            f"x has {features} features per step but the first layer's kernel expects {expected} "
            f"(x shape {x.shape}, kernel shape {params[0].kernel.shape})"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinity")
    cfg = LSTMConfig(
        batch=batch,
        seq_len=seq_len,
        input_size=features,
        hidden=params[0].recurrent_kernel.shape[0],
        layers=len(params),
    )
    return x, params, cfg
