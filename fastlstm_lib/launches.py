"""Kernel launches: counting them, intercepting them, and what one costs from Python.

Every optimization in the ladder removes launches or makes them overlap, so the course counts
them (``count_launches``). The profile's dry run, the recorder of a pass (``replay.py``),
instrumented runs (``course/profile/instrument.py``) and the exercises' traces need every
``kernel[grid, block, stream, shared](*args)`` of a step too. All of them subscribe to one
interception, here:

- ``intercept(handler)``: inside the block, ``kernel[configuration]`` (``__getitem__`` on Numba's
  kernel class, the real one or the simulator's) returns ``handler(kernel, configuration, configure)``;
  ``configure(kernel, configuration)`` is the rest of the chain: the handlers subscribed before
  this one, then numba-cuda's own ``__getitem__``. A handler wraps what ``configure`` returns
  (counting, recording, tracing) or returns a callable of its own (the dry run launches nothing).
  Handlers nest like their ``with`` blocks, the innermost asked first: ``count_launches()`` around
  a dry run counts nothing (nothing is launched), inside one it counts what the dry run records.
- ``patched([(target, name, value), ...])``: any other attribute of Numba those tools replace
  for a block, every original put back after it, exception or not.

One module, so that numba-cuda's names (which change between releases) are fixed in one place
and interceptions compose instead of replacing one another. Nothing else in the library sets
attributes of Numba's objects for a block (``tests/test_architecture.py`` checks it). Outside any
``intercept`` block the class is numba-cuda's own, untouched: launches cost nothing extra.
"""

from __future__ import annotations

import contextlib
from collections import Counter

from numba import cuda

from .checks import check_int
from .runtime.device import DEVICE
from .runtime.numba_compat import function_name as kernel_name
from .timing import wall_times


@cuda.jit
def _empty_kernel(out):
    # Does (almost) nothing: what's left of its time is the cost of launching.
    if cuda.grid(1) == 0 and out.size == 0:
        out[0] = 0.0


def kernel_class():
    return type(_empty_kernel)


_MISSING = object()


@contextlib.contextmanager
def patched(patches):
    """``with patched([(target, name, value), ...]):`` each ``target.name = value`` for the
    duration of the block, every original restored after it, exception or not. The library's
    only way to replace an attribute of Numba for a while (see the module doc).

    What is put back is exactly what was there: the raw entry of the target's own ``__dict__``
    (a class's staticmethod stays one), or nothing when the name was inherited from a base class
    (the patch is deleted, so the class is left as it was found)."""
    originals = []
    try:
        for target, name, value in patches:
            own = getattr(target, "__dict__", None)
            original = own.get(name, _MISSING) if own is not None else getattr(target, name)
            setattr(target, name, value)
            originals.append((target, name, original))
        yield
    finally:
        for target, name, original in reversed(originals):
            if original is _MISSING:
                delattr(target, name)
            else:
                setattr(target, name, original)


#: The subscribed handlers, outermost first; and while there are any, numba-cuda's own
#: ``__getitem__`` and the patch that makes ``_dispatch`` the kernel class's ``__getitem__``.
_handlers: list = []
_numba: dict = {}


def _dispatch(kernel, configuration):
    """The kernel class's ``__getitem__`` while any handler is subscribed: the chain through them
    all, built for this launch, the innermost asked first."""
    configure = _numba["getitem"]
    for handler in _handlers:  # outermost first, so that the innermost is asked first
        configure = lambda kernel, configuration, handler=handler, inner=configure: handler(kernel, configuration, inner)
    return configure(kernel, configuration)


@contextlib.contextmanager
def intercept(handler):
    """``with intercept(handler):`` every ``kernel[configuration]`` in the block returns
    ``handler(kernel, configuration, configure)``; ``configure(kernel, configuration)`` configures
    it through the handlers outside this one, then numba-cuda (see the module doc)."""
    if not _handlers:  # the first one routes the kernel class's __getitem__ here
        cls = kernel_class()
        _numba["getitem"] = cls.__getitem__
        _numba["patch"] = patched([(cls, "__getitem__", _dispatch)])
        _numba["patch"].__enter__()
    _handlers.append(handler)  # the same handler may subscribe twice, nested
    try:
        yield
    finally:
        _handlers.remove(handler)  # right even if blocks end out of order: equal handlers are interchangeable
        if not _handlers:  # the last one gives numba-cuda its own __getitem__ back
            del _numba["getitem"]
            _numba.pop("patch").__exit__(None, None, None)


@contextlib.contextmanager
def count_launches():
    """``with count_launches() as launches: ...`` -> a Counter of launches by kernel name."""
    launches: Counter = Counter()

    def counting(kernel, configuration, configure):
        launches[kernel_name(kernel)] += 1
        return configure(kernel, configuration)

    with intercept(counting):
        yield launches


def launch_overhead_us(launches: int = 2000) -> float:
    """Microseconds per launch of an empty one-thread kernel, launched back to back from Python.

    The clock is read only after ``cuda.synchronize()``, so queued work is counted. On the
    simulator this measures Python threads, not a GPU.
    """
    launches = check_int("launches", launches)
    DEVICE.announce()
    dummy = cuda.device_array(1, dtype="float32")

    def launch_all():
        for _ in range(launches):
            _empty_kernel[1, 1](dummy)

    _empty_kernel[1, 1](dummy)  # compile and load outside the clock
    total_ms = wall_times(launch_all, warmup=0, repeats=1, synchronize=cuda.synchronize)[0]
    return total_ms / launches * 1e3
