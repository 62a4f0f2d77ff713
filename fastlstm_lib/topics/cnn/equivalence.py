"""The check that both layouts compute the same function: copy the weights, compare outputs."""

from __future__ import annotations

import numpy as np

from ...checks import check_int, check_keras_model
from ...runtime.keras_backend import import_keras, strict_float32
from .models import _MODEL_HINT as _HINT, build, model_data_format, to_layout


def flatten_rows_to_channels_first(kernel: np.ndarray, height: int, width: int, channels: int) -> np.ndarray:
    """Reorder the rows of a Dense kernel that follows Flatten, from NHWC order to NCHW order.

    Flatten of an (H, W, C) map puts feature (h, w, c) in row (h*W + w)*C + c; of a (C, H, W)
    map, in row (c*H + h)*W + w. Same features, other rows: to compute the same function the
    Dense kernel's rows must move with them.
    """
    if not isinstance(kernel, np.ndarray) or kernel.ndim != 2:
        raise TypeError(f"kernel must be a 2-D NumPy array (inputs, units), got {getattr(kernel, 'shape', type(kernel).__name__)}")
    height, width, channels = (check_int(name, value) for name, value in
                               (("height", height), ("width", width), ("channels", channels)))
    if kernel.shape[0] != height * width * channels:
        raise ValueError(f"kernel has {kernel.shape[0]} rows; expected height*width*channels = {height * width * channels}")
    units = kernel.shape[1]
    return kernel.reshape(height, width, channels, units).transpose(2, 0, 1, 3).reshape(-1, units)


def copy_weights(source, target) -> list[str]:
    """Copy a channels_last model's weights into the same model built channels_first.

    Conv kernels have the same shape (kh, kw, in, out) in Keras in both formats and BN vectors
    are per channel, so they copy unchanged; the Dense after a Flatten gets its rows permuted,
    unless the target's Flatten has ``data_format="channels_first"`` (it then transposes its
    NCHW input to NHWC itself, and the rows already match). Returns the names of the layers
    whose weights were permuted.
    """
    keras = check_keras_model("source", source, hint=_HINT)
    check_keras_model("target", target, hint=_HINT)
    if model_data_format(source) != "channels_last" or model_data_format(target) != "channels_first":
        raise ValueError("copy_weights(source, target) expects a channels_last source and a channels_first target")
    if [layer.name for layer in source.layers] != [layer.name for layer in target.layers]:
        raise ValueError("source and target must be the same architecture (same layer names in the same order)")
    permuted = []
    previous = previous_target = None
    for src, dst in zip(source.layers, target.layers):
        weights = src.get_weights()
        if weights and isinstance(src, keras.layers.Dense) and isinstance(previous, keras.layers.Flatten):
            if previous.data_format != "channels_last" and len(previous.input.shape) > 2:
                raise ValueError(f"the source's {previous.name!r} layer has data_format={previous.data_format!r}: a "
                                 "channels_last model's Flatten must flatten in memory order (data_format='channels_last')")
            if getattr(previous_target, "data_format", "channels_last") == "channels_last":  # NCHW in memory order: (c, h, w)
                channels, height, width = previous_target.input.shape[1:]
                weights[0] = flatten_rows_to_channels_first(weights[0], height, width, channels)
                permuted.append(src.name)
        if weights:
            dst.set_weights(weights)
        previous, previous_target = src, dst
    return permuted


def twin_models(model: str, *, seed: int = 0, **options):
    """The same model in both layouts with the same weights: (channels_last, channels_first)."""
    keras = import_keras()
    keras.utils.set_random_seed(check_int("seed", seed, minimum=0))
    last = build(model, "channels_last", **options)
    first = build(model, "channels_first", **options)
    copy_weights(last, first)
    return last, first


def predict(model, images: np.ndarray) -> np.ndarray:
    """Class probabilities for uint8 channels_last images, in the model's own layout, 256 at a time
    (direct calls: ``model.predict`` would trace a new tf.function per model)."""
    keras = import_keras()
    x = to_layout(images, model_data_format(model))
    batches = [keras.ops.convert_to_numpy(model(x[i:i + 256], training=False)) for i in range(0, len(x), 256)]
    return np.concatenate(batches).astype(np.float32)


def max_output_difference(model_last, model_first, images: np.ndarray) -> float:
    """max |p_last - p_first| over the class probabilities of the same images (TF32 off)."""
    with strict_float32():
        return float(np.max(np.abs(predict(model_last, images) - predict(model_first, images))))
