"""Persistent version 3, ``persistent_light_barrier``: version 2 with a light grid barrier and the
launch's guards (issue 67, items 2-4; notebook 09).

The kernel is version 2's (``v2_registers``: U in registers, 16 k x 4 gates a thread, h staged 128
bits at a time, 32-bit indices), but for what happens between two time steps and around a launch:

1. **The grid barrier is release/acquire** (``barrier``): after the block's ``bar.sync``, thread 0
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

Planning is version 2's (one block per SM of the fewest units that fit, U within the register
cap); the step keeps version 2 in its "fast" policy until a GPU has timed both.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from numba import cuda, float32, uint32

from ...gpus import Chip
from ...runtime.device import DEVICE
from ...runtime.target import target
from ..pointwise.base import sigmoidf
from ..spec import Build, Spec
from ..vector import aligned, load_vector
from .barrier import COUNTERS, arrive, poll, require_cooperative
from .case import layer_case
from .cooperative import compile_cooperative, dynamic_shared
from .layout import STAGE_LOADS, VECTOR
from .v2_registers import (COMPILED_PLANS, K_PER_THREAD, MAX_REGISTERS, MAX_ROWS, SHAPES, RegisterPlan, _flat,
                           launch_signature, registers_traffic)
from .v2_registers import plan as v2_plan

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
class LightBarrierPlan(RegisterPlan):
    """Version 2's plan (``RegisterPlan``), launching this version's kernel. ``start_sync`` False
    builds the kernel without its one ``grid.sync()``, which ``launch`` refuses (a test's way to show it)."""

    start_sync: bool = True

    @property
    def kernel_key(self) -> tuple:
        return self.hidden, self.units, self.batch, self.row_chunk, self.rows, self.vector_h, self.start_sync

    def launch(self, x_gates, recurrent, bias, hs, stream=0, counter=None):
        """One launch: the whole sequence of one layer. Checked first: the 32-bit index range
        (ValueError) and, where kernels are compiled, that the launch is cooperative
        (``barrier.NotCooperativeError``). ``counter``: the barrier's (a uint32 device array of one),
        by default ``barrier.COUNTERS``' for this launch. Returns the counter it used."""
        steps, batch, hidden = hs.shape
        check_index_range(steps, batch, hidden)
        DEVICE.announce()
        plan_ = self if aligned(hs.reshape(steps * batch, hidden), VECTOR) else dataclasses.replace(self, vector_h=False)
        if target().compiles:  # not in a dry run (nothing runs) nor on the simulator (no cooperative flag)
            require_cooperative(prepared(plan_), "persistent_light_barrier")
        counter = COUNTERS.for_launch(stream) if counter is None else counter
        args = (_flat("x_gates", x_gates), _flat("recurrent", recurrent), _flat("bias", bias), _flat("hs", hs),
                np.uint32(steps), counter)
        persistent_light_barrier_kernel(*plan_.kernel_key)[plan_.blocks, plan_.threads, stream, plan_.shared_bytes](*args)
        return counter


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None) -> LightBarrierPlan:
    """Version 2's plan (``v2_registers.plan``: one block per SM of the fewest units that fit), to
    launch this version's kernel. Its shared memory is version 2's and its registers no more (the
    compile matrix's rows), so where version 2's plan is resident this one is; the cooperative launch
    would refuse it otherwise (an error, never a spin)."""
    return LightBarrierPlan(**dataclasses.asdict(v2_plan(hidden, batch, chip=chip, single_block=single_block)))


@functools.lru_cache(maxsize=None)
def persistent_light_barrier_kernel(hidden: int, units: int, batch: int, row_chunk: int, rows: int, vector_h: bool = True,
                                    start_sync: bool = True):
    """The kernel for one plan: every size a compile-time constant. ``start_sync`` False leaves out the
    one ``grid.sync()`` at its start, and with it the cooperative launch: only to show that ``launch``
    refuses such a kernel (``barrier.require_cooperative``)."""
    layout = LightBarrierPlan(hidden, batch, units, -(-hidden // units), row_chunk, rows, vector_h=vector_h)
    if row_chunk % rows or row_chunk > layout.per_unit:
        raise ValueError(f"row_chunk must be a multiple of rows ({rows}) and at most {layout.per_unit}, got {row_chunk}")
    S, threads, hidden_p, chunks = layout.per_unit, layout.threads, layout.hidden_p, layout.chunks
    blocks = layout.blocks
    simulated_blocks = blocks > 1 and not DEVICE.compiled  # a test's several blocks, run in turn
    groups = K_PER_THREAD // VECTOR
    gates_row = 4 * hidden  # a row of x_gates and of U
    partials_at, p_stride = row_chunk * hidden_p, layout.partial_stride
    cells_at = partials_at + threads * p_stride
    width = VECTOR if vector_h else 1
    per_row = hidden // width  # pieces of a row of h
    pieces = row_chunk * per_row  # per chunk
    rounds = -(-pieces // threads)
    # A thread's piece e = tid + i * threads of round i is at row e // per_row, piece e % per_row:
    # constant offsets from its first piece's where the block's threads are whole rows (hidden 512
    # and 128 threads), else the row and piece advance by additions.
    row_step, piece_step = divmod(threads, per_row)
    ragged = pieces % threads != 0
    pad_rows = chunks * row_chunk != batch
    pad_k = hidden_p != hidden
    load = load_vector(VECTOR, ndim=1)

    def stage_batch(count: int):
        """A device function staging ``count`` pieces of this thread (rounds in a row): ``count`` loads
        from hs[src + ...], then their stores to the staged rows; returns the (row, piece) after them.
        Rows past the batch are zeros. (row, piece) advance by additions, uint32 throughout."""

        @cuda.jit(device=True, inline="always")
        def advance(row, piece):
            if piece_step:
                piece = uint32(piece + uint32(piece_step))
                if piece >= uint32(per_row):
                    return uint32(row + uint32(row_step + 1)), uint32(piece - uint32(per_row))
            return uint32(row + uint32(row_step)), piece

        @cuda.jit(device=True, inline="always")
        def batch_(smem, hs, staged, src, row, piece, first_row_of_chunk):
            r, p = row, piece
            for w in range(count):
                inside = (not ragged or r < uint32(row_chunk)) and (not pad_rows or first_row_of_chunk + r < uint32(batch))
                if inside and vector_h:
                    got = load(hs, uint32(src + uint32(r * uint32(hidden)) + uint32(p * uint32(VECTOR))))
                    for v in range(VECTOR):
                        staged[w, v] = got[v]
                elif inside:
                    staged[w, 0] = hs[uint32(src + uint32(r * uint32(hidden)) + p)]
                else:
                    for v in range(width):
                        staged[w, v] = float32(0.0)
                r, p = advance(r, p)
            r, p = row, piece
            for w in range(count):
                if not ragged or r < uint32(row_chunk):
                    for v in range(width):
                        smem[uint32(uint32(r * uint32(hidden_p)) + uint32(p * uint32(width)) + uint32(v))] = staged[w, v]
                r, p = advance(r, p)
            return r, p

        return batch_

    stage_full, stage_rest = stage_batch(STAGE_LOADS), stage_batch(rounds % STAGE_LOADS)
    options = DEVICE.compile_options(max_registers=MAX_REGISTERS)

    @cuda.jit(**options)
    def persistent_light_barrier(x_gates, recurrent, bias, hs, steps, barrier):
        # Flat C-contiguous arrays: x_gates (T x B x 4H), recurrent (H x 4H), bias (4H), hs (T x B x H);
        # barrier: this launch's counter of blocks through the grid barrier.
        smem = dynamic_shared()
        tid = uint32(cuda.threadIdx.x)
        if cuda.blockIdx.x == 0 and tid == uint32(0):
            barrier[0] = uint32(0)
        # The one call to the device runtime's grid barrier, before anything lives in registers (a
        # call saves and restores the registers it may clobber: U's, in local memory). It makes the
        # launch cooperative (every block resident, or the driver refuses it), which ``launch``
        # checks, and the counter 0 for every block.
        if start_sync:
            cuda.cg.this_grid().sync()
        target = uint32(0)
        s = uint32(tid % uint32(S))  # this thread's k groups s, s + S, ... and, adding up, its row of the chunk
        jj = uint32(tid // uint32(S))
        j = uint32(uint32(cuda.blockIdx.x) * uint32(units) + jj)
        live = j < uint32(hidden)
        if pad_k:  # staged h's k beyond hidden: zeros, never overwritten
            for i in range(-(-row_chunk * (hidden_p - hidden) // threads)):
                e = tid + uint32(i * threads)
                if e < uint32(row_chunk * (hidden_p - hidden)):
                    smem[(e // uint32(hidden_p - hidden)) * uint32(hidden_p) + uint32(hidden) + e % uint32(hidden_p - hidden)] = float32(0.0)
        for m in range(chunks):  # c = 0 in the cells this thread updates (stored before U's loads are issued)
            if s < uint32(row_chunk):
                smem[uint32(cells_at) + jj * uint32(chunks * row_chunk) + uint32(m * row_chunk) + s] = float32(0.0)
        u = cuda.local.array((4, K_PER_THREAD), float32)  # U[k, g * H + j] for its k: registers, all launch
        for g in range(4):
            for q in range(groups):
                for v in range(VECTOR):
                    k = uint32(VECTOR) * (s + uint32(S * q)) + uint32(v)
                    u[g, q * VECTOR + v] = recurrent[k * uint32(gates_row) + uint32(g * hidden) + j] \
                        if live and k < uint32(hidden) else float32(0.0)
        bias_i = bias[j] if live else float32(0.0)
        bias_f = bias[uint32(hidden) + j] if live else float32(0.0)
        bias_c = bias[uint32(2 * hidden) + j] if live else float32(0.0)
        bias_o = bias[uint32(3 * hidden) + j] if live else float32(0.0)
        first_row, first_piece = uint32(tid // uint32(per_row)), uint32(tid % uint32(per_row))
        acc = cuda.local.array((4, MAX_ROWS), float32)
        staged = cuda.local.array((STAGE_LOADS, VECTOR), float32)
        x_at = uint32(0)  # x_gates' row t, h_t's and h_{t-1}'s, as flat offsets: grown by additions
        h_at = uint32(0)
        cuda.syncthreads()

        for t in range(steps):
            for m in range(chunks):
                b = uint32(m * row_chunk) + s  # the row whose cell this thread updates
                mine = live and s < uint32(row_chunk) and b < uint32(batch)
                z_i = z_f = z_c = z_o = float32(0.0)
                if mine:  # loaded now: they arrive while h is staged and multiplied
                    at = x_at + b * uint32(gates_row) + j
                    z_i = x_gates[at] + bias_i
                    z_f = x_gates[at + uint32(hidden)] + bias_f
                    z_c = x_gates[at + uint32(2 * hidden)] + bias_c
                    z_o = x_gates[at + uint32(3 * hidden)] + bias_o
                if t > 0:  # h_{-1} = 0: step 0 has no recurrent term
                    # 1. stage rows m * row_chunk... of h_{t-1}, STAGE_LOADS pieces loaded, then stored
                    src = uint32(h_at - uint32(batch * hidden) + uint32(m * row_chunk * hidden))
                    row, piece = first_row, first_piece
                    for i0 in range(rounds // STAGE_LOADS):
                        row, piece = stage_full(smem, hs, staged, src, row, piece, uint32(m * row_chunk))
                    stage_rest(smem, hs, staged, src, row, piece, uint32(m * row_chunk))
                    cuda.syncthreads()
                    # 2. this thread's 16 k of every staged row x its 64 weights: partial sums
                    mine_at = uint32(uint32(partials_at) + uint32(tid * uint32(p_stride)))
                    for r0 in range(0, row_chunk, rows):
                        for r in range(rows):
                            for g in range(4):
                                acc[g, r] = float32(0.0)
                        for q in range(groups):
                            for r in range(rows):
                                h_q = uint32(r0 * hidden_p) + uint32(r * hidden_p) + uint32(VECTOR) * (s + uint32(S * q))
                                for v in range(VECTOR):
                                    h = smem[h_q + uint32(v)]
                                    acc[0, r] += h * u[0, q * VECTOR + v]
                                    acc[1, r] += h * u[1, q * VECTOR + v]
                                    acc[2, r] += h * u[2, q * VECTOR + v]
                                    acc[3, r] += h * u[3, q * VECTOR + v]
                        for r in range(rows):
                            for g in range(4):
                                smem[mine_at + uint32(4 * r0) + uint32(4 * r + g)] = acc[g, r]
                    cuda.syncthreads()
                    # 3. thread s adds up its row's 4 gate sums over the unit's S threads
                    if s < uint32(row_chunk):
                        unit_at = uint32(uint32(partials_at) + uint32(jj * uint32(S * p_stride)) + uint32(uint32(4) * s))
                        for other in range(S):
                            z_i += smem[unit_at + uint32(other * p_stride)]
                            z_f += smem[unit_at + uint32(other * p_stride + 1)]
                            z_c += smem[unit_at + uint32(other * p_stride + 2)]
                            z_o += smem[unit_at + uint32(other * p_stride + 3)]
                if mine:
                    cell_at = uint32(cells_at) + jj * uint32(chunks * row_chunk) + b
                    c = sigmoidf(z_f) * smem[cell_at] + sigmoidf(z_i) * math.tanh(z_c)
                    smem[cell_at] = c
                    hs[h_at + b * uint32(hidden) + j] = sigmoidf(z_o) * math.tanh(c)
            x_at += uint32(batch * gates_row)
            h_at += uint32(batch * hidden)
            if t + 1 < steps and simulated_blocks:  # the simulator runs blocks one after another: a spin would never end
                cuda.cg.this_grid().sync()
            elif t + 1 < steps:  # the grid barrier: every block's h_t is in memory before any block reads it
                cuda.syncthreads()  # this block's stores of h_t are done, ordered before thread 0's release...
                target = uint32(target + uint32(blocks))  # 32-bit: one compare per poll
                if tid == uint32(0):
                    arrive(barrier, 0)  # red.release.gpu: its add is seen only after the block's h_t
                    while poll(barrier, 0) < target:  # ld.acquire.gpu, afresh each trip
                        pass
                cuda.syncthreads()  # ...and every thread's loads of h_t after thread 0's acquire

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
    """The runner's case: one layer's sequence at version 2's ``SHAPES[size]``, against float64 from x."""
    batch, steps, hidden = SHAPES[size]
    return [layer_case(batch, steps, hidden, plan, describe)]


def _build(batch: int) -> Build:
    """The row ``persistent_light_barrier_b{batch}``: the kernel of the plan at ``COMPILED_PLANS``'
    hidden and chip, relocatable (its one grid.sync() calls the device runtime), registers capped."""
    hidden, _, chip = COMPILED_PLANS
    pl = plan(hidden, batch, chip=chip, single_block=False)
    return Build(f"persistent_light_barrier_b{batch}",
                 lambda: (persistent_light_barrier_kernel(*pl.kernel_key), launch_signature()),
                 f"hidden {hidden}, {pl.units} units x {pl.per_unit} threads, {pl.row_chunk} rows a chunk, "
                 f"{pl.rows} at once ({chip} plan), release/acquire barrier", max_registers=MAX_REGISTERS, relocatable=True)


SPEC = Spec("persistent", 3, "persistent_light_barrier", "2 with a release/acquire grid barrier, the cooperative "
            "launch checked, a counter per launch, the 32-bit range checked", ((0, 1, 2), (3,)), registers_traffic,
            lambda: tuple(map(_build, COMPILED_PLANS[1])), role="persistent layer", colour="tab:cyan", batch_row="persistent_light_barrier_b{batch}",
            staged_floats=4)
