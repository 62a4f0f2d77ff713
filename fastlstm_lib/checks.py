"""Argument checks shared by the whole library: each says what was expected and what came.

One place, so that the LSTM steps, the CNN support and the data-feeding support reject the same
bad input with the same words (a bool is not an int, NaN is not a number anyone meant, an empty
list is not a list of sizes). The LSTM's own shapes (weights, inputs) are checked in ``params``.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

import numpy as np


def check_int(name: str, value, *, minimum: int = 1) -> int:
    """An int (Python or NumPy, not bool) >= ``minimum``: TypeError / ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_number(name: str, value, *, minimum: float | None = None) -> float:
    """A finite real number (not bool, never NaN or infinity), optionally at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    low = "" if minimum is None else f" >= {minimum:g}"
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        raise ValueError(f"{name} must be a finite number{low}, got {value}")
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
    from .runtime.keras_backend import import_keras

    keras = import_keras()
    if not isinstance(model, keras.Model):
        raise TypeError(f"{name} must be a keras.Model{hint}, got {type(model).__name__}")
    return keras


def check_str(name: str, value, *, example: str = "") -> str:
    """A non-empty str (a name: a step, a GPU). ``example`` shows one in the message."""
    wanted = f"a non-empty str{f' such as {example!r}' if example else ''}"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return value


def check_str_list(name: str, values, *, choices=None) -> list[str]:
    """A non-empty sequence of non-empty strs, each one of ``choices`` when given."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of strs, got {type(values).__name__} {values!r}")
    if not values:
        raise ValueError(f"{name} must hold at least one str, got an empty {type(values).__name__}")
    values = [check_str(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if choices is not None:
        for i, value in enumerate(values):
            check_choice(f"{name}[{i}]", value, tuple(choices))
    return values


def check_path(name: str, path) -> Path:
    """A file system path: a str or os.PathLike (not empty) -> pathlib.Path."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(path).__name__} {path!r}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(path).__name__} {path!r}")
    if not text.strip():
        raise ValueError(f"{name} must be a path (str or os.PathLike), got an empty str")
    return Path(text)


def check_writable_path(name: str, path, *, make_parents: bool = False) -> Path:
    """A path a file can be written to, checked before any work: not a directory, its directory
    existing (or, with ``make_parents``, creatable) and writable. Returns a pathlib.Path."""
    path = check_path(name, path)

    def refuse(reason: str):
        return ValueError(f"{name} must be a file path that can be written, got {str(path)!r}: {reason}")

    if path.is_dir():
        raise refuse("it is a directory")
    directory = path.parent
    if make_parents:
        while not directory.exists() and directory != directory.parent:
            directory = directory.parent
    elif not directory.exists():
        raise refuse(f"its directory {str(directory)!r} does not exist")
    if not directory.is_dir():
        raise refuse(f"{str(directory)!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise refuse(f"no permission to write in {str(directory)!r}")
    if path.exists() and not os.access(path, os.W_OK):
        raise refuse("the file exists and may not be written")
    return path


def check_dict(name: str, value, keys, source: str) -> dict:
    """A dict holding every one of ``keys``, as ``source`` returns it: TypeError / ValueError
    naming what it lacks."""
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict from {source}, got {type(value).__name__}")
    missing = [key for key in keys if key not in value]
    if missing:
        raise ValueError(f"{name} lacks {missing}: expected a dict from {source}")
    return value


def check_records(name: str, values, keys, source: str) -> list:
    """A list (or tuple) of ``check_dict`` dicts from ``source``: rows, results."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of {source} results (dicts), got {type(values).__name__}")
    for index, value in enumerate(values):
        check_dict(f"{name}[{index}]", value, keys, source)
    return values
