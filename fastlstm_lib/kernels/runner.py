"""Each kernel on its own: validate every version against float64 NumPy, then, on a GPU, time it.

    python -m fastlstm_lib.kernels                  # every version of every family
    python -m fastlstm_lib.kernels gemm             # a family (gemm, pointwise, pointwise_backward, reduce, persistent)
    python -m fastlstm_lib.kernels gemm 3           # one version of it
    python -m fastlstm_lib.kernels lstm_cell        # or a kernel by name
    python -m fastlstm_lib.kernels --list           # what there is, nothing run
    python -m fastlstm_lib.kernels gemm --out FILE  # on a GPU, the measured rows kept as JSON

Every version runs at odd sizes (no dimension a multiple of any tile; the exact-tile GEMM at the
least shape its tile divides), its outputs poisoned with NaN first, and must come within 1e-5
(relative, ``relative_error``) of the float64 answer. On a GPU it then runs at the article's
shapes, checked the same way before and after it is timed: CUDA events around 20 launches back to
back, after a warm-up, 30 repeats, the median per launch with the min and max, and GFLOP/s (or
GB/s for the element-wise kernels) beside the chip's FP32 peak and memory bandwidth
(data/gpus.csv); the GEMMs end with one table (``gemm_table``), each version's GFLOP/s beside
cuBLAS's, the family's version 0 (torch.matmul, TF32 off, where torch is installed). On the
simulator it validates only, and says so: its times mean nothing. ``--out FILE`` writes the
measured rows as a results file (``results.save_results``: rows ``measurement: kernel_version``,
each with ``checked`` and the device), as data/results/gemm-vs-cublas-DATE.json holds them; a
GPU's only. The versions are their files (``gemm/v<N>_*.py``, ``pointwise/v<N>_*.py``, ...),
listed in ``catalog.py``; each says what it adds.

The runner's parts, in the order a run takes them: ``select`` (a family, a kernel, a number),
``measure`` (one version's rows: ``checked``, then ``timed`` and checked again), ``describe`` (one
row's line), ``gemm_table``, ``run`` (a list of versions, each printed) and ``main``.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..checks import check_writable_path
from ..gpus import find_gpu, peak_tflops
from ..results import save_results
from ..runtime.device import DEVICE, device_info
from ..tables import Column, table
from ..timing import summarize, time_launches
from .case import Case, Unavailable
from .catalog import VERSIONS, Version
from .persistent import PersistentLimitError
from .versions import peak_of

SIZES = ("odd", "article")
#: Launches per timed repeat, warm-up repeats, timed repeats.
INNER, WARMUP, REPEATS = 20, 3, 30


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
    too). ``check=False`` (a stand-in driver, which computes nothing): launched, not compared, NaN returned."""
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
    computed) make the GPU run's rehearsal on a stand-in driver: every launch and event, no value compared,
    few repeats. ``Unavailable`` where the version cannot run here (cuBLAS without torch)."""
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
            if size == "article" and DEVICE.compiled:  # timed on a GPU, rehearsed on a stand-in
                row["time_ms"] = timed(case.launch, counts)
                row["relative_error_after"] = checked(case, "after timing", check)
                seconds = row["time_ms"]["median"] * 1e-3
                if version.family in ("gemm", "persistent"):
                    row["gflops"] = case.flop / seconds / 1e9
                    row["peak_gflops"] = peak_tflops(chip, peak_of(version.kernel)) * 1e3 if chip else None  # FP32 or TF32
                else:
                    row["gb_s"] = case.bytes / seconds / 1e9
                    row["peak_gb_s"] = chip["memory_gb_s"] if chip else None
            rows.append(row)
    return rows


# ---- print ----------------------------------------------------------------------------------------

def describe(row: dict) -> str:
    """One line of a measured case."""
    error = row["relative_error"]
    line = (f"  {row['size']:<8} {row['shape']}{', ' + row['variant'] if row.get('variant') else ''}: "
            + (f"relative error {error:.1e}" if error == error else "launched, not compared"))
    if "time_ms" in row:
        t = row["time_ms"]
        line += f"; {t['median']:.4f} ms [{t['min']:.4f}-{t['max']:.4f}], " + (
            f"{row['gflops']:,.0f} GFLOP/s" + (f" of {row['peak_gflops']:,.0f} peak" if row.get("peak_gflops") else "")
            if "gflops" in row else
            f"{row['gb_s']:,.0f} GB/s" + (f" of {row['peak_gb_s']:,.0f} peak" if row.get("peak_gb_s") else ""))
    return line


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


# ---- run ------------------------------------------------------------------------------------------

def run(versions, out=print, rows: list | None = None) -> int:
    """Validate (and on a GPU time) ``versions``, printing each; the number of versions that failed.
    A version this GPU cannot run (the persistent grid without a grid barrier, or too large for it)
    is skipped, saying why. Each measured case's row is appended to ``rows`` when one is given."""
    computed, sizes = DEVICE.computes, SIZES
    DEVICE.announce()
    if DEVICE.small:
        out("On Numba's CUDA simulator: every version is validated at odd sizes; times need a GPU.")
        sizes = ("odd",)
    elif not computed:  # a stand-in driver: numba-cuda's host path, no kernel runs
        out(f"On {device_info()['name']}, a stand-in driver ({DEVICE.stand_in}): every launch and event is "
            "made, no value is compared, and the times mean nothing.")
    else:
        out(f"On {device_info()['name']}: validated at odd sizes, then checked and timed at the article's shapes "
            f"(CUDA events, {INNER} launches x {REPEATS} repeats after {WARMUP}; median [min-max] per launch).")
    failed = skipped = 0
    rows = [] if rows is None else rows
    for version in versions:
        out(f"{version.label}: {version.what}")
        try:
            for row in measure(version, sizes):
                rows.append(row)
                out(describe(row))
        except AssertionError as error:
            failed += 1
            out(f"  FAILED: {error}")
        except PersistentLimitError as error:
            skipped += 1
            out(f"  skipped: this GPU cannot run it ({error.reason})")
        except Unavailable as error:
            skipped += 1
            out(f"  skipped: {error}")
    if gemm_table(rows):
        out(gemm_table(rows))
    out(f"{len(versions) - failed - skipped} of {len(versions)} versions "
        + ("correct" if computed else f"launched, none compared ({DEVICE.stand_in})")
        + (f"; {skipped} skipped" if skipped else "") + (f"; {failed} FAILED" if failed else ""))
    return failed


def main(argv: list[str] | None = None) -> int:
    """``python -m fastlstm_lib.kernels``: every argument checked before any work (a bad one:
    ``error: ...``, exit status 2); 1 if a version failed, else 0."""
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="a family or a kernel (default: all)")
    parser.add_argument("version", nargs="?", type=int, help="a version number of the family (default: all)")
    parser.add_argument("--list", action="store_true", help="list the versions, run nothing")
    parser.add_argument("--out", metavar="FILE",
                        help="also write the measured rows as JSON (measurement: kernel_version); GPU only")
    args = parser.parse_args(argv)
    try:
        versions = select(args.name, args.version)
        if args.out is not None:
            check_writable_path("--out", args.out)
            if args.list:
                raise ValueError("--out keeps measured rows, and --list runs nothing: give one of them")
            if DEVICE.small:
                raise ValueError("--out keeps a GPU's measurements: on the CUDA simulator nothing is timed "
                                 "(without --out the runner validates every version here)")
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    if args.list:
        for version in versions:
            print(f"{version.label:<56} {version.what}")
        return 0
    rows: list[dict] = []
    failed = run(versions, rows=rows)
    if args.out is not None:
        device = device_info()
        kept = [dict(row, measurement="kernel_version", checked=DEVICE.computes, device=device) for row in rows]
        print(f"wrote {save_results(kept, args.out)}")
    return 1 if failed else 0
