"""The persistent LSTM kernel (notebook 09): one launch runs every time step of a layer.

The grid splits the hidden units among its blocks: block q owns ``units`` of them, so it needs
only its 4 * units columns of U (one per gate and unit), H x 4 x units floats. It loads them into
shared memory ONCE, and keeps them there for the whole sequence: the weights stop travelling
from memory at every step.

Inside a block, each (batch row, hidden unit) pair gets ``splits`` threads. Each thread adds its
share of the 4 dot products h_{t-1} . U[:, gate column] (every splits-th k), the shares are summed
through shared memory, and the pair's leader thread, the one with share 0, keeps the pair's cell
state c in a register for the whole sequence. At batch 64 one thread per pair already fills a
block (splits = 1); at batch 4 a block would otherwise have 16 threads, each doing 2048
multiply-adds one after the other, per step.

Per step t:
1. every thread adds its share of h_{t-1} . U; h_{t-1} is staged in shared memory, all of it
   at once when it fits, else chunk by chunk;
2. the leader sums the shares, adds the input pre-activations (one GEMM over all steps computed
   them beforehand) and the bias, applies the gates, updates c and writes h_t to global memory;
3. the whole grid waits at the barrier: step t+1 reads every block's h_t.

A grid barrier is only safe if every block of the grid is resident at once, which is what a
cooperative launch guarantees (and refuses beyond ``max_cooperative_grid_blocks``). On the
simulator blocks run one after another, so there the grid must be a single block.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from numba import cuda, float32

from .. import _device
from .pointwise import sigmoidf

#: Statically allocated shared memory per block that every CUDA GPU allows.
SHARED_BYTES = 48 * 1024
MAX_THREADS = 1024
#: Threads per block worth aiming for when splitting the dot products (fewer on the simulator,
#: where every thread is a Python thread).
TARGET_THREADS = 32 if _device.SIMULATOR else 256
MAX_SPLITS = 32


@functools.lru_cache(maxsize=None)
def persistent_layer_kernel(hidden: int, units: int, batch: int, k_chunk: int, splits: int):
    """The kernel for one plan: shared-array shapes must be compile-time constants."""
    gate_cols = 4 * units
    threads = batch * units * splits
    # Shared-array shapes must be constants when Numba compiles for a GPU: computed here, in
    # Python. The +1 paddings put neighbouring rows in different shared-memory banks.
    u_shape = (gate_cols, hidden + 1)
    h_shape = (batch, k_chunk + 1)
    shares_shape = (threads if splits > 1 else 1, 4)  # unused with one thread per pair

    @cuda.jit
    def persistent_layer(x_gates, recurrent, bias, hs):
        # x_gates (T, B, 4H): x_t @ W for every step; recurrent (H, 4H); bias (4H,); hs (T, B, H).
        u_s = cuda.shared.array(u_shape, float32)  # this block's columns of U, transposed
        h_s = cuda.shared.array(h_shape, float32)
        shares = cuda.shared.array(shares_shape, float32)
        grid = cuda.cg.this_grid()
        tid = cuda.threadIdx.x
        share = tid % splits  # this thread adds k = share, share + splits, ...
        pair = tid // splits
        b = pair // units  # the pair's batch row...
        jj = pair % units  # ...and hidden unit, for the whole sequence
        first_unit = cuda.blockIdx.x * units
        j = first_unit + jj
        leader = share == 0 and j < hidden  # the last block may own fewer than `units` units

        for e in range(tid, hidden * gate_cols, threads):  # once per launch, not per step
            k, col = e // gate_cols, e % gate_cols
            unit = first_unit + col % units
            u_s[col, k] = recurrent[k, (col // units) * hidden + unit] if unit < hidden else float32(0.0)
        cuda.syncthreads()

        c = float32(0.0)
        for t in range(hs.shape[0]):
            z_i = float32(0.0)
            z_f = float32(0.0)
            z_c = float32(0.0)
            z_o = float32(0.0)
            if t > 0:  # h_{-1} = 0: step 0 has no recurrent term
                for k0 in range(0, hidden, k_chunk):
                    for e in range(tid, batch * k_chunk, threads):
                        r, kk = e // k_chunk, e % k_chunk
                        h_s[r, kk] = hs[t - 1, r, k0 + kk] if k0 + kk < hidden else float32(0.0)
                    cuda.syncthreads()
                    for kk in range(share, min(k_chunk, hidden - k0), splits):
                        h = h_s[b, kk]
                        z_i += h * u_s[jj, k0 + kk]
                        z_f += h * u_s[units + jj, k0 + kk]
                        z_c += h * u_s[2 * units + jj, k0 + kk]
                        z_o += h * u_s[3 * units + jj, k0 + kk]
                    cuda.syncthreads()  # h_s is refilled next
            if splits > 1:  # a compile-time constant: this goes away with one thread per pair
                shares[tid, 0] = z_i
                shares[tid, 1] = z_f
                shares[tid, 2] = z_c
                shares[tid, 3] = z_o
                cuda.syncthreads()
            if leader:
                if splits > 1:
                    z_i = float32(0.0)
                    z_f = float32(0.0)
                    z_c = float32(0.0)
                    z_o = float32(0.0)
                    for other in range(tid, tid + splits):
                        z_i += shares[other, 0]
                        z_f += shares[other, 1]
                        z_c += shares[other, 2]
                        z_o += shares[other, 3]
                z_i += x_gates[t, b, j] + bias[j]
                z_f += x_gates[t, b, hidden + j] + bias[hidden + j]
                z_c += x_gates[t, b, 2 * hidden + j] + bias[2 * hidden + j]
                z_o += x_gates[t, b, 3 * hidden + j] + bias[3 * hidden + j]
                c = sigmoidf(z_f) * c + sigmoidf(z_i) * math.tanh(z_c)
                hs[t, b, j] = sigmoidf(z_o) * math.tanh(c)
            grid.sync()  # every block's h_t is in memory before any block reads it (and shares is free)

    return persistent_layer


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a (hidden, batch) layer is cut into a cooperative grid."""

    hidden: int
    batch: int
    units: int  # hidden units per block
    blocks: int
    splits: int  # threads per (batch row, unit) pair, sharing its dot products
    k_chunk: int  # steps of h staged in shared memory at a time
    threads: int = 0  # per block: batch x units x splits
    shared_bytes: int = 0

    def __post_init__(self):
        object.__setattr__(self, "threads", self.batch * self.units * self.splits)
        object.__setattr__(self, "shared_bytes", shared_bytes(self.hidden, self.units, self.batch, self.k_chunk, self.splits))

    def kernel(self):
        return persistent_layer_kernel(self.hidden, self.units, self.batch, self.k_chunk, self.splits)


class PersistentLimitError(ValueError):
    """The layer does not fit the chip as one persistent grid; the message names the limit."""


def shared_bytes(hidden: int, units: int, batch: int, k_chunk: int, splits: int = 1) -> int:
    """Static shared memory of one block: U's columns, staged h, the threads' shares."""
    shares = batch * units * splits * 4 if splits > 1 else 4
    return 4 * (4 * units * (hidden + 1) + batch * (k_chunk + 1) + shares)


def choose_splits(pairs: int, hidden: int, target_threads: int = TARGET_THREADS) -> int:
    """Threads per pair: a power of two that brings the block near ``target_threads``."""
    splits = 1
    while splits * 2 <= MAX_SPLITS and pairs * splits * 2 <= target_threads and splits * 2 <= hidden:
        splits *= 2
    return splits


def largest_k_chunk(hidden: int, units: int, batch: int, splits: int = 1) -> int | None:
    """All of h if it fits beside the weights, else the largest power of two that does."""
    candidates = [hidden] + [2 ** p for p in range(10, -1, -1) if 2 ** p < hidden]
    for k_chunk in candidates:
        if shared_bytes(hidden, units, batch, k_chunk, splits) <= SHARED_BYTES:
            return k_chunk
    return None


def plan(hidden: int, batch: int, *, max_blocks=None, single_block: bool | None = None,
         target_threads: int = TARGET_THREADS) -> Plan:
    """The plan with the most blocks (fewest units each) that fits, or a PersistentLimitError.

    ``max_blocks(plan)`` says how many blocks of that plan's kernel can be resident at once (the
    cooperative limit); by default asked of the device. ``single_block`` (default: on the
    simulator, whose blocks run one at a time so that a grid barrier needs a single block) puts
    every unit in one block. ``target_threads``: how many threads per block to aim for.
    """
    max_blocks = max_blocks or cooperative_limit
    single_block = _device.SIMULATOR if single_block is None else single_block
    candidates = [hidden] if single_block else range(1, hidden + 1)
    reasons = []
    for units in candidates:
        blocks = -(-hidden // units)
        pairs = batch * units
        if pairs > MAX_THREADS:
            reasons.append(f"{units} units per block need {batch} x {units} = {pairs} threads > {MAX_THREADS}")
            break  # more units only need more threads
        splits = choose_splits(pairs, hidden, target_threads)
        k_chunk = largest_k_chunk(hidden, units, batch, splits)
        if k_chunk is None:
            reasons.append(f"{units} units per block need {shared_bytes(hidden, units, batch, 1, splits)} bytes of "
                           f"shared memory > {SHARED_BYTES}")
            break
        candidate = Plan(hidden, batch, units, blocks, splits, k_chunk)
        resident = max_blocks(candidate)
        if blocks <= resident:
            return candidate
        reasons.append(f"{units} units per block: {blocks} blocks > {resident} that can be resident at once")
    raise PersistentLimitError(
        f"persistent LSTM: hidden {hidden}, batch {batch} does not fit this device as one cooperative grid "
        f"({'; '.join(reasons[-2:])}). The U slice (hidden x 4 x units floats) must fit {SHARED_BYTES} bytes of "
        f"shared memory and batch x units threads one block; see fl.persistent_limits()."
    )


def cooperative_limit(candidate: Plan) -> int:
    """Blocks of this plan's kernel that can be resident at once (cooperative launch limit)."""
    if _device.SIMULATOR:
        return 1
    from numba import typeof

    kernel = candidate.kernel()
    # Compile for the argument types it is launched with, then ask the occupancy calculator.
    array3 = typeof(cuda.device_array((1, 1, 1), "float32"))
    array2 = typeof(cuda.device_array((1, 1), "float32"))
    array1 = typeof(cuda.device_array(1, "float32"))
    signature = (array3, array2, array1, array3)
    try:
        compiled = kernel.compile(signature)
    except Exception as error:  # the grid barrier links the CUDA device runtime, a static library
        if "cudadevrt" not in str(error):
            raise
        raise RuntimeError(
            "the persistent kernel's grid barrier needs the CUDA device runtime (libcudadevrt.a), which "
            "Numba did not find: install the CUDA toolkit, or `pip install \"numba-cuda[cu12]\"` (or [cu13]); "
            "`python -c 'from numba import cuda; cuda.cudadrv.libs.test()'` shows where Numba looks. "
            f"({error})"
        ) from error
    return int(compiled.max_cooperative_grid_blocks(candidate.threads))


def limits(hidden: int = 512, batches=(1, 4, 16, 64, 128, 256, 512)) -> dict:
    """For ``hidden``: which batch sizes fit as one persistent grid on this device, and why not."""
    fits = {}
    for batch in batches:
        try:
            p = plan(hidden, batch)
            fits[batch] = (f"fits: {p.blocks} blocks x {p.threads} threads ({p.units} units x {p.splits} threads "
                           f"per batch row), {p.shared_bytes} B shared")
        except PersistentLimitError as error:
            fits[batch] = f"does not fit: {error}"
    return fits


def launch(plan_: Plan, x_gates, recurrent, bias, hs, stream=0) -> None:
    """One launch: the whole sequence of one layer."""
    plan_.kernel()[plan_.blocks, plan_.threads, stream](x_gates, recurrent, bias, hs)
