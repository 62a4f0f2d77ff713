"""Counting, on the simulator, every element a kernel reads and writes: the formulas' referee.
``run_instrumented`` runs one launch with ``InstrumentedArray`` arguments, which log each access.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ...replay import normalized_configuration
from .formulas import kernel_description
from ...kernels.views import host_array, is_array


def current_thread() -> tuple | None:
    """(blockIdx, linear thread index in the block) of the simulated CUDA thread running now."""
    thread = threading.current_thread()
    if not hasattr(thread, "thread_id"):
        return None
    return tuple(thread.blockIdx), thread.thread_id


class InstrumentedArray:
    """A NumPy array as a simulated kernel sees it, logging each element read or written."""

    def __init__(self, array: np.ndarray, argument: str, log: list):
        self.array = array
        self.argument = argument
        self.log = log
        self.shape = tuple(array.shape)
        self.size = array.size
        self.ndim = array.ndim
        self.dtype = array.dtype
        self.pointer = array.__array_interface__["data"][0]
        root = array  # the allocation the view belongs to (cudaMalloc aligns those to 256 bytes)
        while isinstance(root.base, np.ndarray):
            root = root.base
        self.root = root.__array_interface__["data"][0]

    def _address(self, index) -> int:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != self.ndim or any(i < 0 for i in index):
            raise IndexError(f"instrumented arrays take one non-negative index per axis, got {index!r}")
        return self.pointer + sum(int(i) * stride for i, stride in zip(index, self.array.strides))

    def __getitem__(self, index):
        value = self.array[index]
        self.log.append((False, self._address(index), self.argument, current_thread()))
        return value

    def __setitem__(self, index, value):
        self.array[index] = value
        self.log.append((True, self._address(index), self.argument, current_thread()))

    def __len__(self) -> int:
        return len(self.array)


class Instrumented(NamedTuple):
    """One launch run with instrumented arrays: its configuration, the arrays by argument name, and
    the log, (write?, byte address, argument, (block, thread)) per element access, in issue order."""

    kernel: object
    grid: tuple
    block: tuple
    stream: object
    arrays: dict  # argument -> InstrumentedArray
    log: list


def run_instrumented(kernel, configuration, args, configure=None) -> Instrumented:
    """Launch ``kernel[configuration](*args)`` on the simulator with every array argument
    instrumented; ``configure``: how the launch is configured (default: the kernel class's)."""
    grid, block, stream, _ = normalized_configuration(configuration)
    _, names, _ = kernel_description(kernel)
    log: list = []
    arrays = {name: InstrumentedArray(host_array(value), name, log)
              for name, value in zip(names, args) if is_array(value)}
    wrapped = [arrays.get(name, value) for name, value in zip(names, args)]
    configure = configure or type(kernel).__getitem__
    configure(kernel, configuration)(*wrapped)
    return Instrumented(kernel, grid, block, stream, arrays, log)
