"""A kernel version's facts, written once beside its kernel: each version file ends with its ``SPEC``
(``versions.py`` collects them).

One ``Spec`` per kernel of a numbered version (``SPECS`` where a version is several kernels):

- ``family``, ``number``: its place in its family's list; ``name``: the kernel's function, as a
  recorded launch, a SASS listing and a table name it (every version its own); ``what``: one line.
- ``access``: the positions of the arguments it reads and the ones it writes (the exercises' trace
  checks a pass's order on them).
- ``traffic``: its FLOPs and global-memory traffic as a formula of one launch (``Traffic``; the
  profile's lower bound reads it). None where no formula is written (the training kernels).
- ``builds``: how the compile matrix compiles it (``Build``: one row of data/kernel_resources.csv
  each); the timeline reads the GEMMs' rows from the same place.
- ``role``: what the profile's timeline calls it in its legend ("GEMM", "fused cell", "persistent
  layer", "fill"; "element-wise" by default). ``colour``: its colour in an estimated pass's
  timeline (a Matplotlib colour; None: one picked from its name).
- ``batch_row``: where the compile matrix builds it once per batch (the persistent kernels), the
  row of data/kernel_resources.csv a launch at batch ``{batch}`` ran (its ``builds``' rows);
  None: the row its name without the underscore names (or, a blocked GEMM, its blocking's).
- ``staged_floats``: the floats of h_{t-1} a thread of a persistent kernel stages per load where
  the hidden size is a multiple of it (1 otherwise).
- ``peak``: the data/gpus.csv peak its FLOPs run at (``gpus.peak_tflops``): "fp32" (FFMA on the
  CUDA cores) or "tf32" (``mma.sync`` on the Tensor Cores: GEMM version 9).

Who reads them (``versions.every()`` collects them; ``versions.spec_of`` finds a launch's):
``course/profile/formulas.py`` (the formulas), ``course/exercises/trace.py`` (the access table),
``tools/compile_matrix`` (what to compile), ``course/timeline/blocks.py`` (which compiled row a
launch ran, how a persistent kernel stages h), the course's charts (roles and colours), the course's
counts, bounds and estimates (which launches are GEMMs, which persistent layers: ``family``),
``kernels/catalog.py`` and ``tools/readme_table.py`` (names and lines). So a new version is a
new file: the course names no kernel outside its exercises.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

from .views import view_of


@dataclasses.dataclass(frozen=True)
class Traffic:
    """What one launch computes and moves (element counts per argument name; views for footprints).

    ``flop``: the arithmetic the kernel source writes on its data, one per +, -, *, /, exp and tanh
    (a multiply-add is 2; index arithmetic not counted). ``loads`` / ``stores``: per array argument,
    the elements its threads load or store, re-reads included. ``reads`` / ``writes``: the views it
    reads and writes; ``inputs``: those it reads before writing them (what must come from memory)."""

    flop: int
    loads: dict
    stores: dict
    reads: tuple
    writes: tuple
    inputs: tuple


class Build(NamedTuple):
    """One compiled form of a kernel: row ``row`` of data/kernel_resources.csv. ``make()`` returns
    (the kernel, its Numba signature); ``blocking``: a blocked GEMM's tiling (its trip counts, and
    the row the timeline reads for launches of that version and blocking where ``timed``);
    ``min_cc``: the oldest compute capability it exists for (the TF32 tensor-core GEMM's (8, 0)),
    None: every architecture of the matrix."""

    row: str
    make: Callable[[], tuple]
    what: str
    blocking: object = None
    timed: bool = False
    max_registers: int | None = None
    relocatable: bool = False
    min_cc: tuple | None = None


@dataclasses.dataclass(frozen=True)
class Spec:
    """One kernel version's facts (see the module docstring)."""

    family: str
    number: int
    name: str
    what: str
    access: tuple | None
    traffic: Callable | None
    builds: Callable[[], tuple] = lambda: ()
    role: str = "element-wise"
    colour: str | None = None
    batch_row: str | None = None
    staged_floats: int = 1
    peak: str = "fp32"

    @property
    def label(self) -> str:
        """'exact_gemm', 'lstm_cell': the kernel's name without its underscore."""
        return self.name.lstrip("_")


def elementwise(args, out_name: str, inputs: tuple, flop_per_element: int) -> Traffic:
    """An element-wise kernel's traffic: one thread per element of ``out`` (rows x cols), each
    loading its element of every input once and storing its output once."""
    out = args[out_name]
    rows, cols = out.shape
    n = rows * cols
    views = {name: view_of(args[name]).head(rows, cols) for name in inputs}
    return Traffic(flop_per_element * n, {name: n for name in inputs}, {out_name: n}, tuple(views.values()),
                   (view_of(out).head(rows, cols),), tuple(views.values()))
