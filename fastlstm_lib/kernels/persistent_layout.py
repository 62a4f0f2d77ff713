"""Where the persistent kernel keeps things in its block's dynamic shared memory (notebook 09).

One buffer per block, at offsets fixed by the plan: this block's columns of U (transposed, one
row of k per gate and unit), h_{t-1} staged (one row of k per batch row), and, when several
threads share a (row group, unit)'s dot products, their partial sums (in staged h's place, once
the step is done with it, where they fit). ``kernels/persistent.py``
builds its kernel from these numbers; ``persistent_plan`` sizes plans with them.
"""

from __future__ import annotations

import dataclasses

#: k per shared-memory load in the dot products: 4 floats, one 128-bit load (LDS.128) on a GPU.
VECTOR = 4
#: Batch rows per thread, at most: each weight loaded from shared memory feeds this many FMAs.
MAX_ROWS = 4


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """Where each part lives in the block's dynamic shared buffer (offsets and strides in floats).

    Every dot product runs over whole groups of ``VECTOR`` k, so both U's rows and h's rows are
    padded with zeros: U's k up to ``hidden_p`` (a whole number of chunks), h's rows up to
    ``rows_p`` (a whole number of row groups). Strides are multiples of ``VECTOR`` plus
    ``VECTOR``: every group starts on a 16-byte boundary (one 128-bit load), and where a row's
    length is a multiple of 32 floats, neighbouring rows start 4 banks apart.
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
        return self.hidden_p + VECTOR

    @property
    def h_offset(self) -> int:
        return 4 * self.units * self.u_stride

    @property
    def h_stride(self) -> int:
        return self.k_chunk + VECTOR

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
