"""Spawn: what the *spawn* start method (the default on macOS and Windows) asks of the code it runs.

A spawned worker is a fresh interpreter that receives its function and arguments by pickle,
so they must be importable by name there. ``call_in_spawned_process`` runs one call that way,
with a time limit, and reports whether it returned, raised, or never answered (the worker died
unpickling it, and the pool waits for a result that will not come).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.reduction import ForkingPickler
import os
import sys

from ...checks import check_seconds


def _quiet_worker() -> None:
    # A worker that dies prints its traceback to stderr; in a notebook that would land in the
    # cell's output. The outcome is reported by call_in_spawned_process instead.
    sys.stderr = open(os.devnull, "w")


def call_in_spawned_process(function, *args, timeout_s: float = 10.0) -> dict:
    """Run ``function(*args)`` in a one-process pool started with *spawn* (a fresh interpreter
    that receives the function and arguments by pickle). Never waits more than ``timeout_s``.

    Returns {"outcome": "returned" | "raised" | "timed out", "detail": str}."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    timeout_s = check_seconds("timeout_s", timeout_s)
    try:  # what the pool would send; its error names the cause the same way on every Python
        ForkingPickler.dumps((function, args))
    except Exception as error:  # noqa: BLE001 - PicklingError, or AttributeError on Python 3.13 and newer
        return {"outcome": "raised", "detail": f"cannot be pickled for the spawned process: "
                                               f"{type(error).__name__}: {error}"}
    pool = multiprocessing.get_context("spawn").Pool(1, initializer=_quiet_worker)
    try:
        pending = pool.apply_async(function, args)
        try:
            return {"outcome": "returned", "detail": repr(pending.get(timeout=timeout_s))}
        except multiprocessing.TimeoutError:
            return {"outcome": "timed out", "detail": f"no answer within {timeout_s:g} s"}
        except Exception as error:  # noqa: BLE001 - reporting what the user's code raised
            return {"outcome": "raised", "detail": f"{type(error).__name__}: {error}"}
    finally:
        pool.terminate()  # also ends a worker stuck on a task it could not unpickle
        pool.join()
