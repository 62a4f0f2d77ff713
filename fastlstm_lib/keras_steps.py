"""Keras' own LSTM layer, timed through the same harness as our steps (notebook 10).

``fl.steps.get("keras_cudnn")`` etc. return objects that look like a step to ``fl.bench``: same
weights, same input, checked against the float64 reference before and after timing. Three ways
of running ``keras.layers.LSTM`` (Keras 3 uses cuDNN by itself when it can):

- ``keras_cudnn``: ``use_cudnn="auto"``: cuDNN on a GPU, the generic implementation elsewhere;
- ``keras_generic``: ``use_cudnn=False``: Keras' generic LSTM (a loop of matmuls and ops);
- ``keras_recurrent_dropout``: ``recurrent_dropout=0.1``, which makes the layer ineligible for
  cuDNN (the old ``CuDNNLSTM`` had no dropout at all). At inference the dropout is off, so the
  result is still exact: what changes is only which implementation runs.

Keras runs on its backend's own streams, not on Numba's, so these are timed with a wall clock
around a call that ends by waiting for the backend (``clock = "wall"``). Keras is imported on
first use.
"""

from __future__ import annotations

import logging

import numpy as np

from .config import LSTMConfig
from .params import validate_input


def backend_name() -> str:
    from .keras_bridge import import_keras

    return import_keras().backend.backend()


def backend_device() -> dict:
    """Where Keras computes: the backend and its device's name (a GPU's, or "CPU")."""
    backend = backend_name()
    name = "CPU"
    if backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            name = details.get("device_name", "GPU")
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            name = torch.cuda.get_device_name(0)
    return {"backend": backend, "name": name, "gpu": name != "CPU"}


def set_tf32(enabled: bool) -> None:
    """Allow (or forbid) TF32 for FP32 matrix math in the Keras backend (Ampere and later GPUs).

    Our Numba kernels always compute in true FP32; Keras on cuDNN may use TF32 Tensor Cores,
    which are faster and less precise. Fair comparisons turn it off.
    """
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(bool(enabled))
    elif backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = bool(enabled)
        torch.backends.cudnn.allow_tf32 = bool(enabled)


def tf32_enabled() -> bool | None:
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.experimental.tensor_float_32_execution_enabled())
    if backend == "torch":
        import torch

        return bool(torch.backends.cudnn.allow_tf32)
    return None


def _quiet_retracing_warnings(tf) -> None:
    """Each runner compiles its own model once, on purpose; TensorFlow counts those compilations
    across functions and warns about "retracing", which here is noise. Drop just that message."""
    logger = tf.get_logger()
    if not any(getattr(f, "fastlstm", False) for f in logger.filters):
        class DropRetracing(logging.Filter):
            fastlstm = True

            def filter(self, record):
                return "triggered tf.function retracing" not in record.getMessage()

        logger.addFilter(DropRetracing())


def compiled_inference(model):
    """``model(x, training=False)`` as the backend runs it fastest: a tf.function on TensorFlow
    (no Python between the ops), plain eager calls on torch (each op already on the GPU)."""
    if backend_name() == "tensorflow":
        import tensorflow as tf

        _quiet_retracing_warnings(tf)
        return tf.function(lambda x: model(x, training=False), jit_compile=False, reduce_retracing=True)
    return lambda x: model(x, training=False)


def wait_for(y) -> None:
    """Return only when the backend has finished computing ``y``."""
    backend = backend_name()
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return
    np.asarray(y[0, 0, 0])  # a one-element copy to the host waits for all of y's work


class KerasRunner:
    """Like ``steps.Runner``: ``launch()`` runs the stack once, ``result()`` is (B, T, H) float32."""

    def __init__(self, step, cfg: LSTMConfig, call, x):
        self.step = step
        self.cfg = cfg
        self.call = call
        self.x = x
        self.y = None

    def poison(self) -> None:
        self.y = None  # a fresh output is computed by every launch

    def launch(self) -> None:
        self.y = self.call(self.x)

    def synchronize(self) -> None:
        wait_for(self.y)

    def result(self) -> np.ndarray:
        from .keras_bridge import import_keras

        if self.y is None:
            raise RuntimeError("nothing launched")
        return np.asarray(import_keras().ops.convert_to_numpy(self.y), dtype=np.float32)


class KerasLSTM:
    """A stack of ``keras.layers.LSTM`` with our weights, as a step the harness can time."""

    clock = "wall"

    def __init__(self, name: str, title: str, **layer_options):
        self.name = name
        self.title = title
        self.layer_options = layer_options

    def runner(self, x: np.ndarray, params, **options) -> KerasRunner:
        if options:
            raise TypeError(f"step {self.name!r} takes no options, got {sorted(options)}")
        from .keras_bridge import import_keras, keras_lstm_stack

        x, params, cfg = validate_input(x, params)
        keras = import_keras()
        model = keras_lstm_stack(params, **self.layer_options)
        return KerasRunner(self, cfg, compiled_inference(model), keras.ops.convert_to_tensor(x))

    def forward(self, x: np.ndarray, params, **options) -> np.ndarray:
        runner = self.runner(x, params, **options)
        runner.launch()
        return runner.result()

    def device(self) -> dict:
        from .device import _version, device_info

        where = backend_device()
        info = device_info()
        info.update(name=where["name"], simulator=False, keras_backend=where["backend"],
                    keras=_version("keras"), tf32=tf32_enabled())
        return info

    def __repr__(self) -> str:
        return f"<Keras {self.name!r}: {self.title}>"


KERAS_STEPS = {
    step.name: step
    for step in (
        KerasLSTM("keras_cudnn", "keras.layers.LSTM, use_cudnn='auto' (cuDNN on a GPU)", use_cudnn="auto"),
        KerasLSTM("keras_generic", "keras.layers.LSTM, use_cudnn=False (generic implementation)", use_cudnn=False),
        KerasLSTM("keras_recurrent_dropout", "keras.layers.LSTM, recurrent_dropout=0.1 (not eligible for cuDNN)",
                  recurrent_dropout=0.1),
    )
}


def train_step_times(params, x, *, use_cudnn="auto", warmup: int = 2, repeats: int = 5, seed: int = 0) -> dict:
    """One training step (``train_on_batch``: forward, MSE loss, backward, SGD update) of the LSTM
    stack, timed after warm-up. Also returns the weights after the first step, so that two ways of
    computing it (cuDNN and generic) can be shown to do the same math."""
    from .harness import time_launches
    from .keras_bridge import import_keras, keras_lstm_stack

    x, params, cfg = validate_input(x, params)
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    keras = import_keras()
    target = np.random.default_rng(seed).uniform(-0.5, 0.5, (cfg.batch, cfg.seq_len, cfg.hidden)).astype(np.float32)
    model = keras_lstm_stack(params, use_cudnn=use_cudnn)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    first_loss = float(model.train_on_batch(x, target))
    weights_after_one_step = [w.copy() for w in model.get_weights()]
    # The loss as a Python float waits for the step, so the clock needs no other synchronisation.
    times = np.array(time_launches(lambda: float(model.train_on_batch(x, target)), warmup, repeats,
                                   synchronize=lambda: None))
    return {"use_cudnn": use_cudnn, "first_loss": first_loss, "weights_after_one_step": weights_after_one_step,
            "time_ms": {"median": float(np.median(times)), "min": float(times.min()), "max": float(times.max())},
            "repeats": repeats, "warmup": warmup}
