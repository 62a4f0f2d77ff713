"""Where ``FastLSTM`` meets ``keras.layers.LSTM``'s conventions: it behaves as Keras' layer does, or
refuses with a ``ValueError`` naming what.
"""

from __future__ import annotations

import numpy as np

from ...runtime.keras_backend import import_keras

keras = import_keras()

#: keras.layers.LSTM's arguments that FastLSTM does not take, with the value FastLSTM behaves as.
LSTM_ONLY_ARGUMENTS = {
    "activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True,
    "kernel_regularizer": None, "recurrent_regularizer": None, "bias_regularizer": None,
    "kernel_constraint": None, "recurrent_constraint": None, "bias_constraint": None,
    "dropout": 0.0, "recurrent_dropout": 0.0, "seed": None, "return_state": False,
    "go_backwards": False, "stateful": False, "unroll": False, "use_cudnn": "auto",
}

RIGHT_PADDED_WORDS = ("FastLSTM supports right-padded masks only (each sequence's valid steps first, then only "
                      "masked steps, as keras.layers.LSTM on cuDNN requires): use keras.layers.LSTM("
                      "use_cudnn=False) for other masks")


def _behaves_as(name, value, default) -> bool:
    if name in ("activation", "recurrent_activation"):
        try:
            return keras.activations.get(value) is keras.activations.get(default)
        except (ValueError, TypeError):
            return False
    if default is None or isinstance(default, (bool, str)):
        return value is default or (isinstance(value, str) and value == default)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == default


def lstm_arguments_refused(kwargs: dict) -> dict:
    """``kwargs`` without ``keras.layers.LSTM``'s arguments at the values FastLSTM behaves as;
    ``ValueError`` naming the first one at any other value."""
    rest = dict(kwargs)
    for name, default in LSTM_ONLY_ARGUMENTS.items():
        if name not in rest:
            continue
        value = rest.pop(name)
        if not _behaves_as(name, value, default):
            raise ValueError(f"FastLSTM does not support {name}={value!r} (keras.layers.LSTM's argument; FastLSTM "
                             f"always behaves as {name}={default!r}): use keras.layers.LSTM for it")
    return rest


def check_dtype_policy(policy) -> None:
    """``ValueError`` unless ``policy`` computes and keeps its variables in float32, unquantized."""
    if (policy.compute_dtype, policy.variable_dtype, policy.quantization_mode) != ("float32", "float32", None):
        raise ValueError(f"FastLSTM computes in float32 (its kernels are float32); dtype policy {policy.name!r} is "
                         "not supported: use dtype='float32' or keras.layers.LSTM")


def _executing_eagerly() -> bool:
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly()
    return True  # torch computes every value as it goes


def check_call(inputs, initial_state, mask):
    """(inputs, mask as a bool tensor or None): ``ValueError`` for an ``initial_state``, a mask of
    the wrong shape, or (eagerly) one not right-padded; in a TensorFlow graph that is asserted, as
    Keras' cuDNN path does, and ``inputs`` comes back depending on the assertion."""
    if initial_state is not None:
        raise ValueError("FastLSTM starts from zero states: initial_state is not supported, got "
                         f"{type(initial_state).__name__}; use keras.layers.LSTM for it")
    if mask is None:
        return inputs, None
    if isinstance(mask, (list, tuple)):  # keras.layers.LSTM takes the first of nested masks too
        mask = mask[0]
    mask = keras.ops.cast(mask, "bool")
    shape, expected = tuple(mask.shape), tuple(inputs.shape[:2])
    if len(shape) != 2 or any(a is not None and b is not None and int(a) != int(b) for a, b in zip(shape, expected)):
        raise ValueError(f"mask must have shape (batch, seq_len) = {expected}, like x's first two dimensions, "
                         f"got shape {shape}")
    if _executing_eagerly():
        values = np.asarray(keras.ops.convert_to_numpy(mask)).astype(bool)
        bad = np.flatnonzero((~values[:, :-1] & values[:, 1:]).any(axis=1))
        if bad.size:
            raise ValueError(f"mask must be right-padded, got row {bad[0]} = {values[bad[0]].astype(int).tolist()}: "
                             + RIGHT_PADDED_WORDS)
        return inputs, mask
    import tensorflow as tf

    right_padded = tf.reduce_all(tf.logical_or(mask[:, :-1], tf.logical_not(mask[:, 1:])))
    with tf.control_dependencies([tf.debugging.Assert(right_padded, ["mask must be right-padded: "
                                                                     + RIGHT_PADDED_WORDS])]):
        return tf.identity(inputs), mask


def masked_outputs(y, mask, *, return_sequences: bool, zero_output_for_mask: bool):
    """keras.layers.LSTM's output under a right-padded ``mask`` (batch, T), from ``y``, the output at
    every step of the whole sequences (batch, T, H)."""
    ops = keras.ops
    if zero_output_for_mask:
        y = ops.where(mask[:, :, None], y, ops.zeros_like(y))
        return y if return_sequences else y[:, -1, :]
    # Step t of a right-padded sequence of length L outputs step min(t, L - 1)'s output: with a step
    # of zeros (the initial h) put first, that is row cumsum(mask)[t], and 0 for a sequence of length 0.
    steps = ops.cumsum(ops.cast(mask, "int32"), axis=1)
    if not return_sequences:
        steps = steps[:, -1:]
    padded = ops.concatenate([ops.zeros_like(y[:, :1, :]), y], axis=1)
    picked = ops.take_along_axis(padded, steps[:, :, None], axis=1)
    return picked if return_sequences else picked[:, 0, :]
