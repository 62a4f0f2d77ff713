"""Every kernel's FLOPs and global-memory traffic, as formulas of its launch: ``traffic`` applies
the formula its ``Spec`` carries (``FORMULAS``), giving a ``kernels.spec.Traffic`` (flop, loads
and stores per argument, the views read, written and read before written).
"""

from __future__ import annotations

import inspect

from ...kernels.spec import Traffic
from ...kernels.versions import every
from ...kernels.views import is_array, view_of
from ...runtime.numba_compat import function_name

#: Kernel name -> its formula, for every kernel version that has one (the training kernels have none).
FORMULAS = {spec.name: spec.traffic for spec in every() if spec.traffic is not None}


_DESCRIPTIONS: dict = {}


def kernel_description(kernel) -> tuple:
    """(name, argument names, constants: the values its factory baked in, its closure's free
    variables) of a kernel; cached, and the cache keeps the kernel alive, so that an id is never
    reused for another."""
    cached = _DESCRIPTIONS.get(id(kernel))
    if cached is None:
        function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
        cells = getattr(function, "__closure__", None) or ()
        constants = {name: cell.cell_contents for name, cell in zip(function.__code__.co_freevars, cells)}
        arguments = list(inspect.signature(function).parameters)
        cached = _DESCRIPTIONS[id(kernel)] = (kernel, function_name(kernel), arguments, constants)
    return cached[1:]


def traffic(kernel, grid: tuple, block: tuple, args: tuple) -> tuple[Traffic, dict]:
    """(the formula of ``kernel`` applied to one launch, its arguments by name); grid and block
    are 3-tuples."""
    name, names, constants = kernel_description(kernel)
    if name not in FORMULAS:
        raise ValueError(f"no traffic formula for kernel {name!r}; known: {', '.join(FORMULAS)}")
    named = dict(zip(names, args))
    return FORMULAS[name](named, grid, block, constants), named


def byte_counts(counts: dict, named: dict) -> int:
    """Bytes of per-argument element counts (loads or stores)."""
    return sum(n * view_of(named[arg]).itemsize for arg, n in counts.items())


def array_count(args: tuple) -> int:
    """How many of a launch's arguments are arrays (what a Python launch pays for, per argument)."""
    return sum(1 for value in args if is_array(value))
