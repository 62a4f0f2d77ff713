"""A Keras layer that trains on our kernels, and a task to train it on (notebook 42).

``FastLSTM`` (``layer.py``): like ``keras.layers.LSTM``, with the forward and backward passes of
the backward ladder's kernels. ``adding.py``: the adding problem, the same model with our layer
and with Keras' from the same weights, and the loss of every training step.

Importing this package imports Keras (``fl.keras_layer`` does it on first use).
"""

from .adding import MEAN_PREDICTOR_MSE, adding_problem, fit_losses, twin_lstm_models
from .layer import FastLSTM

__all__ = ["FastLSTM", "adding_problem", "twin_lstm_models", "fit_losses", "MEAN_PREDICTOR_MSE"]
