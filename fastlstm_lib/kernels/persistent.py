"""The persistent LSTM kernel (notebook 09): one launch runs every time step of a layer.

The grid splits the hidden units among its blocks: block q owns ``units`` of them, so it needs
only its 4 * units columns of U (one per gate and unit), H x 4 x units floats. It loads them into
shared memory ONCE, and keeps them there for the whole sequence: the weights stop travelling
from memory (or L2) at every step.

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

Shared memory is one *dynamic* buffer (U's columns, staged h, the threads' shares, at offsets
fixed by the plan). Dynamic shared memory may exceed the 48 KiB that static arrays are limited
to, up to what the chip allows one block (227 KiB on an H100) once the kernel opts in: more
units per block, fewer blocks.

A grid barrier is only safe if every block of the grid is resident at once, which is what a
cooperative launch guarantees (and refuses beyond ``max_cooperative_grid_blocks``). How many are
resident depends on occupancy: several blocks share an SM when their threads, registers and
shared memory fit together. ``plan`` picks the most blocks that fit. On the simulator blocks run
one after another, so there the grid must be a single block.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from numba import cuda, float32, uint64

from .. import simulator
from .pointwise import sigmoidf

#: Static shared memory per block that every CUDA GPU allows; dynamic memory beyond it needs an opt-in.
STATIC_SHARED_BYTES = 48 * 1024
#: Registers per thread the kernel is compiled to fit (``max_registers``), so that the residency
#: of a plan can be predicted for any chip: two 256-thread blocks share an SM's 65536 registers.
#: Under this cap ptxas uses 70 to 102 registers for the H100 plans at hidden 512, from sm_52 to
#: sm_90, and spills nothing (data/kernel_resources.csv, checked by tests/test_compile_matrix.py).
MAX_REGISTERS = 128


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """Where each part lives in the block's dynamic shared buffer (offsets and strides in floats)."""

    hidden: int
    units: int
    batch: int
    k_chunk: int
    splits: int

    @property
    def u_stride(self) -> int:  # +1: neighbouring rows in different banks
        return self.hidden + 1

    @property
    def h_offset(self) -> int:
        return 4 * self.units * self.u_stride

    @property
    def h_stride(self) -> int:
        return self.k_chunk + 1

    @property
    def shares_offset(self) -> int:
        return self.h_offset + self.batch * self.h_stride

    @property
    def floats(self) -> int:
        shares = self.batch * self.units * self.splits * 4 if self.splits > 1 else 0
        return self.shares_offset + shares

    @property
    def bytes(self) -> int:
        return 4 * self.floats


@functools.lru_cache(maxsize=None)
def persistent_layer_kernel(hidden: int, units: int, batch: int, k_chunk: int, splits: int):
    """The kernel for one plan: every size is a compile-time constant."""
    layout = SharedLayout(hidden, units, batch, k_chunk, splits)
    gate_cols = 4 * units
    threads = batch * units * splits
    u_stride, h_offset, h_stride, shares_offset = layout.u_stride, layout.h_offset, layout.h_stride, layout.shares_offset
    options = {} if simulator.SIMULATOR else {"max_registers": MAX_REGISTERS}
    u_rounds = -(-hidden * gate_cols // threads)  # U elements each thread loads
    h_rounds = -(-batch * k_chunk // threads)  # h elements each thread stages, per chunk
    ragged = hidden % splits != 0 or k_chunk % splits != 0  # some threads add one k fewer

    @cuda.jit(**options)
    def persistent_layer(x_gates, recurrent, bias, hs):
        # x_gates (T, B, 4H): x_t @ W for every step; recurrent (H, 4H); bias (4H,); hs (T, B, H).
        # smem: [U's columns of this block, transposed (4*units x u_stride)]
        #       [h staged (batch x h_stride)] [shares (threads x 4), only when splits > 1]
        # Shared-memory indices are cast to uint64: for a signed one Numba adds a test and an add
        # (a[-1] is the last element), which in the dot products cost more instructions than the
        # FFMAs, and whose hoisted operands held enough registers to spill. The loops that share
        # out the loads count rounds (a constant) rather than range over (tid, total, threads),
        # whose 64-bit trip-count bookkeeping did the same.
        smem = cuda.shared.array(0, float32)
        grid = cuda.cg.this_grid()
        tid = cuda.threadIdx.x
        share = tid % splits  # this thread adds k = share, share + splits, ...
        pair = tid // splits
        b = pair // units  # the pair's batch row...
        jj = pair % units  # ...and hidden unit, for the whole sequence
        first_unit = cuda.blockIdx.x * units
        j = first_unit + jj
        leader = share == 0 and j < hidden  # the last block may own fewer than `units` units
        h_row = h_offset + b * h_stride  # where the pair's h and its gate i column of U start in smem
        u_row = jj * u_stride
        mine = shares_offset + 4 * tid  # this thread's 4 shares

        for i in range(u_rounds):  # once per launch, not per step
            e = tid + i * threads
            k, col = e // gate_cols, e % gate_cols
            unit = first_unit + col % units
            if e < hidden * gate_cols:
                value = recurrent[uint64(k), uint64((col // units) * hidden + unit)] if unit < hidden else float32(0.0)
                smem[uint64(col * u_stride + k)] = value
        cuda.syncthreads()

        c = float32(0.0)
        for t in range(hs.shape[0]):
            z_i = float32(0.0)
            z_f = float32(0.0)
            z_c = float32(0.0)
            z_o = float32(0.0)
            if t > 0:  # h_{-1} = 0: step 0 has no recurrent term
                for k0 in range(0, hidden, k_chunk):
                    for i in range(h_rounds):
                        e = tid + i * threads
                        r, kk = e // k_chunk, e % k_chunk
                        if e < batch * k_chunk:
                            staged = hs[t - 1, r, k0 + kk] if k0 + kk < hidden else float32(0.0)
                            smem[uint64(h_offset + r * h_stride + kk)] = staged
                    cuda.syncthreads()
                    limit = min(k_chunk, hidden - k0)
                    for k_split in range(0, limit, splits):
                        kk = k_split + share
                        if ragged and kk >= limit:
                            break
                        h = smem[uint64(h_row + kk)]
                        at = u_row + k0 + kk
                        z_i += h * smem[uint64(at)]
                        z_f += h * smem[uint64(at + units * u_stride)]
                        z_c += h * smem[uint64(at + 2 * units * u_stride)]
                        z_o += h * smem[uint64(at + 3 * units * u_stride)]
                    cuda.syncthreads()  # h is refilled next
            if splits > 1:  # a compile-time constant: this goes away with one thread per pair
                smem[uint64(mine)] = z_i
                smem[uint64(mine + 1)] = z_f
                smem[uint64(mine + 2)] = z_c
                smem[uint64(mine + 3)] = z_o
                cuda.syncthreads()
            if leader:
                if splits > 1:
                    z_i = float32(0.0)
                    z_f = float32(0.0)
                    z_c = float32(0.0)
                    z_o = float32(0.0)
                    for other in range(splits):  # the pair's threads: tid, tid + 1, ...
                        at = mine + 4 * other
                        z_i += smem[uint64(at)]
                        z_f += smem[uint64(at + 1)]
                        z_c += smem[uint64(at + 2)]
                        z_o += smem[uint64(at + 3)]
                z_i += x_gates[t, b, j] + bias[j]
                z_f += x_gates[t, b, hidden + j] + bias[hidden + j]
                z_c += x_gates[t, b, 2 * hidden + j] + bias[2 * hidden + j]
                z_o += x_gates[t, b, 3 * hidden + j] + bias[3 * hidden + j]
                c = sigmoidf(z_f) * c + sigmoidf(z_i) * math.tanh(z_c)
                hs[t, b, j] = sigmoidf(z_o) * math.tanh(c)
            grid.sync()  # every block's h_t is in memory before any block reads it (and shares is free)

    return persistent_layer


def allow_dynamic_shared(kernel, shared_bytes: int) -> None:
    """Let a compiled kernel launch with ``shared_bytes`` of dynamic shared memory.

    By default a kernel may use 48 KiB of shared memory in all, static included; more needs the
    kernel attribute MAX_DYNAMIC_SHARED_SIZE_BYTES first, up to what the chip allows one block.
    numba-cuda has no public call for it (numba-cuda issue #94), so we make the driver call it
    makes itself for the carveout (``CudaPythonFunction.set_shared_memory_carveout``):
    ``cuKernelSetAttribute`` on the kernel handle, for the current device.
    """
    if shared_bytes <= 0:
        return
    from cuda.bindings.driver import CUfunction_attribute
    from numba.cuda.cudadrv.driver import driver

    function = kernel._codelibrary.get_cufunc()
    if shared_bytes + function.attrs.shared <= STATIC_SHARED_BYTES:
        return
    attribute = CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attribute, shared_bytes, function.handle, function.device.id)


def launch_signature(x_gates=None, recurrent=None, bias=None, hs=None) -> tuple:
    """Numba's argument types of a launch (those of fresh C-contiguous arrays by default)."""
    from numba import typeof

    shapes = ((1, 1, 1), (1, 1), 1, (1, 1, 1))
    arrays = (x_gates, recurrent, bias, hs)
    return tuple(typeof(a if a is not None else cuda.device_array(shape, "float32")) for a, shape in zip(arrays, shapes))


@functools.lru_cache(maxsize=None)
def prepared(candidate, signature: tuple):
    """The plan's kernel compiled for ``signature`` and opted in to its dynamic shared memory,
    once per (plan, argument types). A missing CUDA device runtime (the grid barrier links it)
    gets a clear message."""
    try:
        compiled_kernel = persistent_layer_kernel(*candidate.kernel_key).compile(signature)
    except Exception as error:
        if "cudadevrt" not in str(error):
            raise
        raise RuntimeError(
            "the persistent kernel's grid barrier needs the CUDA device runtime (libcudadevrt.a), which "
            "Numba did not find: install the CUDA toolkit, or `pip install \"numba-cuda[cu12]\"` (or [cu13]); "
            "`python -c 'from numba import cuda; cuda.cudadrv.libs.test()'` shows where Numba looks. "
            f"({error})"
        ) from error
    allow_dynamic_shared(compiled_kernel, candidate.shared_bytes)
    return compiled_kernel


def launch(plan_, x_gates, recurrent, bias, hs, stream=0) -> None:
    """One launch: the whole sequence of one layer."""
    simulator.announce()
    if not simulator.SIMULATOR:
        prepared(plan_, launch_signature(x_gates, recurrent, bias, hs))  # compiled and opted in, once
    persistent_layer_kernel(*plan_.kernel_key)[plan_.blocks, plan_.threads, stream, plan_.shared_bytes](x_gates, recurrent, bias, hs)
