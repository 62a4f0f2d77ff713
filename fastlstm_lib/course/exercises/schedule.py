"""Deterministic thread schedules on Numba's CUDA simulator, so that a race shows every time.

Inside ``ordered_threads(order)`` the threads of a block run one at a time, ascending or
descending, each until a barrier or its end: a kernel missing a barrier gives two different
results. New shared and local float arrays start as NaN, so a read nobody wrote shows. On a
real GPU (``available()`` False) the grader runs a kernel twice instead.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ...runtime.device import DEVICE
from ...launches import patched

#: The two orders every kernel exercise is run in on the simulator.
ORDERS = ("ascending", "descending")


def available() -> bool:
    """Whether threads can be ordered here: only on the simulator."""
    return DEVICE.small


def _ordered_manager_class(block_thread, descending: bool):
    """The simulator's BlockManager with threads (``TurnThread``) that run only when handed a turn."""

    class TurnThread(block_thread):
        def __init__(self, *args):
            super().__init__(*args)
            self.go = threading.Event()
            self.paused = threading.Event()
            self.finished = False

        def run(self):
            try:
                self.go.wait()
                self.go.clear()
            except Exception:  # stopped before its first turn (the grader's time limit): nothing ran
                self.finished = True
                self.paused.set()
                return
            try:
                super().run()  # stores an exception in self.exception instead of raising
            finally:
                self.finished = True
                self.paused.set()

        def syncthreads(self):
            if self.abort:
                raise RuntimeError("aborted: another thread raised")
            self.paused.set()  # give the turn back at the barrier...
            self.go.wait()  # ...and wait for the next phase
            self.go.clear()
            if self.abort:
                raise RuntimeError("aborted: another thread raised")

        def take_turn(self):
            self.paused.clear()
            self.go.set()
            self.paused.wait()

    class OrderedBlockManager:
        """Drop-in for the simulator's BlockManager: one thread at a time, in a fixed order."""

        def __init__(self, f, grid_dim, block_dim, debug):
            self._f = f
            self._grid_dim = grid_dim
            self._block_dim = block_dim
            self._debug = debug
            self.block_state = np.zeros(block_dim, dtype=np.bool_)  # used by syncthreads_count & co

        def run(self, grid_point, *args):
            def target():
                self._f(*args)

            threads = [TurnThread(target, self, grid_point, point, self._debug)
                       for point in np.ndindex(*self._block_dim)]
            threads.sort(key=lambda t: t.thread_id, reverse=descending)
            for thread in threads:
                thread.start()
            live = threads
            try:
                while live:  # one phase: every live thread runs up to its next barrier
                    for thread in live:
                        thread.take_turn()
                        if thread.exception:
                            error, traceback = thread.exception
                            raise error.with_traceback(traceback)
                    live = [t for t in live if not t.finished]
            finally:
                for thread in threads:  # wake anything still waiting at a barrier, then let it end
                    thread.abort = True
                    thread.go.set()
                for thread in threads:
                    thread.join(timeout=5)

    return OrderedBlockManager


class _PoisonedAllocations(dict):
    """The simulator's record of a launch's shared arrays: new float arrays start as NaN."""

    def __setitem__(self, key, array):
        if isinstance(array, np.ndarray) and array.dtype.kind == "f":
            array.fill(np.nan)
        super().__setitem__(key, array)


@contextlib.contextmanager
def ordered_threads(order: str):
    """Run each simulated block's threads one at a time in ``order``; new float arrays start as NaN."""
    from numba.cuda.simulator import kernel, kernelapi

    original_shared_init = kernelapi.FakeCUDAShared.__init__
    original_local_array = kernelapi.FakeCUDALocal.array

    def shared_init(self, dynshared_size):
        original_shared_init(self, dynshared_size)
        self._allocations = _PoisonedAllocations()

    def local_array(self, shape, dtype, alignment=None):
        # numba's built-in simulator (no numba-cuda) takes no alignment
        array = original_local_array(self, shape, dtype, *([] if alignment is None else [alignment]))
        if array.dtype.kind == "f":
            array.fill(np.nan)
        return array

    with patched([(kernel, "BlockManager", _ordered_manager_class(kernel.BlockThread, order == "descending")),
                  (kernelapi.FakeCUDAShared, "__init__", shared_init),
                  (kernelapi.FakeCUDALocal, "array", local_array)]):  # the simulator's own, back after it
        yield
