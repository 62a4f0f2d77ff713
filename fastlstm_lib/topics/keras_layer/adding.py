"""The adding problem (Hochreiter & Schmidhuber 1997, experiment 4), and training our layer beside
Keras' LSTM from the same weights (notebook 42).
"""

from __future__ import annotations

import numpy as np

from ...checks import check_int, check_keras_model, check_number, check_str
from ...runtime.keras_backend import import_keras
from .layer import FastLSTM

#: MSE of always predicting the mean target: Var(u1 + u2) for two independent uniform [0, 1) values.
MEAN_PREDICTOR_MSE = 1 / 6


def adding_problem(samples: int, seq_len: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(x (samples, seq_len, 2) float32, y (samples, 1) float32): values and markers, and their marked sum."""
    samples = check_int("samples", samples)
    seq_len = check_int("seq_len", seq_len, minimum=2)
    rng = np.random.default_rng(seed)
    values = rng.random((samples, seq_len))
    half = seq_len // 2
    first = rng.integers(0, half, samples)  # one marker in each half
    second = rng.integers(half, seq_len, samples)
    markers = np.zeros((samples, seq_len))
    rows = np.arange(samples)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = np.stack([values, markers], axis=-1).astype(np.float32)
    y = (values[rows, first] + values[rows, second])[:, None].astype(np.float32)
    return x, y


def twin_lstm_models(seq_len: int, units: int, *, seed: int = 0, optimizer: str = "sgd", learning_rate: float = 0.05):
    """(ours, keras'): Input -> FastLSTM(units) or keras.layers.LSTM(units) -> Dense(1), the same
    initial weights (Keras' initializers, seeded), each compiled with its own ``optimizer`` ("sgd",
    "adam", ...) at ``learning_rate``, and the MSE loss."""
    seq_len, units = check_int("seq_len", seq_len), check_int("units", units)
    learning_rate = check_number("learning_rate", learning_rate, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    check_str("optimizer", optimizer, example="sgd")
    keras = import_keras()
    models = []
    for lstm in (FastLSTM(units), keras.layers.LSTM(units)):
        try:  # a fresh optimizer for each model
            chosen = keras.optimizers.get({"class_name": optimizer, "config": {"learning_rate": learning_rate}})
        except (ValueError, TypeError) as error:
            raise ValueError(f"optimizer must name a Keras optimizer such as 'sgd' or 'adam', got {optimizer!r}") from error
        keras.utils.set_random_seed(seed)  # the same draws for both
        model = keras.Sequential([keras.Input((seq_len, 2)), lstm, keras.layers.Dense(1)])
        model.compile(optimizer=chosen, loss="mse")
        models.append(model)
    models[0].set_weights(models[1].get_weights())
    return tuple(models)


def fit_losses(model, x: np.ndarray, y: np.ndarray, *, batch_size: int, epochs: int = 1, callbacks=()) -> np.ndarray:
    """``model.fit`` (no shuffling), returning the loss of every step, in order.

    Keras reports a running mean over the epoch's steps; the loss of step k is recovered from
    two consecutive means: k * mean_k - (k - 1) * mean_{k-1}."""
    keras = check_keras_model("model", model)
    batch_size, epochs = check_int("batch_size", batch_size), check_int("epochs", epochs)
    for name, array in (("x", x), ("y", y)):
        if not isinstance(array, np.ndarray) or array.ndim == 0 or len(array) == 0:
            raise TypeError(f"{name} must be a non-empty NumPy array (samples first), got "
                            f"{type(array).__name__}{' of shape ' + str(array.shape) if isinstance(array, np.ndarray) else ''}")
    if len(x) != len(y):
        raise ValueError(f"x and y must hold the same number of samples, got {len(x)} and {len(y)}")
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks must be a list of keras.callbacks.Callback, got {type(callbacks).__name__}")

    class StepLosses(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.means: list[list[float]] = []

        def on_epoch_begin(self, epoch, logs=None):
            self.means.append([])

        def on_train_batch_end(self, batch, logs=None):
            self.means[-1].append(float(logs["loss"]))

    recorder = StepLosses()
    model.fit(x, y, batch_size=batch_size, epochs=epochs,
              shuffle=False, verbose=0, callbacks=[recorder, *callbacks])
    losses = []
    for means in recorder.means:
        k = np.arange(1, len(means) + 1)
        totals = k * np.asarray(means, dtype=np.float64)
        losses.extend(np.diff(totals, prepend=0.0))
    return np.asarray(losses)
