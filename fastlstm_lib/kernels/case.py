"""One run of a kernel version, as its file writes it: ``Case`` (what to launch, its outputs, the
float64 answers, its work and tolerance), ``Unavailable`` (a version that cannot run here), and the
helpers every version's ``case(size, rng)`` uses. The runner (``runner.py``) checks and times them.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
from numba import cuda

from ..numerics import RTOL, relative_error


class Unavailable(RuntimeError):
    """A version that cannot run here (cuBLAS without torch or a GPU): skipped, saying why."""


@dataclasses.dataclass
class Case:
    """One run of a kernel version: ``launch()`` runs it on the device arrays; ``outputs`` names
    them, ``expected`` holds the float64 answers; ``flop`` and ``bytes`` are one launch's work."""

    shape: str
    launch: Callable[[], None]
    outputs: dict
    expected: dict
    flop: float
    bytes: float
    reset: Callable[[], None] = lambda: None  # puts in-place outputs and any switch the case sets back before a check (timing follows one)
    rtol: float = RTOL  # its tolerance, from the one table (numerics.TOLERANCES)
    variant: str = ""  # what else sets this case apart from the version's plain run at ``shape``

    def error(self) -> float:
        """The largest relative error over the outputs (``relative_error``: inf on any NaN)."""
        return max(relative_error(self.outputs[name].copy_to_host(), want) for name, want in self.expected.items())


def f32(rng, *shape, scale=1.0):
    """A fresh float32 array of ``shape``: standard normal values times ``scale``."""
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def poisoned(*shape):
    """A device array of ``shape`` full of NaN: an element a kernel forgets to write fails the check."""
    return cuda.to_device(np.full(shape, np.nan, np.float32))
