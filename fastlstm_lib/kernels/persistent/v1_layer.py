"""The persistent LSTM kernel (notebook 09): one launch runs every time step of a layer.

Persistent version 1, ``persistent_layer`` (``persistent_layer_kernel``), compiled per plan
(every size a compile-time constant); step 09 (``steps/step09_persistent.py``) launches it once
per layer, after one input GEMM per layer. Here: the kernel, its plan (``LayerPlan``, which
launches it; ``plan``: the family's ``grid`` with this kernel's occupancy), its runner case and
its spec. Where it keeps things in shared memory is ``layout``; how it is compiled for a
cooperative launch, ``cooperative``. Its ``splits = 1, rows = 1`` plan is exercise
ex09_grid_step's kernel; ``rows`` is ex09_rows_per_thread's idea.

The grid splits the hidden units among its blocks: block q owns ``units`` of them, so it needs
only its 4 * units columns of U (one per gate and unit), H x 4 x units floats. It loads them into
shared memory ONCE, and keeps them there for the whole sequence: the weights stop travelling
from memory (or L2) at every step.

Inside a block, each thread owns one hidden unit and ``rows`` batch rows (up to ``MAX_ROWS``),
and ``splits`` threads share that (row group, unit)'s dot products h_{t-1} . U[:, gate column],
each adding every splits-th group of ``VECTOR`` k. Two things keep the inner loop doing
arithmetic rather than loading: each weight loaded from shared memory feeds ``rows`` FMAs, one per
batch row, and ``VECTOR`` neighbouring k of U (or of h) come in one 128-bit load (LDS.128), which
the compiler makes of four float loads once the buffer is 16-byte aligned and every index a
multiple of 4. Compiled for the H100 plans at hidden 512, the loop does 8 shared loads per 64 FFMAs
from batch 4 on (data/kernel_resources.csv); one float load per FMA would be 1.25 per FFMA, as
before this blocking. At batch 1 a thread has one row, and the vector loads alone give 5 per 16.
``splits`` brings a block near 256 threads when the batch is small: at batch 4, a block of 4 units
would otherwise have 4 threads, each doing 8192 multiply-adds one after the other, per step.

Per step t:
1. every thread adds its share of h_{t-1} . U for its rows; h_{t-1} is staged in shared memory,
   all of it at once when it fits, else chunk by chunk, each thread issuing ``STAGE_LOADS`` loads
   from L2 before it stores the first (their latencies overlap instead of adding up), with no
   division in the loop and only the bounds tests the plan's padding needs; the step's input
   pre-activations (plus the bias, read once per launch) are loaded before, so they arrive meanwhile;
2. with ``splits`` > 1 the partial sums go through shared memory, and the pair's threads add them
   up between them (thread s the values s, s + splits, ...: no one thread adds all of them);
3. for each row, one thread of the pair adds the input pre-activations (one GEMM over all steps
   computed them beforehand) and the bias, applies the gates, updates c (kept in a register for the
   whole sequence) and writes h_t to global memory;
4. the whole grid waits at the barrier: step t+1 reads every block's h_t.

Shared memory is one *dynamic* buffer (U's columns, staged h, the partial sums, at offsets fixed
by the plan). Dynamic shared memory may exceed the 48 KiB that static arrays are limited
to, up to what the chip allows one block (227 KiB on an H100) once the kernel opts in: more
units per block, fewer blocks.

A grid barrier is only safe if every block of the grid is resident at once, which is what a
cooperative launch guarantees (and refuses beyond ``max_cooperative_grid_blocks``). How many are
resident depends on occupancy: several blocks share an SM when their threads, registers and
shared memory fit together. ``plan`` picks the most blocks that fit. On the simulator blocks run
one after another, so there the grid must be a single block.
"""

from __future__ import annotations

import functools
import math

from numba import cuda, float32, uint64

from ...checks import check_int, check_int_list, check_str
from ...gpus import Chip, chip as chip_limits
from ...runtime.device import DEVICE
from ...runtime.target import target
from ..pointwise.base import CELL_FLOP, sigmoidf
from ..spec import Build, Spec, Traffic
from ..views import view_of
from . import grid
from .cooperative import compile_cooperative, dynamic_shared
from .grid import GPU_TARGET_THREADS, PersistentLimitError, Plan, require_grid_barrier
from .layout import MAX_REGISTERS, STAGE_LOADS, VECTOR, SharedLayout, check_layout
from .case import layer_case


@functools.lru_cache(maxsize=None)
def persistent_layer_kernel(hidden: int, units: int, batch: int, k_chunk: int, splits: int, rows: int = 1):
    """The kernel for one plan: every size is a compile-time constant."""
    layout = SharedLayout(hidden, units, batch, k_chunk, splits, rows)
    check_layout(layout)
    gate_cols = 4 * units
    threads = layout.threads
    hidden_p, rows_p = layout.hidden_p, layout.rows_p
    u_stride, h_offset, h_stride, shares_offset = layout.u_stride, layout.h_offset, layout.h_stride, layout.shares_offset
    gate_stride = units * u_stride  # from gate i's column of U to gate f's, of the same unit
    step = VECTOR * splits  # a thread's stride through k
    share_stride = layout.share_stride
    quads = k_chunk // step  # VECTOR-wide groups of k per thread per chunk
    options = DEVICE.compile_options(max_registers=MAX_REGISTERS)
    u_rounds = -(-hidden_p * gate_cols // threads)  # U elements each thread loads (zeros beyond hidden)
    h_rounds = -(-rows_p * k_chunk // threads)  # h elements each thread stages, per chunk
    # Staging h: a thread's element of round i is e = tid + i * threads, at row e // k_chunk and k
    # e % k_chunk of the chunk. Where the block's threads divide a chunk's row (every GPU plan at
    # hidden 512), or a row divides them, that is a constant row and a constant offset from the
    # thread's own k: the loads and stores then take their offsets as immediates, with no division
    # and no index held in a register. Each guard exists only where the plan's padding needs it
    # (compile-time constants: the others compile to nothing).
    per_row = k_chunk // threads if k_chunk % threads == 0 else 0  # rounds per row of h
    rows_per_round = threads // k_chunk if threads % k_chunk == 0 else 0
    ragged = rows_p * k_chunk % threads != 0  # the last round runs past the staged rows
    whole_batches = h_rounds % STAGE_LOADS == 0  # no round past the last: no test
    pad_k = hidden_p != hidden  # the last chunk runs past hidden: zeros
    pad_rows = rows_p != batch  # the last row group runs past the batch: zeros
    mine = -(-rows // splits)  # rows whose cell one thread of a pair updates (row r: thread r % splits)

    @cuda.jit(device=True, inline="always")
    def dot_quad(smem, h_at, u_at, acc):
        # VECTOR k of this thread's dot products: each of the 4 gates' weights, loaded once, feeds
        # `rows` FMAs, one per batch row. Neighbouring k are neighbours in shared memory, so the
        # VECTOR loads of one column (or one row of h) become one 128-bit load.
        for v in range(VECTOR):
            u_i = smem[uint64(u_at + v)]
            u_f = smem[uint64(u_at + gate_stride + v)]
            u_c = smem[uint64(u_at + 2 * gate_stride + v)]
            u_o = smem[uint64(u_at + 3 * gate_stride + v)]
            for r in range(rows):
                h = smem[uint64(h_at + r * h_stride + v)]
                acc[0, r] += h * u_i
                acc[1, r] += h * u_f
                acc[2, r] += h * u_c
                acc[3, r] += h * u_o

    @cuda.jit(device=True, inline="always")
    def stage_element(tid, i):
        # (row, k within the chunk) of thread tid's element of round i (see per_row above)
        if per_row:
            return uint64(i // per_row), uint64(tid) + uint64((i % per_row) * threads)
        if rows_per_round:
            return uint64(tid // k_chunk) + uint64(i * rows_per_round), uint64(tid % k_chunk)
        e = uint64(tid) + uint64(i * threads)
        return e // uint64(k_chunk), e % uint64(k_chunk)

    @cuda.jit(**options)
    def persistent_layer(x_gates, recurrent, bias, hs):
        # x_gates (T, B, 4H): x_t @ W for every step; recurrent (H, 4H); bias (4H,); hs (T, B, H).
        # smem: [U's columns of this block, transposed (4*units x u_stride)]
        #       [h staged (rows_p x h_stride)], and if splits > 1 the partial sums (pairs x 4 x rows x
        #       share_stride): in staged h's place where they fit (written after the step's last read of h)
        # Shared-memory indices are cast to uint64: for a signed one Numba adds a test and an add
        # (a[-1] is the last element), which in the dot products cost more instructions than the
        # FFMAs. The loops that share out the loads count rounds (a constant) rather than range
        # over (tid, total, threads), whose 64-bit trip-count bookkeeping did the same.
        smem = dynamic_shared()
        grid = cuda.cg.this_grid()
        tid = cuda.threadIdx.x
        share = tid % splits  # this thread adds k-groups share, share + splits, ...
        pair = tid // splits
        group = pair // units  # the thread's batch rows: group * rows + r, r < rows...
        jj = pair % units  # ...and hidden unit, for the whole sequence
        first_unit = cuda.blockIdx.x * units
        j = first_unit + jj
        h_at = h_offset + group * rows * h_stride + share * VECTOR  # where its h and its gate i column start
        u_at = jj * u_stride + share * VECTOR
        shares_at = shares_offset + pair * 4 * rows * share_stride  # the pair's partial sums
        acc = cuda.local.array((4, rows), float32)  # z of gates i, f, c, o for each of its rows
        c = cuda.local.array(mine, float32)  # the cell state of each row whose cell it updates, for the whole sequence
        x_in = cuda.local.array((4, mine), float32)  # this step's input pre-activations + bias, its cells' rows
        staged = cuda.local.array(STAGE_LOADS, float32)  # h elements loaded, not yet stored
        bias_i = bias[j] if j < hidden else float32(0.0)  # the bias, read once per launch
        bias_f = bias[hidden + j] if j < hidden else float32(0.0)
        bias_c = bias[2 * hidden + j] if j < hidden else float32(0.0)
        bias_o = bias[3 * hidden + j] if j < hidden else float32(0.0)

        for i in range(u_rounds):  # once per launch, not per step
            e = tid + i * threads
            k, col = e // gate_cols, e % gate_cols
            unit = first_unit + col % units
            if e < hidden_p * gate_cols:
                value = recurrent[uint64(k), uint64((col // units) * hidden + unit)] if unit < hidden and k < hidden else float32(0.0)
                smem[uint64(col * u_stride + k)] = value
        for m in range(mine):
            c[m] = float32(0.0)
        cuda.syncthreads()

        for t in range(hs.shape[0]):
            for r in range(rows):
                for g in range(4):
                    acc[g, r] = float32(0.0)
            for m in range(mine):  # this step's inputs, loaded now: they arrive while h is staged
                b = group * rows + share + m * splits
                if j < hidden and share + m * splits < rows and b < batch:
                    x_in[0, m] = x_gates[uint64(t), uint64(b), uint64(j)] + bias_i
                    x_in[1, m] = x_gates[uint64(t), uint64(b), uint64(hidden + j)] + bias_f
                    x_in[2, m] = x_gates[uint64(t), uint64(b), uint64(2 * hidden + j)] + bias_c
                    x_in[3, m] = x_gates[uint64(t), uint64(b), uint64(3 * hidden + j)] + bias_o
            if t > 0:  # h_{-1} = 0: step 0 has no recurrent term
                for k0 in range(0, hidden_p, k_chunk):
                    # Stage h_{t-1}[:, k0:k0 + k_chunk], zeros beyond hidden and batch: STAGE_LOADS
                    # independent loads, then their stores, so the loads' latencies overlap.
                    for i0 in range(0, h_rounds, STAGE_LOADS):
                        for u in range(STAGE_LOADS):
                            if whole_batches or i0 + u < h_rounds:
                                row, kk = stage_element(tid, i0 + u)
                                inside = (not ragged or row < rows_p) and (not pad_k or k0 + kk < hidden) \
                                    and (not pad_rows or row < batch)
                                staged[u] = hs[t - 1, row, uint64(k0) + kk] if inside else float32(0.0)
                        for u in range(STAGE_LOADS):
                            if whole_batches or i0 + u < h_rounds:
                                row, kk = stage_element(tid, i0 + u)
                                if not ragged or row < rows_p:
                                    smem[uint64(h_offset) + row * uint64(h_stride) + kk] = staged[u]
                    cuda.syncthreads()
                    for q in range(quads):
                        dot_quad(smem, h_at + q * step, u_at + k0 + q * step, acc)
                    cuda.syncthreads()  # h is refilled next
            if splits > 1:  # compile-time constant: with one thread per (group, unit) the sums stay in registers
                # The pair's threads write their 4 x rows partial sums, then share out the totals:
                # thread `share` adds up values share, share + splits, ... (each over all splits
                # threads), so no one thread adds all of them; a value's partials are contiguous.
                for r in range(rows):
                    for g in range(4):
                        smem[uint64(shares_at + (g * rows + r) * share_stride + share)] = acc[g, r]
                cuda.syncthreads()
                for v0 in range(0, 4 * rows, splits):
                    v = v0 + share
                    if v < 4 * rows:
                        total = float32(0.0)
                        for other in range(splits):
                            total += smem[uint64(shares_at + v * share_stride + other)]
                        smem[uint64(shares_at + v * share_stride)] = total
                cuda.syncthreads()
            if j < hidden:
                for m in range(mine):
                    r = share + m * splits  # row r's cell: thread r of the pair (mod splits)
                    b = group * rows + r
                    if r < rows and b < batch:
                        if splits > 1:
                            z_i = smem[uint64(shares_at + r * share_stride)]
                            z_f = smem[uint64(shares_at + (rows + r) * share_stride)]
                            z_c = smem[uint64(shares_at + (2 * rows + r) * share_stride)]
                            z_o = smem[uint64(shares_at + (3 * rows + r) * share_stride)]
                        else:
                            z_i, z_f, z_c, z_o = acc[0, r], acc[1, r], acc[2, r], acc[3, r]
                        z_i += x_in[0, m]
                        z_f += x_in[1, m]
                        z_c += x_in[2, m]
                        z_o += x_in[3, m]
                        c[m] = sigmoidf(z_f) * c[m] + sigmoidf(z_i) * math.tanh(z_c)
                        hs[uint64(t), uint64(b), uint64(j)] = sigmoidf(z_o) * math.tanh(c[m])
            grid.sync()  # every block's h_t is in memory before any block reads it (and shares is free)

    return persistent_layer


def launch_signature(x_gates=None, recurrent=None, bias=None, hs=None) -> tuple:
    """Numba's argument types of a launch (those of fresh C-contiguous arrays by default)."""
    from numba import typeof

    shapes = ((1, 1, 1), (1, 1), 1, (1, 1, 1))
    arrays = (x_gates, recurrent, bias, hs)
    return tuple(typeof(a if a is not None else cuda.device_array(shape, "float32")) for a, shape in zip(arrays, shapes))


@functools.lru_cache(maxsize=None)
def prepared(candidate, signature: tuple):
    """The plan's kernel compiled for ``signature`` and opted in to its dynamic shared memory,
    once per (plan, argument types)."""
    return compile_cooperative(persistent_layer_kernel(*candidate.kernel_key), signature, candidate.shared_bytes)


class LayerPlan(Plan):
    """How a (hidden, batch) layer is cut into a cooperative grid for this kernel (``grid.Plan``);
    ``launch`` launches the kernel for it."""

    def launch(self, x_gates, recurrent, bias, hs, stream=0) -> None:
        """One launch: the whole sequence of one layer."""
        DEVICE.announce()
        if target().compiles:  # not in a dry run (nothing runs) nor on the simulator
            prepared(self, launch_signature(x_gates, recurrent, bias, hs))  # compiled and opted in, once
        persistent_layer_kernel(*self.kernel_key)[self.blocks, self.threads, stream, self.shared_bytes](x_gates, recurrent, bias, hs)


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None,
         target_threads: int | None = None) -> LayerPlan:
    """This kernel's plan: ``grid.plan``, where on the current GPU the driver's occupancy of the
    compiled kernel has the last word (see there for the arguments and the errors)."""
    return grid.plan(hidden, batch, chip=chip, single_block=single_block, target_threads=target_threads,
                     compiled=lambda candidate: prepared(candidate, launch_signature()), kind=LayerPlan)


def persistent_limits(hidden: int = 512, batches=(1, 4, 16, 64, 128, 256, 512), chip: str | None = None) -> dict:
    """For ``hidden``: which batch sizes fit as one persistent grid on a chip (the current GPU by
    default; on the simulator name one, e.g. "H100"), and why not. A chip that cannot launch a
    cooperative grid (the M40) has no answer per batch size: PersistentLimitError says why."""
    hidden = check_int("hidden", hidden)
    batches = check_int_list("batches", batches)
    if chip is not None:
        check_str("chip", chip, example="H100")
    require_grid_barrier(chip_limits(chip))
    fits = {}
    for batch in batches:
        try:
            p = plan(hidden, batch, chip=chip, single_block=False)
            fits[batch] = (f"fits: {p.blocks} blocks x {p.threads} threads ({p.units} units x {p.splits} threads "
                           f"per {p.rows} batch row{'s' * (p.rows > 1)}), {p.shared_bytes} B shared, "
                           f"{p.blocks_per_sm} blocks per SM")
        except PersistentLimitError as error:
            fits[batch] = f"does not fit: {error}"
    return fits


def persistent_traffic(args, grid, block, constants) -> Traffic:
    """One launch = a layer's whole sequence; the formula reads the plan the kernel was built for
    (its closure's ``splits`` and ``rows``).

    U: each block loads its units' 4 columns once per launch, H x 4H elements in all. h_{t-1}:
    every block stages all of it, B x H elements, at every step but the first. The pair leaders
    load their 4 input pre-activations and store h, at every step; every thread of a unit loads
    its 4 biases once per launch. FLOPs: the dot products of the layer's B x H pairs (4 gates x H
    multiply-adds) at every step but the first (h_{-1} = 0), the sums of split shares, and the
    cell's arithmetic.
    """
    hs = args["hs"]
    steps, batch, hidden = hs.shape
    blocks, splits = grid[0], constants["splits"]
    pairs = batch * hidden
    unit_threads = -(-batch // constants["rows"]) * splits  # threads per unit: row groups x splits
    loads = {"x_gates": 4 * pairs * steps, "recurrent": 4 * hidden * hidden, "bias": 4 * hidden * unit_threads,
             "hs": blocks * (steps - 1) * batch * hidden}
    flop = 8 * pairs * hidden * (steps - 1) + steps * pairs * (CELL_FLOP + (4 * splits if splits > 1 else 0))
    inputs = (view_of(args["x_gates"]).head(steps, batch, 4 * hidden), view_of(args["recurrent"]).head(hidden, 4 * hidden),
              view_of(args["bias"]).head(4 * hidden))
    reads = inputs + ((view_of(hs).head(steps - 1),) if steps > 1 else ())
    return Traffic(flop, loads, {"hs": steps * batch * hidden}, reads, (view_of(hs),), inputs)

#: (batch, steps, hidden) of the runner's cases: one layer's whole sequence.
SHAPES = {"odd": (3, 5, 7), "article": (64, 100, 512)}


def case(size: str, rng) -> list:
    """The runner's case: one layer's sequence at ``SHAPES[size]`` from step 09's input GEMM's
    x_gates, against float64 from x (x_gates' own float32 rounding counts as error)."""
    return [layer_case(*SHAPES[size], plan, lambda grid_: f"{grid_.blocks} blocks x {grid_.threads} threads")]


#: The plans the compile matrix builds, as on the chip they were planned for: (hidden, batches, chip).
COMPILED_PLANS = (512, (1, 4, 64), "H100")


def _builds() -> tuple:
    """One row per compiled plan: ``persistent_b{batch}``, relocatable (a grid barrier), registers capped."""
    hidden, batches, chip = COMPILED_PLANS
    signature = (float32[:, :, ::1], float32[:, ::1], float32[::1], float32[:, :, ::1])
    found = []
    for batch in batches:
        pl = plan(hidden, batch, chip=chip, single_block=False, target_threads=GPU_TARGET_THREADS)
        what = (f"hidden {hidden}, {pl.units} units x {pl.rows} rows per thread x {pl.splits} splits, "
                f"k_chunk {pl.k_chunk} ({chip} plan)")
        found.append(Build(f"persistent_b{batch}", lambda pl=pl: (persistent_layer_kernel(*pl.kernel_key), signature), what,
                           max_registers=MAX_REGISTERS, relocatable=True))
    return tuple(found)


SPECS = (
    Spec("persistent", 1, "persistent_layer", "a layer's whole sequence in one launch, U in shared memory (notebook 09)",
         ((0, 1, 2), (3,)),  # it reads the h it writes itself, inside the launch
         persistent_traffic, _builds, role="persistent layer", colour="tab:cyan", batch_row="persistent_b{batch}"),
)
