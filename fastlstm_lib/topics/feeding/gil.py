"""Python's GIL, made measurable: why threads help batches that wait and not batches that compute.

One interpreter runs Python bytecode in one thread at a time. A thread that computes keeps the
lock until it is asked to let go; a thread that waits for it asks, and gets it after at most the
*switch interval* (``sys.getswitchinterval()``, 5 ms by default). Two measurements:

- ``threads_take_turns``: the same pure-Python work in N threads at once against one after the
  other. Same wall time: the threads took turns; 1/N of it: they ran side by side.
- ``gil_handoff_us``: a call that lets go of the GIL for a moment (``time.sleep(0)``, or any
  C call that releases it) costs microseconds alone, but up to one switch interval when another
  thread computes meanwhile: it must wait to get the lock back (the "convoy effect"). A thread
  that needs the GIL many times for short moments, such as the one running ``fit()``, is slowed
  down by a feeding thread that computes in Python.

``switch_interval`` sets the interval for a block. ``import fastlstm_lib`` shortens it for
Numba's CUDA simulator (see ``fastlstm_lib.runtime.simulator``), so the feeding measurements set
Python's default, ``PYTHON_SWITCH_INTERVAL_S``, themselves: they then behave as in any program.
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
    """Seconds for ``n_threads`` runs of ``python_work(loops)``: one after the other in this
    thread (``serial_s``), and in ``n_threads`` threads at once (``threads_s``).
    ``speedup`` = serial / threads: about 1 when the threads take turns on the GIL."""
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


def gil_handoff_us(*, calls: int = 40, call=None) -> dict:
    """Microseconds per ``call()`` (default ``time.sleep(0)``, which lets go of the GIL and takes
    it back) in this thread: ``alone``, and ``beside_python_work`` while another thread runs
    pure-Python work. Reports the switch interval in force (``switch_interval_us``)."""
    calls = check_int("calls", calls)
    call = call if call is not None else (lambda: time.sleep(0))
    if not callable(call):
        raise TypeError(f"call must be a function of no arguments, got {type(call).__name__}")

    def per_call_us():
        start = time.perf_counter()
        for _ in range(calls):
            call()
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
