"""A Keras layer that trains on our kernels (``FastLSTM``, ``layer.py``) and the adding problem
to train it on (``adding.py``), notebook 42. Importing this package imports Keras.
"""

from .adding import MEAN_PREDICTOR_MSE, adding_problem, fit_losses, twin_lstm_models
from .layer import FastLSTM

__all__ = ["FastLSTM", "adding_problem", "twin_lstm_models", "fit_losses", "MEAN_PREDICTOR_MSE"]
