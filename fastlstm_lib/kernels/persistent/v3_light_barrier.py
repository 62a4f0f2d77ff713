"""Persistent version 3, ``persistent_light_barrier``: version 2 with a light grid barrier, the
launch's guards and h double-buffered (issue 67, items 2-5; notebook 09).

The kernel is version 2's (``registers.layer``: U in registers, 16 k x 4 gates a thread, h staged
128 bits at a time, 32-bit indices), but for what happens between two time steps and around a launch:

1. **The grid barrier is release/acquire** (``light_wait``, intrinsics from ``barrier``): after the block's ``bar.sync``, thread 0
   adds itself to the counter with ``red.release.gpu.global.add.u32`` and polls it with
   ``ld.acquire.gpu.global.u32`` until every block has arrived, then the block's ``bar.sync``.
   Version 2 fenced with ``threadfence()`` (``MEMBAR.SC.GPU``, sequentially consistent) before
   and after, and polled with an atomic add of 0: a read-modify-write at L2 every trip. Here a
   release fence and a reduction arrive, and a plain strong load polls (the pattern of CUTLASS's
   ``GenericBarrier``: ``cutlass/barrier.h``). The intrinsics are inline PTX with a memory clobber,
   so the poll stays in the loop (``cuda.ldcv`` polling was hoisted out of it and would hang).
2. **The cooperative launch is asserted** (``barrier.require_cooperative``): the spin is safe only
   if every block is resident at once, which a cooperative launch guarantees (or the driver
   refuses it). Numba launches a kernel cooperatively exactly when it calls
   ``cuda.cg.this_grid().sync()``: the kernel's one call, at its start; ``launch`` checks that the
   compiled kernel says it will be launched so, and raises ``NotCooperativeError`` (launching
   nothing) where it would not.
3. **A counter per launch that may overlap another** (``barrier.COUNTERS``): launches on one
   stream run one after another and share the stream's counter (held as long as the stream
   object, so a recycled driver handle gets a new one); a launch captured into a CUDA Graph gets a
   counter of its own, taken from a reserve allocated outside the capture, so two graphs (or two
   instantiations of one) launched on two streams at once never share one. Block 0 zeroes it
   before the kernel's first ``grid.sync()``: no memset, and no reset between graph replays.
4. **The 32-bit index range is checked** before anything is launched (``check_index_range``): the
   flat offsets into x_gates (T x B x 4H floats), hs (T x B x H) and U (H x 4H) are uint32, and
   wrap silently once an array reaches 2^32 elements; ``launch`` raises a ``ValueError`` naming
   the sizes instead.

5. **h's row chunks are double-buffered** (issue 67, item 5): where the batch takes 2 or more
   chunks (batch 64 at hidden 512: 2 of 32 rows) and a second staged buffer fits the block's
   shared memory (the H100's 227 KiB: 195 KiB with it, 131 KiB without; an A100's 163 KiB does
   not hold it, and that plan stages in one), chunk m + 1 is staged into the other buffer while
   chunk m is multiplied: each multiplication of 2 rows (128 FFMAs) is preceded by the loads of 2
   of the next chunk's 128-bit pieces and followed by their stores, so L2's latency is spent under
   FFMAs instead of between them. The compile matrix's sm_90 row: the loop is 171 instructions
   (v2's 153) for 8 floats staged, no spills; unmeasured on a GPU.

Planning is version 2's (``registers.plan``: one block per SM of the fewest units that fit, U
within the register cap) with the second buffer where it fits (``double_h``); the step keeps
version 2 in its "fast" policy until a GPU has timed both.
"""

from __future__ import annotations

import dataclasses
import functools

from numba import cuda

from ...gpus import Chip
from ...runtime.device import DEVICE
from ...runtime.target import target
from ..spec import Spec
from .barrier import COUNTERS, arrive, poll, require_cooperative
from .case import layer_case
from .cooperative import compile_cooperative
from .registers import (MAX_REGISTERS, SHAPES, RegisterLayout, arguments, builds, layer, launch_signature,
                        registers_traffic)
from . import registers

#: The flat offsets are uint32: every array the kernel indexes must hold fewer elements than this.
INDEX_LIMIT = 2 ** 32


def check_index_range(steps: int, batch: int, hidden: int) -> None:
    """ValueError, naming the sizes, where a flat uint32 offset of the kernel would wrap: x_gates
    (steps x batch x 4 hidden floats), hs (steps x batch x hidden), U (hidden x 4 hidden)."""
    arrays = {"x_gates": (f"steps x batch x 4 hidden = {steps} x {batch} x {4 * hidden}", steps * batch * 4 * hidden),
              "hs": (f"steps x batch x hidden = {steps} x {batch} x {hidden}", steps * batch * hidden),
              "recurrent": (f"hidden x 4 hidden = {hidden} x {4 * hidden}", hidden * 4 * hidden)}
    over = [f"{name} has {sizes} = {count:,} elements" for name, (sizes, count) in arrays.items() if count >= INDEX_LIMIT]
    if over:
        raise ValueError(
            f"persistent version 3 indexes its arrays with 32-bit offsets, which reach 2^32 = {INDEX_LIMIT:,}: "
            f"{'; '.join(over)}. Launch the sequence in parts of fewer steps (or a smaller batch) so that "
            f"steps x batch x 4 hidden stays below 2^32; nothing was launched.")


@dataclasses.dataclass(frozen=True)
class LightBarrierPlan(RegisterLayout):
    """How a (hidden, batch) layer is cut into a cooperative grid with U in registers
    (``registers.RegisterLayout``), launching this version's kernel. ``start_sync`` False builds
    the kernel without its one ``grid.sync()``, which ``launch`` refuses (a test's way to show it)."""

    start_sync: bool = True

    @property
    def kernel_key(self) -> tuple:
        return self.hidden, self.units, self.batch, self.row_chunk, self.rows, self.vector_h, self.start_sync, self.double_h

    def launch(self, x_gates, recurrent, bias, hs, stream=0, counter=None):
        """One launch: the whole sequence of one layer. Checked first: the 32-bit index range
        (ValueError) and, where kernels are compiled, that the launch is cooperative
        (``barrier.NotCooperativeError``). ``counter``: the barrier's (a uint32 device array of one),
        by default ``barrier.COUNTERS``' for this launch. Returns the counter it used."""
        check_index_range(*hs.shape)
        DEVICE.announce()
        plan_ = self.for_output(hs)
        if target().compiles:  # not in a dry run (nothing runs) nor on the simulator (no cooperative flag)
            require_cooperative(prepared(plan_), "persistent_light_barrier")
        counter = COUNTERS.for_launch(stream) if counter is None else counter
        args = arguments(x_gates, recurrent, bias, hs, counter)
        persistent_light_barrier_kernel(*plan_.kernel_key)[plan_.blocks, plan_.threads, stream, plan_.shared_bytes](*args)
        return counter


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None) -> LightBarrierPlan:
    """``registers.plan`` for this version's kernel, version 2's plan: one block per SM of the fewest
    units that fit, with a second staged buffer of h where the batch takes 2 or more chunks and it
    fits (else version 2's shared memory). Its registers are within the same cap (the compile
    matrix's rows); where a plan is not resident the cooperative launch refuses it (an error,
    never a spin)."""
    return registers.plan(hidden, batch, chip=chip, single_block=single_block, compiled=prepared, kind=LightBarrierPlan,
                          double_h=True)


@cuda.jit(device=True, inline="always")
def light_wait(barrier, target):
    """Thread 0's part of the grid barrier: ``red.release.gpu`` counts its block in (its add is seen
    only after the block's h_t), then ``ld.acquire.gpu`` polls, afresh each trip, until ``target``
    blocks have."""
    arrive(barrier, 0)
    while poll(barrier, 0) < target:
        pass


@functools.lru_cache(maxsize=None)
def persistent_light_barrier_kernel(hidden: int, units: int, batch: int, row_chunk: int, rows: int, vector_h: bool = True,
                                    start_sync: bool = True, double_h: bool = False):
    """The kernel for one plan: ``registers.layer`` (every size a compile-time constant) with this
    version's barrier. ``start_sync`` False leaves out the one ``grid.sync()`` at its start, and with
    it the cooperative launch: only to show that ``launch`` refuses such a kernel
    (``barrier.require_cooperative``)."""
    layout = LightBarrierPlan(hidden, batch, units, -(-hidden // units), row_chunk, rows, vector_h=vector_h, double_h=double_h)
    body = layer(layout, light_wait, start_sync)

    @cuda.jit(**DEVICE.compile_options(max_registers=MAX_REGISTERS))
    def persistent_light_barrier(x_gates, recurrent, bias, hs, steps, barrier):
        body(x_gates, recurrent, bias, hs, steps, barrier)

    return persistent_light_barrier


@functools.lru_cache(maxsize=None)
def prepared(candidate: LightBarrierPlan):
    """The plan's kernel compiled and opted in to its dynamic shared memory, once per plan."""
    return compile_cooperative(persistent_light_barrier_kernel(*candidate.kernel_key), launch_signature(),
                               candidate.shared_bytes)


def describe(grid_: LightBarrierPlan) -> str:
    """What the runner prints of a plan."""
    return f"{grid_.blocks} blocks x {grid_.threads} threads, {grid_.row_chunk} rows a chunk, release/acquire barrier"


def case(size: str, rng) -> list:
    """The runner's case: one layer's sequence at ``SHAPES[size]``, against float64 from x."""
    batch, steps, hidden = SHAPES[size]
    return [layer_case(batch, steps, hidden, plan, describe)]


SPEC = Spec("persistent", 3, "persistent_light_barrier", "2 with a release/acquire grid barrier, the cooperative "
            "launch checked, a counter per launch, the 32-bit range checked", ((0, 1, 2), (3,)), registers_traffic,
            lambda: builds("persistent_light_barrier", persistent_light_barrier_kernel, plan, ", release/acquire barrier"),
            role="persistent layer", colour="tab:cyan", batch_row="persistent_light_barrier_b{batch}", staged_floats=4)
