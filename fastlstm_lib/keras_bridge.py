"""Moving weights between our params and ``keras.layers.LSTM``. Keras is imported lazily.

Keras 3 stores an LSTM layer as kernel (in, 4H), recurrent_kernel (H, 4H), bias (4H,) with the
gates in the order i, f, c, o: exactly our layout, so weights copy across unchanged.
"""

from __future__ import annotations

import numpy as np

from .runtime.keras_backend import import_keras, strict_float32
from .params import LayerParams, validate_input, validate_params


def params_from_keras(layers) -> list[LayerParams]:
    """A list of built, stacked ``keras.layers.LSTM`` layers -> params (float32, our layout)."""
    if not isinstance(layers, (list, tuple)):
        raise TypeError(f"layers must be a list of built keras.layers.LSTM, got {type(layers).__name__} {layers!r:.80}")
    if not layers:
        raise ValueError(f"layers must hold at least one keras.layers.LSTM, got an empty {type(layers).__name__}")
    keras = import_keras()
    params = []
    for index, layer in enumerate(layers):
        if not isinstance(layer, keras.layers.LSTM):
            raise TypeError(f"layers[{index}] must be a keras.layers.LSTM, got {type(layer).__name__}")
        weights = layer.get_weights()
        if len(weights) != 3:
            raise ValueError(
                f"layers[{index}] has {len(weights)} weight arrays; expected kernel, recurrent_kernel "
                "and bias (is the layer built, with use_bias=True?)"
            )
        params.append(LayerParams(*(np.asarray(w, dtype=np.float32) for w in weights)))
    return validate_params(params)


def keras_lstm_stack(params, *, use_cudnn="auto", **layer_options):
    """A ``keras.Sequential`` of LSTM layers (return_sequences=True) holding ``params``."""
    params = validate_params(params)
    if not (isinstance(use_cudnn, bool) or use_cudnn == "auto"):
        error = ValueError if isinstance(use_cudnn, str) else TypeError
        raise error(f"use_cudnn must be 'auto', True or False, got {type(use_cudnn).__name__} {use_cudnn!r}")
    keras = import_keras()
    input_size = params[0].kernel.shape[0]
    model = keras.Sequential([keras.Input(shape=(None, input_size), dtype="float32")])
    for layer in params:
        lstm = keras.layers.LSTM(
            layer.recurrent_kernel.shape[0], return_sequences=True, use_cudnn=use_cudnn, **layer_options
        )
        model.add(lstm)
        lstm.set_weights(list(layer))
    return model


def keras_forward(x: np.ndarray, params, **options) -> np.ndarray:
    """Keras' own LSTM on ``x`` with ``params``: (batch, seq_len, H) float32 NumPy.

    Computed with TF32 off (``strict_float32``, on TensorFlow or torch, each flag restored after):
    on Ampere and newer GPUs cuDNN's LSTM would otherwise round its matrix products to TF32 (~1e-3),
    and this is the float32 answer our kernels are compared with. The backend's tensor (a CUDA one
    on torch) comes back through ``keras.ops.convert_to_numpy``, which copies it to the host."""
    x, params, _ = validate_input(x, params)
    model = keras_lstm_stack(params, **options)
    keras = import_keras()
    with strict_float32():
        y = keras.ops.convert_to_numpy(model(x, training=False))
    return np.asarray(y, dtype=np.float32)
