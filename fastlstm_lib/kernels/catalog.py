"""Every kernel version, each runnable on its own against float64 NumPy: the one validate-then-time
runner (``python -m fastlstm_lib.kernels``, llm.c-style), which validates everywhere and times on a GPU.

One ``Version`` per version file: its specs (``spec.py``: its family, its number, its kernels'
names, one line on what it adds) and its ``case(size, rng)``: fresh inputs at ``size`` ("odd": no
dimension a multiple of any tile or block, except the exact-tile GEMMs, which run only where their
tile divides the shape; "article": the article's shapes, for a GPU), its outputs poisoned with
NaN, and ``Case`` s (``case.py``) that launch it and know the float64 answer, the work done and
the tolerance (``reference.TOLERANCES``). The families' version files are ``gemm/v<N>_*.py``
(version 0 is cuBLAS, the yardstick every GEMM version is set beside in ``gemm_table``; after them,
``gemm/launch.py``: ``gemm()`` as the backward pass calls it), ``pointwise/v<N>_*.py``,
``pointwise_backward/v<N>_*.py``, ``reduce/v<N>_*.py``, ``persistent/v<N>_*.py``.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType

import numpy as np

from ..runtime.device import DEVICE
from ..tables import Column, table
from ..timing import summarize, time_launches
from . import gemm
from .case import Case, Unavailable  # noqa: F401  (Unavailable: the runner's skip)
from .family import specs
from .versions import FAMILIES

SIZES = ("odd", "article")
#: Launches per timed repeat, warm-up repeats, timed repeats.
INNER, WARMUP, REPEATS = 20, 3, 30


@dataclasses.dataclass(frozen=True)
class Version:
    """A version file, as the runner runs it: its ``specs`` (one per kernel) and its ``case``."""

    specs: tuple
    case: object  # case(size, rng) -> list[Case]

    family = property(lambda self: self.specs[0].family)
    number = property(lambda self: self.specs[0].number)
    what = property(lambda self: self.specs[0].what)
    kernel = property(lambda self: ", ".join(spec.label for spec in self.specs))

    @classmethod
    def of(cls, module: ModuleType) -> "Version":
        return cls(specs((module,)), module.case)

    @property
    def label(self) -> str:
        return f"{self.family} {self.number}: {self.kernel}" if self.number is not None else f"{self.family}: {self.kernel}()"


#: Every version file, family by family (``versions.FAMILIES``), the GEMM's launcher after its versions.
VERSIONS = tuple(Version.of(module) for family in FAMILIES
                 for module in family.VERSIONS + ((gemm.launch,) if family is gemm else ()))


def select(name: str | None = None, number: int | None = None) -> list[Version]:
    """The versions of family or kernel ``name`` (all when None), of number ``number`` (all when
    None). A name or number that matches nothing raises ValueError naming what exists."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str (a family or a kernel), got {type(name).__name__}")
    if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
        raise TypeError(f"version must be an int, got {type(number).__name__}")
    found = [v for v in VERSIONS if (name in (None, v.family) or name in (spec.label for spec in v.specs))
             and number in (None, v.number)]
    if not found:
        families = sorted({v.family for v in VERSIONS})
        kernels = sorted({spec.label for v in VERSIONS for spec in v.specs})
        raise ValueError(f"no kernel version matches name {name!r}, version {number!r}: families {families}, "
                         f"kernels {kernels}")
    return found


# ---- validate, then time ---------------------------------------------------------------------------

def checked(case: Case, when: str = "", check: bool = True) -> float:
    """The case's relative error after a fresh launch; AssertionError beyond its tolerance (NaN
    too). ``check=False`` (a fake GPU, which computes nothing): launched, not compared, NaN returned."""
    case.reset()
    case.launch()
    if not check:
        return float("nan")
    error = case.error()
    if not error <= case.rtol:
        raise AssertionError(f"{case.shape}{', ' + case.variant if case.variant else ''}: relative error {error:.2g} > {case.rtol:g}{' ' + when if when else ''}")
    return error


def timed(launch, counts: tuple = (INNER, WARMUP, REPEATS)) -> dict:
    """``timing.summarize`` of the milliseconds per ``launch()``: CUDA events (``time_launches``)
    around ``inner`` launches back to back, after ``warmup`` repeats, over ``repeats`` (``counts``)."""
    inner, warmup, repeats = counts

    def launches():
        for _ in range(inner):
            launch()

    return summarize(np.asarray(time_launches(launches, warmup=warmup, repeats=repeats)) / inner)


def measure(version: Version, sizes=SIZES, seed: int = 0, check: bool | None = None,
            counts: tuple | None = None) -> list[dict]:
    """One row per case of ``version`` at ``sizes``: checked against float64 (AssertionError if
    wrong); at the article's shapes, where values are computed on a GPU, also timed and checked
    again, with GFLOP/s (GEMMs, persistent) or GB/s (the memory-bound rest) beside the chip's peak
    (data/gpus.csv). ``check`` (default: wherever values are computed) and ``counts`` (launches,
    warm-up, repeats; default ``INNER``, ``WARMUP``, ``REPEATS``, or 2, 0, 2 where nothing is
    computed) make the GPU run's rehearsal on a fake GPU: every launch and event, no value compared,
    few repeats. ``Unavailable`` where the version cannot run here (cuBLAS without torch)."""
    from ..runtime.device import device_info
    from ..gpus import find_gpu

    computed = DEVICE.computes
    check = computed if check is None else check
    counts = ((INNER, WARMUP, REPEATS) if computed else (2, 0, 2)) if counts is None else counts
    chip = find_gpu(device_info()["name"]) if DEVICE.compiled else None
    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        for case in version.case(size, rng):
            row = {"kernel": version.kernel, "family": version.family, "version": version.number, "size": size,
                   "shape": case.shape, "variant": case.variant, "relative_error": checked(case, check=check), "rtol": case.rtol,
                   "flop": case.flop, "bytes": case.bytes}
            if size == "article" and DEVICE.compiled:  # timed on a GPU, rehearsed on the fake one
                row["time_ms"] = timed(case.launch, counts)
                row["relative_error_after"] = checked(case, "after timing", check)
                seconds = row["time_ms"]["median"] * 1e-3
                if version.family in ("gemm", "persistent"):
                    row["gflops"] = case.flop / seconds / 1e9
                    row["peak_gflops"] = chip["fp32_tflops"] * 1e3 if chip else None
                else:
                    row["gb_s"] = case.bytes / seconds / 1e9
                    row["peak_gb_s"] = chip["memory_gb_s"] if chip else None
            rows.append(row)
    return rows


def gemm_table(rows: list[dict]) -> str:
    """The GEMM family's timed rows as SGEMM_CUDA's README tables them: one line per version, its
    GFLOP/s at each of the article's shapes and, where cuBLAS (version 0) ran, its share of
    cuBLAS's; then one line per variant (B's layouts, the weight gradient). Empty where nothing was
    timed."""
    timed_rows = [row for row in rows if row.get("family") == "gemm" and "gflops" in row]
    if not timed_rows:
        return ""
    cublas_at = {row["shape"]: row["gflops"] for row in timed_rows if row["version"] == 0}

    def cell(row) -> str:
        share = f" ({row['gflops'] / cublas_at[row['shape']]:.0%})" if row["version"] and row["shape"] in cublas_at else ""
        return f"{row['gflops']:,.0f}{share}"

    plain = [row for row in timed_rows if not row.get("variant")]
    shapes = list(dict.fromkeys(row["shape"] for row in plain))
    versions = {row["version"]: row["kernel"] for row in plain}
    found = {(row["version"], row["shape"]): cell(row) for row in plain}
    text = table([Column("GEMM version, GFLOP/s (share of cuBLAS)", "<", 40)] + [Column(shape, ">", 20) for shape in shapes],
                 [[f"{number} {versions[number]}"] + [found.get((number, shape), "-") for shape in shapes]
                  for number in sorted(versions)])
    variants = [f"{row['kernel'] + '()' if row['version'] is None else str(row['version']) + ' ' + row['kernel']}, {row['shape']}, {row['variant']}: {cell(row)} GFLOP/s"
                for row in timed_rows if row.get("variant")]
    return "\n".join([text, *variants])
