"""Planning the persistent kernel's grid (notebook 09): how many units per block, how many blocks.
Host code beside the kernel (``v1_layer``, whose ``plan`` step 09 calls before it launches anything).

A grid barrier needs every block resident at once, so the plan must fit the chip: row groups x
units (x splits) threads per block (each thread does ``rows`` batch rows, up to ``MAX_ROWS``), the
block's slice of U and the staged h in its shared memory, and few enough blocks that, at the
occupancy those use (blocks per SM), all of them are resident.
``plan`` walks the number of units per block upwards and takes the first (most blocks) that
fits: for the current GPU by the driver's occupancy calculator, for a named GPU (data/gpus.csv)
by the data sheet's limits, on the simulator a single block. When nothing fits, the error names
the limit that stopped it. A chip that cannot launch a cooperative grid at all (compute capability
below 6.0: the M40) has no grid barrier, and so no plan at any size: the error says so first.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ...checks import check_str
from ...gpus import Chip, chip as chip_limits, occupancy
from ...runtime.device import DEVICE
from .layout import MAX_REGISTERS, MAX_ROWS, STATIC_SHARED_BYTES, VECTOR, SharedLayout, check_layout

MAX_THREADS = 1024
#: Threads per block worth aiming for when splitting the dot products on a GPU, and on the
#: simulator, where every thread is a Python thread.
GPU_TARGET_THREADS = 256
SIMULATOR_TARGET_THREADS = 32
TARGET_THREADS = SIMULATOR_TARGET_THREADS if DEVICE.small else GPU_TARGET_THREADS
MAX_SPLITS = 32


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a (hidden, batch) layer is cut into a cooperative grid on one chip."""

    hidden: int
    batch: int
    units: int  # hidden units per block
    blocks: int
    splits: int  # threads per (row group, unit), sharing its dot products
    k_chunk: int  # elements of h staged in shared memory at a time (a multiple of VECTOR x splits)
    blocks_per_sm: int = 1  # how many of these blocks one SM holds at once (occupancy)
    chip: str = "simulator"
    rows: int = 1  # batch rows per thread

    def __post_init__(self):
        check_layout(self.layout)

    @property
    def threads(self) -> int:  # per block
        return self.layout.threads

    @property
    def layout(self) -> SharedLayout:
        return SharedLayout(self.hidden, self.units, self.batch, self.k_chunk, self.splits, self.rows)

    @property
    def shared_bytes(self) -> int:  # dynamic shared memory per block
        return self.layout.bytes

    @property
    def kernel_key(self) -> tuple:
        """The compile-time constants of this plan's kernel."""
        return self.hidden, self.units, self.batch, self.k_chunk, self.splits, self.rows


class PersistentLimitError(ValueError):
    """The layer does not fit the chip as one persistent grid, or the chip has no grid barrier at
    all; the message names the limit, ``reason`` says it in a few words (what a table prints)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = message if reason is None else reason


#: Cooperative launch, and so a grid barrier (``cuda.cg.this_grid().sync()``), from this compute capability.
COOPERATIVE_COMPUTE_CAPABILITY = (6, 0)


def require_grid_barrier(limits: Chip) -> None:
    """Raise PersistentLimitError, naming the chip, its compute capability and why, unless it can
    launch a cooperative grid: without one there is no grid barrier, which the persistent kernel
    needs between every two time steps, whatever the layer's size."""
    if not isinstance(limits, Chip):
        raise TypeError(f"limits must be a Chip (fastlstm_lib.gpus.chip(name)), got {type(limits).__name__}")
    if limits.cooperative_launch:
        return
    cc = limits.compute_capability
    if tuple(int(part) for part in cc.split(".")) < COOPERATIVE_COMPUTE_CAPABILITY:
        why = "cooperative launch needs compute capability 6.0 or newer"
        reason = f"no cooperative launch below compute capability 6.0 ({limits.name}: {cc}), so no grid barrier"
    else:
        why = "its driver reports no cooperative launch (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)"
        reason = f"no cooperative launch on this {limits.name} (its driver says so), so no grid barrier"
    raise PersistentLimitError(
        f"persistent LSTM: the {limits.name} (compute capability {cc}) cannot launch a cooperative grid: {why}. "
        f"Without one there is no grid barrier (cuda.cg.this_grid().sync()), which the persistent kernel needs "
        f"between every two time steps, so the persistent step cannot run on it at any size; the steps before it can.",
        reason=reason)


def choose_rows(batch: int) -> int:
    """Batch rows per thread: up to ``MAX_ROWS``, so that each weight read from shared memory
    feeds that many FMAs (a batch that is no multiple of it gets zero rows in its last group)."""
    return min(MAX_ROWS, batch)


def choose_splits(groups: int, hidden: int, target_threads: int = TARGET_THREADS) -> int:
    """Threads per (row group, unit): a power of two that brings the block near ``target_threads``,
    each thread keeping at least one group of ``VECTOR`` k."""
    splits = 1
    while splits * 2 <= MAX_SPLITS and groups * splits * 2 <= target_threads and splits * 2 * VECTOR <= hidden:
        splits *= 2
    return splits


def largest_k_chunk(hidden: int, units: int, batch: int, splits: int, limit_bytes: int, rows: int = 1) -> int | None:
    """All of h (rounded up to the threads' stride through k, ``VECTOR`` x ``splits``) if it fits
    beside the weights, else the largest power of two that does and is a multiple of that stride."""
    stride = VECTOR * splits
    candidates = [-(-hidden // stride) * stride] + [2 ** p for p in range(12, -1, -1) if stride <= 2 ** p < hidden]
    for k_chunk in candidates:
        if SharedLayout(hidden, units, batch, k_chunk, splits, rows).bytes <= limit_bytes:
            return k_chunk
    return None


def plan(hidden: int, batch: int, *, chip: Chip | str | None = None, single_block: bool | None = None,
         target_threads: int | None = None, compiled: Callable | None = None, kind: type = Plan) -> Plan:
    """The plan with the most blocks (fewest units each) whose grid can be resident at once.

    ``chip``: a ``Chip``, a GPU's name from data/gpus.csv ("H100": plan for it from its data
    sheet), or None for the device this runs on: the current GPU, where the driver's occupancy
    calculator has the last word, or the simulator, whose blocks run one at a time so that a
    grid barrier needs a single block (``single_block``, default: the simulator without a chip,
    puts every unit in one block). ``target_threads``: threads per block to aim for; by default a
    GPU's, when planning for a named chip or on a GPU, so that a plan for an H100 is the same
    whichever machine makes it. Raises PersistentLimitError, naming the limit, when nothing fits,
    or naming the chip and its compute capability when it cannot launch a cooperative grid at all.
    ``compiled(plan)``: the kernel compiled for a plan, whose occupancy the driver reports on the
    current GPU (the kernel file's ``plan`` passes it); without it the data sheet decides.
    ``kind``: the class of the plan returned, ``Plan`` or a kernel file's subclass that launches it.
    """
    if not (isinstance(kind, type) and issubclass(kind, Plan)):
        raise TypeError(f"kind must be Plan or a subclass of it, got {kind!r}")
    limits, shared_limit = planning_limits(chip, single_block)
    if target_threads is None:
        target_threads = GPU_TARGET_THREADS if chip is not None else TARGET_THREADS
    single_block = limits is None or single_block is True  # as planning_limits resolved it
    candidates = [hidden] if single_block else range(1, hidden + 1)
    reasons = []
    rows = choose_rows(batch)
    groups = -(-batch // rows)
    for units in candidates:
        blocks = -(-hidden // units)
        pairs = groups * units
        if pairs > MAX_THREADS:
            reasons.append(f"{units} units per block need {groups} row groups x {units} = {pairs} threads > {MAX_THREADS}")
            break  # more units only need more threads
        # Fewer threads per pair need less room for partial sums: the most that fit.
        split_options = [choose_splits(pairs, hidden, target_threads)]
        while split_options[-1] > 1:
            split_options.append(split_options[-1] // 2)
        splits, k_chunk = next(((splits, k_chunk) for splits in split_options
                                if (k_chunk := largest_k_chunk(hidden, units, batch, splits, shared_limit, rows))),
                               (None, None))
        if k_chunk is None:
            needed = SharedLayout(hidden, units, batch, VECTOR, 1, rows).bytes
            reasons.append(f"{units} units per block need {needed} bytes of shared memory > {shared_limit}")
            break
        candidate = kind(hidden, batch, units, blocks, splits, k_chunk, rows=rows)
        if limits is None:  # the simulator's single block
            return candidate
        per_sm, binding = occupancy(limits, candidate.threads, candidate.shared_bytes, MAX_REGISTERS)
        if per_sm and blocks <= per_sm * limits.sms and chip is None and compiled is not None:
            # The current GPU: the driver's occupancy calculator, which knows the compiled
            # kernel, has the last word on what the data-sheet model accepted.
            per_sm, binding = driver_blocks_per_sm(compiled(candidate), candidate, limits), \
                "the driver's occupancy calculator"
        if per_sm and blocks <= per_sm * limits.sms:
            return dataclasses.replace(candidate, blocks_per_sm=per_sm, chip=limits.name)
        reasons.append(f"{units} units per block: {blocks} blocks > {per_sm} per SM (limited by {binding}) x "
                       f"{limits.sms} SMs resident at once")
    raise PersistentLimitError(
        f"persistent LSTM: hidden {hidden}, batch {batch} does not fit "
        f"{limits.name if limits else 'the simulator'} as one cooperative grid ({'; '.join(reasons[-2:])}). "
        f"The U slice (hidden x 4 x units floats) must fit {shared_limit} bytes of shared memory, batch x units "
        f"threads one block, and every block must be resident at once; see fl.persistent_limits().",
        reason="; ".join(reasons[-2:]),
    )


def planning_limits(chip: Chip | str | None, single_block: bool | None) -> tuple[Chip | None, int]:
    """What a persistent plan is sized against: the chip's limits (None for the simulator's single
    block, ``single_block`` defaulting to the simulator without a chip) and the shared memory one
    block may have. ``chip``: a ``Chip``, a GPU's name from data/gpus.csv, or None for this device.
    PersistentLimitError where the chip has no grid barrier; ValueError/TypeError naming ``chip``."""
    if chip is not None and not isinstance(chip, Chip):
        check_str("chip", chip, example="H100")  # named as the caller wrote it (the step's option too)
    single_block = (DEVICE.small and chip is None) if single_block is None else single_block
    limits = None if (single_block and chip is None) else (chip if isinstance(chip, Chip) else chip_limits(chip))
    if limits is not None:
        require_grid_barrier(limits)
    return limits, limits.shared_bytes_per_block if limits else STATIC_SHARED_BYTES


def driver_blocks_per_sm(compiled_kernel, candidate: Plan, limits: Chip) -> int:
    """Blocks of this plan resident per SM, by the driver's occupancy calculator of its compiled kernel."""
    return int(compiled_kernel.max_cooperative_grid_blocks(candidate.threads, candidate.shared_bytes)) // limits.sms
