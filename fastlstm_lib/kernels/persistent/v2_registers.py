"""Persistent version 2, ``persistent_registers``: U in registers, as Persistent RNNs keep it (notebook 09).

Version 1 keeps a block's columns of U in shared memory and reads them at every step: with 4
batch rows per thread, 8 128-bit shared loads feed 64 FFMAs (2 bytes of shared memory per FFMA,
where an SM's shared memory feeds about 1). Diamos et al. (2016) keep the weights in the register
file instead, the largest memory on the chip (256 KiB per SM on an H100: 33 MiB in all, U at
hidden 512 is 4 MiB). Here each thread holds 16 k x the 4 gates of one hidden unit, 64 floats,
loaded once per launch, and multiplies them by h_{t-1} staged in shared memory 128 bits at a
time, with 32-bit indices: the kernel's body, its plan and its rows are ``registers``' (shared
with version 3), where the steps are told one by one.

What is this version's own is the grid barrier between steps (``fenced_wait``): a counter that
each block's first thread adds itself to and waits on, with a fence before and after (what the
device runtime's grid barrier does). The device runtime's ``grid.sync()`` is a call, and a call
may clobber registers, so ptxas saved U to local memory around it at every step (156 bytes of
spills at batch 64); the kernel calls it once, at its start, before U is loaded: that call is what
makes Numba launch it cooperatively, which is what makes a spinning barrier safe (every block
resident, or the driver refuses the launch). The counter is one per stream (``barrier_counter``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from numba import cuda, uint32

from ...gpus import Chip
from ...runtime.device import DEVICE
from ...runtime.target import target
from ..spec import Spec
from .case import layer_case
from .cooperative import compile_cooperative
from .registers import (MAX_REGISTERS, SHAPES, RegisterLayout, arguments, builds, layer, launch_signature,
                        registers_traffic)
from . import registers


@dataclasses.dataclass(frozen=True)
class RegisterPlan(RegisterLayout):
    """How a (hidden, batch) layer is cut into a cooperative grid with U in registers
    (``registers.RegisterLayout``); ``launch`` launches this version's kernel for it."""

    def launch(self, x_gates, recurrent, bias, hs, stream=0) -> None:
        """One launch: the whole sequence of one layer (h staged a float at a time where hs's rows
        are not 16-byte aligned)."""
        DEVICE.announce()
        plan_ = self.for_output(hs)
        if target().compiles:  # not in a dry run (nothing runs) nor on the simulator
            prepared(plan_)
        args = arguments(x_gates, recurrent, bias, hs, barrier_counter(stream))
        persistent_registers_kernel(*plan_.kernel_key)[plan_.blocks, plan_.threads, stream, plan_.shared_bytes](*args)


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None) -> RegisterPlan:
    """``registers.plan`` for this version's kernel: one block per SM of the fewest units whose grid
    fits (see there for the arguments and PersistentLimitError)."""
    return registers.plan(hidden, batch, chip=chip, single_block=single_block, compiled=prepared, kind=RegisterPlan)


@cuda.jit(device=True, inline="always")
def fenced_wait(barrier, target):
    """Thread 0's part of the grid barrier: a fence (``MEMBAR.SC.GPU``), an atomic add to count its
    block in, atomic adds of 0 to poll until ``target`` blocks have, a fence."""
    cuda.threadfence()  # this block's h_t visible to the whole GPU before it counts itself in
    cuda.atomic.add(barrier, 0, uint32(1))
    while cuda.atomic.add(barrier, 0, uint32(0)) < target:
        pass
    cuda.threadfence()


@functools.lru_cache(maxsize=None)
def persistent_registers_kernel(hidden: int, units: int, batch: int, row_chunk: int, rows: int, vector_h: bool = True):
    """The kernel for one plan: ``registers.layer`` (every size a compile-time constant) with this
    version's barrier."""
    body = layer(RegisterPlan(hidden, batch, units, -(-hidden // units), row_chunk, rows, vector_h=vector_h), fenced_wait)

    @cuda.jit(**DEVICE.compile_options(max_registers=MAX_REGISTERS))
    def persistent_registers(x_gates, recurrent, bias, hs, steps, barrier):
        body(x_gates, recurrent, bias, hs, steps, barrier)

    return persistent_registers


_COUNTERS: dict = {}


def barrier_counter(stream):
    """The grid barrier's counter of launches on ``stream``: one per stream, so that launches on two
    streams never share one (each launch zeroes its own before its blocks count in)."""
    key = getattr(stream, "handle", stream)
    key = getattr(key, "value", key)
    if key not in _COUNTERS:
        _COUNTERS[key] = cuda.device_array(1, np.uint32)
    return _COUNTERS[key]


@functools.lru_cache(maxsize=None)
def prepared(candidate: RegisterPlan):
    """The plan's kernel compiled and opted in to its dynamic shared memory, once per plan."""
    return compile_cooperative(persistent_registers_kernel(*candidate.kernel_key), launch_signature(),
                               candidate.shared_bytes)


def case(size: str, rng) -> list:
    """The runner's case: one layer's sequence at ``SHAPES[size]``, against float64 from x."""
    return [layer_case(*SHAPES[size], plan,
                       lambda grid_: f"{grid_.blocks} blocks x {grid_.threads} threads, {grid_.row_chunk} rows a chunk")]


SPEC = Spec("persistent", 2, "persistent_registers", "1 with U in registers (16 k x 4 gates a thread), h staged "
            "128 bits at a time, 32-bit indices", ((0, 1, 2), (3,)), registers_traffic,
            lambda: builds("persistent_registers", persistent_registers_kernel, plan),
            role="persistent layer", colour="tab:cyan", batch_row="persistent_registers_b{batch}", staged_floats=4)
