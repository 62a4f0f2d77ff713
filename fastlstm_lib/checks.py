"""Argument checks shared by the whole library: each says what was expected and what came.

One place, so that the LSTM steps, the CNN support and the data-feeding support reject the same
bad input with the same words (a bool is not an int, NaN is not a number anyone meant, an empty
list is not a list of sizes). The LSTM's own shapes (weights, inputs) are checked in ``params``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def check_int(name: str, value, *, minimum: int = 1) -> int:
    """An int (Python or NumPy, not bool) >= ``minimum``: TypeError / ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_number(name: str, value, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """A finite real number (not bool, never NaN or infinity), optionally within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    low = "" if minimum is None else f" >= {minimum:g}"
    high = "" if maximum is None else f" <= {maximum:g}"
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number{low}{high}, got {value}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be a finite number{low}{high}, got {value}")
    return value


def check_fraction(name: str, value, *, upper: float = 1.0, why: str = "") -> float:
    """A number in [0, upper): a dropout rate, a share. ``why`` explains the upper bound."""
    value = check_number(name, value)
    if not 0.0 <= value < upper:
        raise ValueError(f"{name} must be in [0, {upper:g}){why}, got {value}")
    return value


def check_seconds(name: str, value) -> float:
    """A time limit: a finite number of seconds > 0."""
    value = check_number(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value}")
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_choice(name: str, value, choices) -> str:
    """One of ``choices`` (a tuple of strings)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_int_list(name: str, values, *, minimum: int = 1) -> list[int]:
    """A non-empty sequence of ints >= ``minimum`` (batch sizes, say)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of ints >= {minimum}, got {type(values).__name__} {values!r}")
    values = [check_int(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(values)]
    if not values:
        raise ValueError(f"{name} must hold at least one int, got an empty list")
    return values


def check_array(name: str, value, dtypes: tuple) -> np.ndarray:
    """A NumPy array of one of ``dtypes``; the message suggests the conversion when float32 is wanted."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got {type(value).__name__}")
    if value.dtype not in dtypes:
        wanted = " or ".join(str(np.dtype(d)) for d in dtypes)
        raise TypeError(
            f"{name} must have dtype {wanted}, got {value.dtype}"
            + (" (convert with .astype(np.float32))" if np.float32 in dtypes else "")
        )
    return value


def check_keras_model(name: str, model, *, hint: str = ""):
    """A Keras model (``keras.Model``, Sequential included): TypeError otherwise. Returns keras."""
    from .keras_backend import import_keras

    keras = import_keras()
    if not isinstance(model, keras.Model):
        raise TypeError(f"{name} must be a keras.Model{hint}, got {type(model).__name__}")
    return keras
