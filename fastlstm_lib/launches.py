"""Kernel launches: how many a step makes, and what one costs from Python.

Every optimization in the ladder removes launches or makes them overlap, so the course counts
them. ``count_launches`` intercepts ``kernel[grid, block]`` on Numba's kernel class (the real
dispatcher on a GPU, the fake one on the simulator), so it sees every kernel of every step.
"""

from __future__ import annotations

import contextlib
from collections import Counter

from numba import cuda

from . import simulator
from .checks import check_int
from .timing import wall_times


@cuda.jit
def _empty_kernel(out):
    # Does (almost) nothing: what's left of its time is the cost of launching.
    if cuda.grid(1) == 0 and out.size == 0:
        out[0] = 0.0


def kernel_class():
    return type(_empty_kernel)


def kernel_name(kernel) -> str:
    function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    return getattr(function, "__name__", repr(kernel))


@contextlib.contextmanager
def patched(patches):
    """``with patched([(target, name, value), ...]):`` each ``target.name = value`` for the
    duration of the block, every original restored after it (how the course intercepts Numba:
    ``count_launches``, the dry run of ``fl.profile``, the recording of ``replay.py``)."""
    originals = [(target, name, getattr(target, name)) for target, name, _ in patches]
    try:
        for target, name, value in patches:
            setattr(target, name, value)
        yield
    finally:
        for target, name, original in reversed(originals):
            setattr(target, name, original)


@contextlib.contextmanager
def count_launches():
    """``with count_launches() as launches: ...`` -> a Counter of launches by kernel name."""
    cls = kernel_class()
    original = cls.__getitem__
    launches: Counter = Counter()

    def counting_getitem(self, launch_config):
        launches[kernel_name(self)] += 1
        return original(self, launch_config)

    with patched([(cls, "__getitem__", counting_getitem)]):
        yield launches


def launch_overhead_us(launches: int = 2000) -> float:
    """Microseconds per launch of an empty one-thread kernel, launched back to back from Python.

    The clock is read only after ``cuda.synchronize()``, so queued work is counted. On the
    simulator this measures Python threads, not a GPU.
    """
    launches = check_int("launches", launches)
    simulator.announce()
    dummy = cuda.device_array(1, dtype="float32")

    def launch_all():
        for _ in range(launches):
            _empty_kernel[1, 1](dummy)

    _empty_kernel[1, 1](dummy)  # compile and load outside the clock
    total_ms = wall_times(launch_all, warmup=0, repeats=1, synchronize=cuda.synchronize)[0]
    return total_ms / launches * 1e3
