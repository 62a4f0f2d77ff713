"""Python's GIL, made measurable: why threads help batches that wait and not batches that compute.

``threads_take_turns``: the same pure-Python work in N threads against one after the other (same
wall time: they took turns). ``gil_handoff_us``: a call that lets go of the GIL costs microseconds
alone, but up to one switch interval beside a thread computing in Python (the "convoy effect").
``import fastlstm_lib`` shortens the interval for the CUDA simulator, so the measurements set
Python's default, ``PYTHON_SWITCH_INTERVAL_S``, themselves (``switch_interval``).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from ...checks import check_int, check_seconds
from .dataset import python_work

#: Python's default GIL switch interval (``sys.setswitchinterval`` documentation: 0.005 s).
PYTHON_SWITCH_INTERVAL_S = 0.005


@contextlib.contextmanager
def switch_interval(seconds: float = PYTHON_SWITCH_INTERVAL_S):
    """``sys.setswitchinterval(seconds)`` inside the block, the previous interval after it."""
    seconds = check_seconds("seconds", seconds)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def threads_take_turns(loops: int, n_threads: int = 2) -> dict:
    """``serial_s``, ``threads_s`` and ``speedup`` for ``n_threads`` runs of ``python_work(loops)``."""
    loops = check_int("loops", loops)
    n_threads = check_int("n_threads", n_threads)
    python_work(loops // 10)  # warm-up
    start = time.perf_counter()
    for _ in range(n_threads):
        python_work(loops)
    serial = time.perf_counter() - start
    threads = [threading.Thread(target=python_work, args=(loops,)) for _ in range(n_threads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    together = time.perf_counter() - start
    return {"n_threads": n_threads, "serial_s": serial, "threads_s": together, "speedup": serial / together}


def gil_handoff_us(*, calls: int = 40) -> dict:
    """Microseconds per ``time.sleep(0)`` (lets go of the GIL and takes it back) ``alone`` and
    ``beside_python_work`` in another thread, and the ``switch_interval_us`` in force."""
    calls = check_int("calls", calls)

    def per_call_us():
        start = time.perf_counter()
        for _ in range(calls):
            time.sleep(0)
        return (time.perf_counter() - start) / calls * 1e6

    alone = per_call_us()
    stop = threading.Event()

    def compute():
        while not stop.is_set():
            python_work(20_000)

    worker = threading.Thread(target=compute, daemon=True)
    worker.start()
    try:
        time.sleep(0.01)  # let it start computing
        beside = per_call_us()
    finally:
        stop.set()
        worker.join()
    return {"alone": alone, "beside_python_work": beside, "switch_interval_us": sys.getswitchinterval() * 1e6}
