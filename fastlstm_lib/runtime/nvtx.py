"""NVTX ranges: every pass of a step marked by name, so Nsight Systems shows where each one is.

``nvtx_range(name)`` pushes a range in the "fastlstm" domain on a GPU with the ``nvtx`` package
(no macOS wheel); on the simulator, on a stand-in driver or without the package it does nothing.
"""

from __future__ import annotations

import contextlib
import functools

from .device import DEVICE

DOMAIN = "fastlstm"


@functools.lru_cache(maxsize=1)
def _nvtx():
    """The ``nvtx`` module where a range can mean something (a real GPU), else None."""
    if not DEVICE.timed:
        return None
    try:
        import nvtx
    except ImportError:
        return None
    return nvtx


def nvtx_range(name: str):
    """A context manager: an NVTX range called ``name`` in the "fastlstm" domain, or nothing."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {type(name).__name__} {name!r}")
    library = _nvtx()
    return contextlib.nullcontext() if library is None else library.annotate(name, domain=DOMAIN)
