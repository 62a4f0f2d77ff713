"""Keras' own gradients: ``keras.layers.LSTM`` forward and backward, with our weights.

- ``keras_gradients(x, params, dy)``: ``(dx, grads)`` as ``fl.reference_backward`` returns them,
  computed by Keras (TensorFlow's GradientTape, or torch autograd on the torch backend): the
  check that our reference differentiates the same function Keras trains.
- ``KERAS_TRAINING``: that forward and backward as a step of the harness, checked against the
  float64 reference like our backward steps and timed with a wall clock (notebook 41, and the
  GPU measurement against cuDNN in ``bench.py``).

Keras is imported when first used; the loss is sum(y * dy), whose gradient with respect to y is
dy.
"""

from __future__ import annotations

import numpy as np

from ..runtime.keras_backend import import_keras, wait_for
from ..params import LayerParams, validate_input
from ..steps.base import reject_options
from ..steps.keras_lstm import KerasLSTM, KerasRunner
from ..timing import wall_times
from .base import BackwardStep, TrainingRunner
from .reference import TrainingResult, reference_training, validate_dy


def gradient_function(model, dy: np.ndarray):
    """``call(x) -> (y, dx, *weight gradients)`` for a Keras model and a fixed dy, the way the
    backend runs it fastest: a tf.function on TensorFlow, autograd on torch."""
    keras = import_keras()
    backend = keras.backend.backend()
    dy_tensor = keras.ops.convert_to_tensor(dy)
    if backend == "tensorflow":
        import tensorflow as tf

        from ..runtime.keras_backend import quiet_retracing_warnings

        quiet_retracing_warnings(tf)

        @tf.function(jit_compile=False, reduce_retracing=True)
        def call(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = model(x, training=False)
                loss = tf.reduce_sum(y * dy_tensor)
            return (y, *tape.gradient(loss, [x, *model.trainable_weights]))

        return call
    if backend == "torch":
        import torch

        def call(x):
            x = x.detach().requires_grad_(True)
            y = model(x, training=False)
            gradients = torch.autograd.grad((y * dy_tensor).sum(), [x, *(w.value for w in model.trainable_weights)])
            return (y.detach(), *gradients)

        return call
    raise NotImplementedError(f"Keras' gradients are computed here with TensorFlow or torch, not {backend!r}")


def as_training_result(outputs, layers: int) -> TrainingResult:
    """(y, dx, kernel, recurrent, bias, kernel, ...) tensors -> a float32 NumPy ``TrainingResult``."""
    keras = import_keras()
    y, dx, *weights = (np.asarray(keras.ops.convert_to_numpy(t), dtype=np.float32) for t in outputs)
    grads = [LayerParams(*weights[3 * layer:3 * layer + 3]) for layer in range(layers)]
    return TrainingResult(y, dx, grads)


def keras_gradients(x: np.ndarray, params, dy: np.ndarray, **layer_options) -> tuple[np.ndarray, list[LayerParams]]:
    """Keras' own ``(dx, grads)`` for ``keras.layers.LSTM`` layers holding ``params``."""
    runner = KerasTraining("keras_gradients", "Keras' own gradients", **layer_options).runner(x, params, dy)
    runner.launch()
    return runner.result()[1:]


class KerasTrainingRunner(KerasRunner):
    """``launch()`` computes y and every gradient; ``result()`` is a ``TrainingResult``."""

    def time(self, warmup: int, repeats: int) -> list[float]:
        return wall_times(self.launch, warmup=warmup, repeats=repeats,
                          synchronize=lambda: [wait_for(t) for t in self.out])

    def result(self) -> TrainingResult:
        if self.out is None:
            raise RuntimeError("nothing launched")
        return as_training_result(self.out, self.cfg.layers)

    error = TrainingRunner.error  # the worst relative error of y, dx and every gradient


class KerasTraining(KerasLSTM):
    """A stack of ``keras.layers.LSTM`` with our weights, forward and backward, as a harness step."""

    # Checked and counted as our backward steps are: reference_training, BACKWARD_RTOL, dy, FLOPs.
    reference = staticmethod(reference_training)
    rtol, flop, extra_inputs = BackwardStep.rtol, BackwardStep.flop, BackwardStep.extra_inputs

    def runner(self, x: np.ndarray, params, dy: np.ndarray | None = None, **options) -> KerasTrainingRunner:
        from ..keras_bridge import keras_lstm_stack

        reject_options(self, options)
        x, params, cfg = validate_input(x, params)
        dy = validate_dy(dy, cfg)  # required: a missing gradient is a TypeError
        call = gradient_function(keras_lstm_stack(params, **self.layer_options), dy)
        return KerasTrainingRunner(self, cfg, call, import_keras().ops.convert_to_tensor(x))


KERAS_TRAINING = [
    KerasTraining("keras_cudnn_train", "keras.layers.LSTM forward + backward, use_cudnn='auto' (cuDNN on a GPU)",
                  use_cudnn="auto"),
    KerasTraining("keras_generic_train", "keras.layers.LSTM forward + backward, use_cudnn=False", use_cudnn=False),
]
