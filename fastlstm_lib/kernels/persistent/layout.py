"""Where the persistent kernel keeps things in its block's dynamic shared memory, and the limits a
plan is sized with (notebook 09).

One buffer per block, at offsets fixed by the plan: this block's columns of U (transposed, one row
of k per gate and unit), h_{t-1} staged (one row of k per batch row), and, when several threads
share a (row group, unit)'s dot products, their partial sums (in staged h's place, once the step
is done with it, where they fit). The kernel (``v1_layer``) is built from these numbers; ``grid``
sizes plans with them.
"""

from __future__ import annotations

import dataclasses
import functools

#: k per shared-memory load in the dot products: 4 floats, one 128-bit load (LDS.128) on a GPU.
VECTOR = 4
#: Batch rows per thread, at most: each weight loaded from shared memory feeds this many FMAs.
MAX_ROWS = 4
#: Elements of h_{t-1} each thread loads from global memory (L2) before it stores the first of them
#: to shared memory: that many loads in flight at once, where one load then its store would wait
#: out one L2 round trip per element.
STAGE_LOADS = 8


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """Where each part lives in the block's dynamic shared buffer (offsets and strides in floats).

    Every dot product runs over whole groups of ``VECTOR`` k, so both U's rows and h's rows are
    padded with zeros: U's k up to ``hidden_p`` (a whole number of chunks), h's rows up to
    ``rows_p`` (a whole number of row groups). Strides are the row's length plus 1 to 8 x
    ``VECTOR``: every group starts on a 16-byte boundary (one 128-bit load), and the padding is
    the least that lets a quarter-warp's 128-bit loads in ``dot_quad`` read their rows without a
    bank conflict (``lds128_conflicts``; one ``VECTOR`` where no padding does).
    """

    hidden: int
    units: int
    batch: int
    k_chunk: int
    splits: int
    rows: int = 1

    @property
    def groups(self) -> int:  # row groups: each thread does `rows` batch rows
        return -(-self.batch // self.rows)

    @property
    def rows_p(self) -> int:  # batch rows staged, the last group padded with zero rows
        return self.groups * self.rows

    @property
    def threads(self) -> int:
        return self.groups * self.units * self.splits

    @property
    def hidden_p(self) -> int:  # k of U in shared memory, padded to whole chunks
        return -(-self.hidden // self.k_chunk) * self.k_chunk

    @property
    def u_stride(self) -> int:
        """U's row stride: the first of hidden_p + VECTOR, + 2 VECTOR, ... whose rows a quarter-warp's
        128-bit loads in ``dot_quad`` read without a bank conflict (``lds128_conflicts``)."""
        return _padded_stride("u_stride", self.hidden_p, self.units, self.splits, self.rows, self.threads)

    @property
    def h_stride(self) -> int:
        """Staged h's row stride, chosen the same way for the h loads."""
        return _padded_stride("h_stride", self.k_chunk, self.units, self.splits, self.rows, self.threads)

    @property
    def h_offset(self) -> int:
        return 4 * self.units * self.u_stride

    @property
    def h_floats(self) -> int:
        return self.rows_p * self.h_stride

    @property
    def share_stride(self) -> int:  # +1: the threads adding up neighbouring values read different banks
        return self.splits + 1

    @property
    def share_floats(self) -> int:  # with splits > 1, each (group, unit) keeps 4 x rows values x splits partials
        return self.groups * self.units * 4 * self.rows * self.share_stride if self.splits > 1 else 0

    @property
    def shares_offset(self) -> int:
        """The partial sums are written once a step's dot products are done with the staged h, and
        read before the next step stages it: they take h's place where they fit, else follow it."""
        return self.h_offset if self.share_floats <= self.h_floats else self.h_offset + self.h_floats

    @property
    def floats(self) -> int:
        return max(self.h_offset + self.h_floats, self.shares_offset + self.share_floats)

    @property
    def bytes(self) -> int:
        return 4 * self.floats


#: Threads per phase of a warp's 128-bit shared-memory load: a quarter warp, whose 8 x 16 bytes
#: span the 32 four-byte banks once (CUDA C++ Programming Guide, shared memory: a 128-bit access
#: is served in four phases). Two threads of a phase that read different 16-byte words in the same
#: four banks wait for each other; threads reading the same word share it (a broadcast).
LDS128_PHASE = 8


def lds128_conflicts(units: int, splits: int, rows: int, threads: int, u_stride: int, h_stride: int) -> dict[str, int]:
    """The worst bank conflict of ``dot_quad``'s 128-bit loads, of U and of staged h: the most
    distinct 16-byte words that one quarter-warp reads from the same four banks (1: none). Each
    thread's word, up to an offset all threads share: U at unit jj's row plus its ``share`` group of
    k, h at its row group's first row plus the same group of k (thread -> share, unit, group as in
    the kernel)."""
    worst = {"u": 1, "h": 1}
    for first in range(0, threads, LDS128_PHASE):
        words = {"u": set(), "h": set()}
        for tid in range(first, min(first + LDS128_PHASE, threads)):
            share, pair = tid % splits, tid // splits
            group, jj = pair // units, pair % units
            words["u"].add((jj * u_stride + share * VECTOR) // VECTOR)
            words["h"].add((group * rows * h_stride + share * VECTOR) // VECTOR)
        for name, found in words.items():
            per_banks: dict[int, int] = {}
            for word in found:
                per_banks[word % (32 // VECTOR)] = per_banks.get(word % (32 // VECTOR), 0) + 1
            worst[name] = max(worst[name], max(per_banks.values()))
    return worst


@functools.lru_cache(maxsize=4096)
def _padded_stride(which: str, length: int, units: int, splits: int, rows: int, threads: int) -> int:
    """``length`` + VECTOR x d for the least d in 1..8 that leaves ``which``'s loads ("u_stride" or
    "h_stride") conflict-free (d = 1 where none does: then as before)."""
    for d in range(1, 32 // VECTOR + 1):
        stride = length + VECTOR * d
        # U's words depend on u_stride alone, h's on h_stride alone: the other stride is immaterial here
        found = lds128_conflicts(units, splits, rows, threads, u_stride=stride, h_stride=stride)
        if found["u" if which == "u_stride" else "h"] == 1:
            return stride
    return length + VECTOR


def check_layout(layout: SharedLayout) -> None:
    """ValueError unless a kernel can be built for ``layout``: the chunk a whole number of the
    threads' strides through k (``VECTOR`` x ``splits``), every count positive."""
    for name in ("hidden", "units", "batch", "k_chunk", "splits", "rows"):
        value = getattr(layout, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if layout.k_chunk % (VECTOR * layout.splits):
        raise ValueError(f"k_chunk must be a multiple of {VECTOR} x splits = {VECTOR * layout.splits} (each of a "
                         f"pair's {layout.splits} threads reads {VECTOR} k at a time), got {layout.k_chunk}")


#: Static shared memory per block that every CUDA GPU allows; dynamic memory beyond it needs an opt-in.
STATIC_SHARED_BYTES = 48 * 1024
#: Registers per thread the kernel is compiled to fit (``max_registers``), so that the residency
#: of a plan can be predicted for any chip: two 256-thread blocks share an SM's 65536 registers.
#: Under this cap ptxas uses 64 to 106 registers for the H100 plans at hidden 512 (4 rows per thread
#: keep 16 sums and 4 cell states), from sm_52 to sm_90, and spills nothing (data/kernel_resources.csv,
#: checked by tests/test_compile_matrix.py).
MAX_REGISTERS = 128
