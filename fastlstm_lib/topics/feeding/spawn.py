"""Spawn (the default start method on macOS and Windows): a worker receives its function and
arguments by pickle, so they must be importable by name; ``call_in_spawned_process`` shows it.
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
    """``function(*args)`` in a one-process *spawn* pool, waiting at most ``timeout_s``:
    {"outcome": "returned" | "raised" | "timed out", "detail": str}."""
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
