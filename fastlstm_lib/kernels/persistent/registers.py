"""What the persistent versions with U in registers share (versions 2 and 3, notebook 09): the
plan (``RegisterLayout``, ``plan``), the kernel's body (``layer``), its arguments, traffic and
compiled rows. A version file adds what is its own: the wait at the grid barrier and the launch.

``layer`` is one layer's whole sequence in one launch. Each thread holds 16 k x the 4 gates of
one hidden unit, 64 floats of U, loaded once per launch; a unit's ``per_unit`` threads (32 at
hidden 512: one warp) hold its k interleaved in groups of ``VECTOR``: thread s holds
k = 4 (s + S q) + v, q < 4, v < 4. Per step t, the batch in chunks of ``row_chunk`` rows (all of
it where shared memory allows):
1. the chunk's rows of h_{t-1} are staged in shared memory, each thread copying 128-bit pieces,
   ``STAGE_LOADS`` loads in flight before their stores, every offset a compile-time constant or a
   32-bit add per round (no division); the cells' input pre-activations are loaded before, so
   they arrive meanwhile. With two buffers (``double_h``, version 3's plan where the batch takes
   2 or more chunks and shared memory holds a second buffer) only chunk 0 is staged so: chunk
   m + 1's pieces are staged into the other buffer while chunk m is multiplied (a few loaded
   before each multiplication of ``rows`` rows, stored after it);
2. every thread multiplies its 16 k of each staged row by its 64 weights: one 128-bit shared
   load of h feeds 16 FFMAs (4 k x 4 gates), ``rows`` rows at a time (8 independent sums), and
   stores its 4 x ``rows`` partial sums;
3. thread s of a unit adds up row s's 4 partial gate sums over the unit's S threads (one
   128-bit load per thread), applies the cell (c in shared memory, its own slot) and writes h_t
   (with two buffers, a ``bar.sync`` follows before the next chunk's partial sums overwrite these).
Then the grid barrier: step t+1 reads every block's h_t. Step 0 has no recurrent term, so U's
loads are still in flight while it runs. The barrier is the block's ``bar.sync``, thread 0's
``wait`` (the version's: it counts its block in and waits for every block), ``bar.sync``.

Every index is 32-bit arithmetic on compile-time sizes: the arrays come flat (C-contiguous), so no
runtime stride multiplies an index, and per-step offsets grow by additions. Only the staging
differs where h's rows are not 16-byte aligned (hidden not a multiple of 4, or a view): then it
copies floats one at a time (``vector_h`` False).

``plan`` gives each SM one block (each block stages all of h once per step, so fewer blocks read
less from L2) of the fewest units that fit; a layer whose U does not fit the register file at the
kernel's register cap does not fit (``PersistentLimitError``), and the step keeps version 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
from numba import cuda, float32, uint32

from ...checks import check_int
from ...gpus import Chip, occupancy
from ...runtime.device import DEVICE
from ..pointwise.base import CELL_FLOP, sigmoidf
from ..spec import Build, Traffic
from ..vector import aligned, load_vector
from ..views import view_of
from .cooperative import dynamic_shared
from .grid import MAX_THREADS, PersistentLimitError, driver_blocks_per_sm, planning_limits
from .layout import STAGE_LOADS, VECTOR

#: k of U per thread: ``VECTOR`` x 4 groups, 64 weights in registers (4 gates).
K_PER_THREAD = 16
#: Batch rows a thread multiplies at once: 4 x 2 independent sums (each FFMA latency covered).
MAX_ROWS = 2
#: The register cap it is compiled with: 64 weights, 8 sums, 32 staged floats of h, addresses (ptxas
#: uses 138-144 for the H100 plans at hidden 512 and spills nothing: data/kernel_resources.csv). At
#: 152, a T4's SM holds the 416 threads of its plan at hidden 512 (13 units of 32) in its 64K registers.
MAX_REGISTERS = 152
#: (batch, steps, hidden) of the runner's cases: odd sizes (3 threads per unit, a ragged last chunk).
SHAPES = {"odd": (5, 4, 37), "article": (64, 100, 512)}
#: The plans the compile matrix builds, as on the chip they were planned for: (hidden, batches, chip).
COMPILED_PLANS = (512, (1, 4, 64), "H100")


def per_unit(hidden: int) -> int:
    """Threads per hidden unit: each holds ``K_PER_THREAD`` of its k."""
    return -(-hidden // K_PER_THREAD)


@dataclasses.dataclass(frozen=True)
class RegisterLayout:
    """How a (hidden, batch) layer is cut into a cooperative grid with U in registers; a version's
    subclass launches its kernel for it."""

    hidden: int
    batch: int
    units: int  # hidden units per block
    blocks: int
    row_chunk: int  # batch rows staged and added up at a time (at most per_unit: one row per thread)
    rows: int  # batch rows a thread multiplies at once (divides row_chunk)
    blocks_per_sm: int = 1
    chip: str = "simulator"
    vector_h: bool = True  # h staged 128 bits at a time (hidden a multiple of 4, rows aligned)
    double_h: bool = False  # two staged buffers: chunk m + 1 staged while chunk m is multiplied (2+ chunks)

    @property
    def per_unit(self) -> int:
        return per_unit(self.hidden)

    @property
    def threads(self) -> int:
        return self.units * self.per_unit

    @property
    def hidden_p(self) -> int:  # k staged per row: whole groups of every thread
        return self.per_unit * K_PER_THREAD

    @property
    def chunks(self) -> int:
        return -(-self.batch // self.row_chunk)

    @property
    def buffers(self) -> int:  # staged buffers of row_chunk rows: two where double_h has 2+ chunks to overlap
        return 2 if self.double_h and self.chunks > 1 else 1

    @property
    def partial_stride(self) -> int:  # a thread's partial sums: 4 gates x row_chunk, + VECTOR (bank offset)
        return 4 * self.row_chunk + VECTOR

    @property
    def shared_floats(self) -> int:
        """Staged h (buffers x row_chunk x hidden_p), the partial sums (threads x partial_stride), c (units x
        batch rows, whole chunks)."""
        staged = self.buffers * self.row_chunk * self.hidden_p
        return staged + self.threads * self.partial_stride + self.units * self.chunks * self.row_chunk

    @property
    def shared_bytes(self) -> int:
        return 4 * self.shared_floats

    @property
    def kernel_key(self) -> tuple:
        return self.hidden, self.units, self.batch, self.row_chunk, self.rows, self.vector_h

    def for_output(self, hs):
        """This plan for a launch writing ``hs`` (steps x batch x hidden): h staged a float at a time
        where hs's rows are not 16-byte aligned."""
        steps, batch, hidden = hs.shape
        return self if aligned(hs.reshape(steps * batch, hidden), VECTOR) else dataclasses.replace(self, vector_h=False)


def _row_chunks(hidden: int, batch: int):
    """(row_chunk, rows) candidates, largest chunk first: at most one row per thread of a unit."""
    rows = min(MAX_ROWS, batch, per_unit(hidden))
    most = min(per_unit(hidden), -(-batch // rows) * rows) // rows * rows
    return [(chunk, rows) for chunk in range(most, 0, -rows)]


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None,
         compiled: Callable, kind: type, double_h: bool = False) -> RegisterLayout:
    """The plan with one block per SM of the fewest units whose grid fits (every block resident at
    once, its weights within the register cap, its staged rows and sums in shared memory).
    ``double_h``: where the batch takes 2 or more chunks, stage h in two buffers if the second one
    fits the block's shared memory (and keeps every block resident), else in one.

    ``chip``: a ``Chip``, a GPU's name in data/gpus.csv, or None for this device (the simulator:
    one block of every unit, ``single_block``). ``compiled(plan)``: the version's kernel compiled for
    a plan, whose occupancy the driver reports on the current GPU; ``kind``: the version's subclass
    of ``RegisterLayout``, the class of the plan returned. PersistentLimitError names what did not fit."""
    hidden, batch = check_int("hidden", hidden), check_int("batch", batch)
    if not (isinstance(kind, type) and issubclass(kind, RegisterLayout)):
        raise TypeError(f"kind must be a subclass of RegisterLayout, got {kind!r}")
    if not callable(compiled):
        raise TypeError(f"compiled must be a function of a plan returning its compiled kernel, got {compiled!r}")
    limits, shared_limit = planning_limits(chip, single_block)
    first = hidden if limits is None else max(1, -(-hidden // limits.sms))
    reasons = []
    for units in range(first, hidden + 1):
        blocks = -(-hidden // units)
        threads = units * per_unit(hidden)
        if threads > MAX_THREADS:
            reasons.append(f"{units} units per block need {threads} threads > {MAX_THREADS}")
            break
        fitting = [kind(hidden, batch, units, blocks, chunk, rows, vector_h=hidden % VECTOR == 0)
                   for chunk, rows in _row_chunks(hidden, batch)]
        fitting = [p for p in fitting if p.shared_bytes <= shared_limit]
        if not fitting:
            reasons.append(f"{units} units per block: not one batch row fits {shared_limit} bytes of shared memory")
            continue
        doubled = dataclasses.replace(fitting[0], double_h=double_h)
        options = ([doubled] if doubled.buffers == 2 and doubled.shared_bytes <= shared_limit else []) + [fitting[0]]
        if limits is None:
            return options[0]
        for candidate in options:  # the second buffer where it leaves every block resident, else one
            per_sm, binding = _residency(candidate, limits, chip, compiled)
            if per_sm and blocks <= per_sm * limits.sms:
                return dataclasses.replace(candidate, blocks_per_sm=per_sm, chip=limits.name)
        reasons.append(f"{units} units per block: {blocks} blocks > {per_sm} per SM (limited by {binding}) x "
                       f"{limits.sms} SMs")
        if per_sm == 0:
            break  # more units only need more of what ran out
    raise PersistentLimitError(
        f"persistent LSTM, U in registers: hidden {hidden}, batch {batch} does not fit "
        f"{limits.name if limits else 'the simulator'} ({'; '.join(reasons[-2:])}). U (hidden x 4 hidden floats) "
        f"must fit the register file at {MAX_REGISTERS} registers per thread, {per_unit(hidden)} threads per unit.",
        reason="; ".join(reasons[-2:]))


def _residency(candidate: RegisterLayout, limits: Chip, chip, compiled: Callable) -> tuple[int, str]:
    """Blocks of ``candidate`` resident per SM of ``limits``' chip and what limits them: by the data
    sheet, then, for this device's own chip (``chip`` None), by the driver's occupancy calculator."""
    per_sm, binding = occupancy(limits, candidate.threads, candidate.shared_bytes, MAX_REGISTERS)
    if per_sm and candidate.blocks <= per_sm * limits.sms and chip is None:
        return driver_blocks_per_sm(compiled(candidate), candidate, limits), "the driver's occupancy calculator"
    return per_sm, binding


def _stager(layout: RegisterLayout, count: int, rounds: int | None = None):
    """Device functions staging ``count`` pieces of this thread (rounds in a row): ``load`` issues
    their ``count`` loads from hs[src + ...] into ``staged`` (registers), ``store`` stores them to
    the staged rows from row ``base_row`` on, returning the (row, piece) after them; ``stage`` does
    both (from row 0). Rows past the batch are zeros. (row, piece) advance by additions, uint32
    throughout. ``rounds``: how many this thread does per chunk in all (by default the fewest that cover it);
    pieces past the chunk are neither loaded nor stored."""
    hidden, batch, row_chunk, hidden_p, vector_h = layout.hidden, layout.batch, layout.row_chunk, layout.hidden_p, layout.vector_h
    width = VECTOR if vector_h else 1
    per_row = hidden // width  # pieces of a row of h
    pieces = row_chunk * per_row  # per chunk
    # A thread's piece e = tid + i * threads of round i is at row e // per_row, piece e % per_row:
    # constant offsets from its first piece's where the block's threads are whole rows (hidden 512
    # and 128 threads), else the row and piece advance by additions.
    row_step, piece_step = divmod(layout.threads, per_row)
    ragged = (-(-pieces // layout.threads) if rounds is None else rounds) * layout.threads != pieces
    pad_rows = layout.chunks * row_chunk != batch
    load = load_vector(VECTOR, ndim=1)

    @cuda.jit(device=True, inline="always")
    def advance(row, piece):
        if piece_step:
            piece = uint32(piece + uint32(piece_step))
            if piece >= uint32(per_row):
                return uint32(row + uint32(row_step + 1)), uint32(piece - uint32(per_row))
        return uint32(row + uint32(row_step)), piece

    @cuda.jit(device=True, inline="always")
    def load_pieces(hs, staged, src, row, piece, first_row_of_chunk):
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

    @cuda.jit(device=True, inline="always")
    def store_pieces(smem, staged, base_row, row, piece):
        r, p = row, piece
        for w in range(count):
            if not ragged or r < uint32(row_chunk):
                for v in range(width):
                    smem[uint32(uint32((base_row + r) * uint32(hidden_p)) + uint32(p * uint32(width)) + uint32(v))] = staged[w, v]
            r, p = advance(r, p)
        return r, p

    @cuda.jit(device=True, inline="always")
    def stage(smem, hs, staged, src, row, piece, first_row_of_chunk):
        load_pieces(hs, staged, src, row, piece, first_row_of_chunk)
        return store_pieces(smem, staged, uint32(0), row, piece)

    return load_pieces, store_pieces, stage


def layer(layout: RegisterLayout, wait, start_sync: bool = True):
    """The body of the kernel for ``layout`` (every size a compile-time constant), an inline device
    function ``(x_gates, recurrent, bias, hs, steps, barrier)``: flat C-contiguous arrays x_gates
    (T x B x 4H), recurrent (H x 4H), bias (4H), hs (T x B x H), and the launch's counter of blocks
    through the grid barrier. ``wait(barrier, target)``: thread 0's part of the barrier, a device
    function that counts its block in and returns once ``target`` blocks have. ``start_sync`` False
    leaves out the one ``grid.sync()`` at its start, and with it the cooperative launch."""
    hidden, units, batch, row_chunk, rows = layout.hidden, layout.units, layout.batch, layout.row_chunk, layout.rows
    if row_chunk % rows or row_chunk > layout.per_unit:
        raise ValueError(f"row_chunk must be a multiple of rows ({rows}) and at most {layout.per_unit}, got {row_chunk}")
    S, threads, hidden_p, chunks = layout.per_unit, layout.threads, layout.hidden_p, layout.chunks
    blocks = layout.blocks
    simulated_blocks = blocks > 1 and not DEVICE.compiled  # a test's several blocks, run in turn
    groups = K_PER_THREAD // VECTOR
    gates_row = 4 * hidden  # a row of x_gates and of U
    stage_size, double, staged_rows = row_chunk * hidden_p, layout.buffers == 2, layout.buffers * row_chunk
    partials_at, p_stride = layout.buffers * stage_size, layout.partial_stride
    cells_at = partials_at + threads * p_stride
    per_row = hidden // (VECTOR if layout.vector_h else 1)  # pieces of a row of h
    rounds = -(-row_chunk * per_row // threads)
    pad_k = hidden_p != hidden
    stage_full, stage_rest = _stager(layout, STAGE_LOADS)[2], _stager(layout, rounds % STAGE_LOADS)[2]
    # Double-buffered: the next chunk's rounds spread evenly over this chunk's row_chunk // rows
    # multiplications, ``ahead_pieces`` each (2 at hidden 512, batch 64 on an H100: 8 floats held
    # in registers across the FFMAs), pieces past the chunk skipped.
    iters = row_chunk // rows
    ahead_pieces = -(-rounds // iters)
    load_next, store_next, _ = _stager(layout, ahead_pieces, iters * ahead_pieces)
    staged_pieces = max(STAGE_LOADS, ahead_pieces) if double else STAGE_LOADS

    @cuda.jit(device=True, inline="always")
    def stage_chunk(smem, hs, staged, src, row, piece, first_row_of_chunk):
        for i0 in range(rounds // STAGE_LOADS):
            row, piece = stage_full(smem, hs, staged, src, row, piece, first_row_of_chunk)
        stage_rest(smem, hs, staged, src, row, piece, first_row_of_chunk)

    @cuda.jit(device=True, inline="always")
    def multiply(smem, u, acc, buf_at, mine_at, r0, s):
        """``rows`` staged rows from r0 (of the buffer at buf_at) x this thread's 16 k of U: their
        4 x ``rows`` partial sums stored at mine_at."""
        for r in range(rows):
            for g in range(4):
                acc[g, r] = float32(0.0)
        for q in range(groups):
            for r in range(rows):
                h_q = buf_at + uint32(r0 * hidden_p) + uint32(r * hidden_p) + uint32(VECTOR) * (s + uint32(S * q))
                for v in range(VECTOR):
                    h = smem[h_q + uint32(v)]
                    acc[0, r] += h * u[0, q * VECTOR + v]
                    acc[1, r] += h * u[1, q * VECTOR + v]
                    acc[2, r] += h * u[2, q * VECTOR + v]
                    acc[3, r] += h * u[3, q * VECTOR + v]
        for r in range(rows):
            for g in range(4):
                smem[mine_at + uint32(4 * r0) + uint32(4 * r + g)] = acc[g, r]

    @cuda.jit(device=True, inline="always")
    def body(x_gates, recurrent, bias, hs, steps, barrier):
        smem = dynamic_shared()
        tid = uint32(cuda.threadIdx.x)
        if cuda.blockIdx.x == 0 and tid == uint32(0):
            barrier[0] = uint32(0)
        # The one call to the device runtime's grid barrier, before anything lives in registers (a
        # call saves and restores the registers it may clobber: U's, in local memory). It makes the
        # launch cooperative (every block resident, or the driver refuses it) and the counter 0 for
        # every block.
        if start_sync:
            cuda.cg.this_grid().sync()
        target = uint32(0)
        s = uint32(tid % uint32(S))  # this thread's k groups s, s + S, ... and, adding up, its row of the chunk
        jj = uint32(tid // uint32(S))
        j = uint32(uint32(cuda.blockIdx.x) * uint32(units) + jj)
        live = j < uint32(hidden)
        if pad_k:  # staged h's k beyond hidden: zeros, never overwritten
            for i in range(-(-staged_rows * (hidden_p - hidden) // threads)):
                e = tid + uint32(i * threads)
                if e < uint32(staged_rows * (hidden_p - hidden)):
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
        staged = cuda.local.array((staged_pieces, VECTOR), float32)
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
                    # (double-buffered: chunk 0 here, chunk m + 1 while chunk m is multiplied)
                    src = uint32(h_at - uint32(batch * hidden) + uint32(m * row_chunk * hidden))
                    if not double or m == 0:
                        stage_chunk(smem, hs, staged, src, first_row, first_piece, uint32(m * row_chunk))
                        cuda.syncthreads()
                    # 2. this thread's 16 k of every staged row x its 64 weights: partial sums
                    mine_at = uint32(uint32(partials_at) + uint32(tid * uint32(p_stride)))
                    if double and m + 1 < chunks:  # with the next chunk's pieces: loaded before, stored after
                        buf_at = uint32(uint32(m & 1) * uint32(stage_size))
                        # the other buffer's first row: rows of both share one stride (a base added to
                        # the wrapping 32-bit offset keeps ptxas from joining 4 stores into one STS.128)
                        next_row0 = uint32(uint32(row_chunk) - uint32(uint32(m & 1) * uint32(row_chunk)))
                        row, piece = first_row, first_piece
                        for r0 in range(0, row_chunk, rows):
                            load_next(hs, staged, uint32(src + uint32(row_chunk * hidden)), row, piece,
                                      uint32((m + 1) * row_chunk))
                            multiply(smem, u, acc, buf_at, mine_at, r0, s)
                            row, piece = store_next(smem, staged, next_row0, row, piece)
                    else:
                        for r0 in range(0, row_chunk, rows):
                            multiply(smem, u, acc, uint32(uint32(m & 1) * uint32(stage_size)) if double else uint32(0),
                                     mine_at, r0, s)
                    cuda.syncthreads()
                    # 3. thread s adds up its row's 4 gate sums over the unit's S threads
                    if s < uint32(row_chunk):
                        unit_at = uint32(uint32(partials_at) + uint32(jj * uint32(S * p_stride)) + uint32(uint32(4) * s))
                        for other in range(S):
                            z_i += smem[unit_at + uint32(other * p_stride)]
                            z_f += smem[unit_at + uint32(other * p_stride + 1)]
                            z_c += smem[unit_at + uint32(other * p_stride + 2)]
                            z_o += smem[unit_at + uint32(other * p_stride + 3)]
                    if double and m + 1 < chunks:  # every thread's sums read before the next chunk's overwrite them
                        cuda.syncthreads()
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
                cuda.syncthreads()  # this block's stores of h_t are done, before thread 0 counts it in...
                target = uint32(target + uint32(blocks))  # 32-bit: one compare per poll
                if tid == uint32(0):
                    wait(barrier, target)
                cuda.syncthreads()  # ...and every thread's loads of h_t after thread 0 has seen every block's

    return body


def launch_signature() -> tuple:
    """Numba's argument types of a launch: four flat C-contiguous float32 arrays, the step count and
    the barrier's counter."""
    return (float32[::1], float32[::1], float32[::1], float32[::1], uint32, uint32[::1])


def arguments(x_gates, recurrent, bias, hs, counter) -> tuple:
    """A launch's arguments (``launch_signature``): the four arrays flat (ValueError naming one that
    is not C-contiguous), the step count (hs's first axis) and the barrier's counter."""
    return (_flat("x_gates", x_gates), _flat("recurrent", recurrent), _flat("bias", bias), _flat("hs", hs),
            np.uint32(hs.shape[0]), counter)


def _flat(name: str, array):
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError(f"{name} must be C-contiguous for the persistent kernel with U in registers, got strides {array.strides}")
    return array.reshape(array.size)


def registers_traffic(args, grid, block, constants) -> Traffic:
    """One launch = a layer's whole sequence. U: loaded once per launch (4 H x H). h_{t-1}: every
    block stages all of it at every step but the first. The cells' threads load their 4 input
    pre-activations and store h at every step, and their 4 biases once. FLOPs: the dot products at
    every step but the first, the sums of the per-thread partials, and the cell's arithmetic. The
    sizes come from the arguments (flat: U is hidden x 4 hidden, hs steps x batch x hidden)."""
    hidden, steps = math.isqrt(args["recurrent"].shape[0] // 4), int(args["steps"])
    batch = args["hs"].shape[0] // (steps * hidden)
    blocks, threads_per_unit = grid[0], per_unit(hidden)
    pairs = batch * hidden
    loads = {"x_gates": 4 * pairs * steps, "recurrent": 4 * hidden * hidden, "bias": 4 * hidden * threads_per_unit,
             "hs": blocks * (steps - 1) * batch * hidden}
    flop = 8 * pairs * hidden * (steps - 1) + 4 * pairs * threads_per_unit * (steps - 1) + steps * pairs * CELL_FLOP
    hs = view_of(args["hs"])
    inputs = (view_of(args["x_gates"]).head(steps * batch * 4 * hidden), view_of(args["recurrent"]).head(4 * hidden * hidden),
              view_of(args["bias"]).head(4 * hidden))
    reads = inputs + ((hs.head((steps - 1) * batch * hidden),) if steps > 1 else ())
    return Traffic(flop, loads, {"hs": steps * batch * hidden}, reads, (hs,), inputs)


def builds(row: str, kernel: Callable, plan_: Callable, note: str = "") -> tuple:
    """One ``Build`` per batch of ``COMPILED_PLANS``, the row ``{row}_b{batch}``: ``kernel(*key)`` for
    ``plan_``'s plan at its hidden and chip, relocatable (its one grid.sync() calls the device
    runtime), registers capped; ``note`` ends the row's "what"."""
    hidden, batches, chip = COMPILED_PLANS
    found = []
    for batch in batches:
        pl = plan_(hidden, batch, chip=chip, single_block=False)
        what = (f"hidden {hidden}, {pl.units} units x {pl.per_unit} threads, {pl.row_chunk} rows a chunk, "
                f"{pl.rows} at once ({chip} plan){note}")
        found.append(Build(f"{row}_b{batch}", lambda pl=pl: (kernel(*pl.kernel_key), launch_signature()), what,
                           max_registers=MAX_REGISTERS, relocatable=True))
    return tuple(found)
