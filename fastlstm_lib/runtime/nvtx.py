"""NVTX ranges: every pass of a step marked by name, so Nsight Systems shows where each one is.

``nvtx_range(name)`` is a context manager. On a GPU, with the ``nvtx`` package installed (Linux
and Windows: ``pyproject.toml``; no macOS wheel, and a Mac has no NVIDIA GPU), it pushes a range
in the "fastlstm" domain; a profiler that traces NVTX (``nsys profile -t cuda,nvtx``) draws it on
the host's row and projects it onto the GPU's. Without a profiler attached a range costs about a
microsecond. On the simulator, on a stand-in driver, or without the package it does nothing.

``Runner.launch`` (steps/base.py) wraps each forward pass in ``"<step> pass"``; the ladder
notebooks' ``lesson.nsight`` says how to record and what to look for.
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
