"""Deterministic thread schedules on Numba's CUDA simulator, so that a race shows every time.

The simulator runs each CUDA thread of a block as a Python thread, interleaved however Python's
scheduler likes: a kernel that forgets a ``cuda.syncthreads()`` is right on some runs and wrong
on others. To grade such a kernel we take the interleaving away. Inside ``ordered_threads()``
the threads of a block run one at a time, in a fixed order (ascending thread index, or
descending), each until it reaches a barrier (``syncthreads``, a grid ``sync``) or returns; then
the next one runs. A kernel with every barrier it needs gives the same result in both orders; a
kernel that reads what another thread has not written yet (or overwrites what another still
reads) gives two different results. That difference is the symptom of a missing barrier.

The same context poisons memory a kernel allocates for itself: new ``cuda.shared.array`` and
``cuda.local.array`` buffers of floats start as NaN instead of whatever ``np.empty`` held, so a
read of a shared tile entry nobody loaded (or an accumulator nobody zeroed) shows as NaN.

On a real GPU nothing here applies (``available()`` is False): the grader runs a kernel several
times instead and compares the results.
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


def _simulator_modules():
    from numba.cuda.simulator import kernel, kernelapi

    return kernel, kernelapi


def _turn_thread_class(block_thread):
    """A simulator thread that runs only when the manager hands it a turn."""

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

    return TurnThread


def _ordered_manager_class(block_thread, descending: bool):
    turn_thread = _turn_thread_class(block_thread)

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

            threads = [turn_thread(target, self, grid_point, point, self._debug)
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
def ordered_threads(order: str = "ascending"):
    """Run every simulated block's threads one at a time in ``order``; poison new shared and
    local float arrays with NaN. Only on the simulator (a RuntimeError elsewhere)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if not available():
        raise RuntimeError("thread orders exist only on Numba's CUDA simulator")
    kernel, kernelapi = _simulator_modules()
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
