"""A time limit for grading: a candidate that never returns gets a verdict, not a hung notebook.

``time_limit(seconds)`` runs the body in the calling thread; a watcher thread waits, and when the
time is up it raises ``GradingTimeout`` inside the grading thread, and a quieter exception inside
every thread started since (the CUDA simulator runs each GPU thread as a Python thread: a
kernel's endless loop is there), using CPython's ``PyThreadState_SetAsyncExc``: the grading
thread every half second until the body has ended, the others once, woken if they sleep at a
barrier so that it arrives. No exception is left pending (nor cleared with NULL, which in
CPython 3.11 leaves the evaluation loop's flag set and slows every thread from then on). Such an exception arrives at the next
Python instruction, so it stops any loop written in Python, on the simulator and, for a step's
own methods, on a GPU; it cannot stop a kernel that loops on a real GPU (the host waits inside
the driver there), which only a GPU's own watchdog or a restart ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading


class GradingTimeout(BaseException):
    """Raised inside the grading thread when the time is up. A BaseException, so that the grader's
    own ``except Exception`` (which records a candidate's errors as evidence) lets it through."""


class _Stopped(Exception):
    """Raised inside the threads the candidate's run started (the simulator's GPU threads): an
    Exception, which the simulator records quietly, as it records any error of a GPU thread."""


def _raise_in(thread_id: int, exception) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


def _wake(thread) -> None:
    """Let a simulator thread that sleeps at a barrier (or before its first turn) run again, so
    that the exception sent to it arrives: one left pending in a sleeping thread would keep
    CPython's evaluation loop checking for it in every thread, slowing the whole process."""
    for event in ("syncthreads_event", "go"):  # numba's own simulator threads; ``schedule``'s
        if getattr(thread, event, None) is not None:
            if event == "syncthreads_event":
                thread.syncthreads_blocked = False
            getattr(thread, event).set()


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise ``GradingTimeout`` in the body (and stop the threads it started) after ``seconds``."""
    grader = threading.get_ident()
    before = {thread.ident for thread in threading.enumerate()}
    done = threading.Event()
    lock = threading.Lock()
    fired = []
    stopped = set()

    def watch():
        if done.wait(seconds):
            return
        while True:
            with lock:
                if done.is_set():
                    return
                _raise_in(grader, GradingTimeout)  # again and again, in case the candidate swallows it
                fired.append(True)
                for thread in threading.enumerate():  # threads the candidate's run started: once each
                    if thread.ident not in before and thread is not watcher and thread.ident not in stopped:
                        stopped.add(thread.ident)
                        _raise_in(thread.ident, _Stopped)
                        _wake(thread)
            done.wait(0.5)

    watcher = threading.Thread(target=watch, name="grading time limit", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            done.set()
        watcher.join()
        if fired:  # one sent after the body ended arrives here, not in the caller's code
            try:
                for _ in range(1000):
                    pass
            except GradingTimeout:
                pass
