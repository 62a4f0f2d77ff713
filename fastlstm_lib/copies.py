"""Shared inputs stay shared only where nobody can change them: read-only when cached, fresh
copies when handed out.

The harness and the grader build one problem (x, weights, reference output) per size and reuse
it for every step and every candidate. A step or a learner's code that wrote into those arrays
would change what the next call is checked against, and blame the wrong code. So the cached
arrays are made read-only (``frozen``) and every caller gets its own copy (``fresh``).
"""

from __future__ import annotations

import copy

import numpy as np


def frozen(value):
    """``value`` with every NumPy array inside it (tuples, lists, named tuples, dicts) made
    read-only, in place; returned for chaining."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, dict):
        for item in value.values():
            frozen(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            frozen(item)
    return value


def fresh(value):
    """A copy of ``value`` that its caller owns: every array copied (and writable), containers
    rebuilt with the same types (a ``LayerParams`` stays one)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return type(value)((key, fresh(item)) for key, item in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(fresh(item) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(fresh(item) for item in value)
    return copy.deepcopy(value)
