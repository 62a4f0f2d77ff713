"""How a Python function becomes a driver entry point: ctypes signatures, error codes, timing.

``@entry("cuMemAlloc", P(c_ulonglong), c_size_t)`` registers the function under the driver's
name with its C signature. The wrapper returns CUDA_SUCCESS, or the CUresult a ``DriverError``
names; an unexpected exception is kept in ``STATE.errors`` and answered CUDA_ERROR_UNKNOWN, so
a bug in the fake cannot pass for success. The time spent inside is added to
``STATE.driver_seconds``.
"""

from __future__ import annotations

import ctypes
import time

from . import store as _state

P = ctypes.POINTER
ENTRIES: dict[str, object] = {}  # driver name -> ctypes function pointer (kept alive here)


class DriverError(Exception):
    """Answer the driver call with this CUresult (by name), after recording why."""

    def __init__(self, code: str, why: str = ""):
        super().__init__(f"{code}: {why}")
        self.code, self.why = code, why


def result_code(name: str) -> int:
    from cuda.bindings.driver import CUresult

    return int(getattr(CUresult, name))


def entry(name: str, *argtypes, aliases: tuple = ()):
    def register(function):
        def wrapper(*args):
            state = _state.STATE
            started = time.perf_counter()
            try:
                function(state, *args)
                return 0
            except DriverError as error:
                state.refused.append((name, error.code, error.why))
                state.log("refused", api=name, code=error.code, why=error.why)
                return result_code(error.code)
            except BaseException as error:  # a bug in the fake must not look like success
                state.errors.append((name, repr(error)))
                return result_code("CUDA_ERROR_UNKNOWN")
            finally:
                state.driver_seconds += time.perf_counter() - started

        pointer = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(wrapper)
        for each in (name, *aliases):
            ENTRIES[each] = pointer
        return function

    return register


def resolve(name: str, version: int) -> int | None:
    """The address of the entry point called ``name``, or None (the driver has no such function)."""
    pointer = ENTRIES.get(name)
    if pointer is None:
        return None
    return ctypes.cast(pointer, ctypes.c_void_p).value


def put(pointer, value) -> None:
    """Write ``value`` through an output argument (a ctypes pointer)."""
    pointer[0] = value
