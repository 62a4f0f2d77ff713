"""Whether this Python has what ``import fastlstm_lib`` needs, asked with the standard library alone.

The package imports NumPy and Numba at once. In a Python without them (the system's ``python3``,
not the course's ``.venv``), importing the package still succeeds, loads nothing else, and every
name asked of it raises an ``ImportError`` that names this interpreter and the fix. That keeps
``python -m fastlstm_lib doctor`` (and ``from fastlstm_lib.doctor import run``) working with any
Python 3: the doctor needs only the standard library and says what is missing, and where.
"""

from __future__ import annotations

import importlib.util
import sys

#: What the package imports at once (Keras, TensorFlow, matplotlib and tqdm load when first used).
NEEDED = ("numpy", "numba")


def missing() -> list[str]:
    """The packages of ``NEEDED`` this Python cannot import."""
    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def refusal(absent: list[str]):
    """A module ``__getattr__`` that raises, for any name, the ImportError naming what is absent."""

    def __getattr__(name):
        if name.startswith("__"):  # the import system's own questions (__path__, __file__, ...)
            raise AttributeError(name)
        raise ImportError(
            f"fastlstm_lib.{name} needs {' and '.join(absent)}, which this Python ({sys.executable}) "
            f"cannot import. Run the course's Python (`make lab` uses .venv/bin/python), or ask "
            f"`{sys.executable} -m fastlstm_lib doctor` for the fix."
        )

    return __getattr__
