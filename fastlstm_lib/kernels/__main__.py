"""Each kernel on its own: validate every version against float64 NumPy, then, on a GPU, time it.

    python -m fastlstm_lib.kernels                  # every version of every family
    python -m fastlstm_lib.kernels gemm             # a family (gemm, pointwise, pointwise_backward, reduce, persistent)
    python -m fastlstm_lib.kernels gemm 3           # one version of it
    python -m fastlstm_lib.kernels lstm_cell        # or a kernel by name
    python -m fastlstm_lib.kernels --list           # what there is, nothing run

Every version runs at odd sizes (no dimension a multiple of any tile; the exact-tile GEMM at the
least shape its tile divides), its outputs poisoned with NaN first, and must come within 1e-5
(relative, ``relative_error``) of the float64 answer. On a GPU it then runs at the article's
shapes, checked the same way before and after it is timed: CUDA events around 20 launches back to
back, after a warm-up, 30 repeats, the median per launch with the min and max, and GFLOP/s (or
GB/s for the element-wise kernels) beside the chip's FP32 peak and memory bandwidth
(data/gpus.csv); the GEMMs end with one table, each version's GFLOP/s beside cuBLAS's, the
family's version 0 (torch.matmul, TF32 off, where torch is installed). On the simulator it
validates only, and says so: its times mean nothing. The versions are their files
(``gemm/v<N>_*.py``, ``pointwise/v<N>_*.py``, ...), listed in ``catalog.py``; each says what it
adds. To keep the rows as a results file, ``python -m fastlstm_lib gemm --out FILE`` runs the GEMM family through ``run`` and saves them.
"""

from __future__ import annotations

import argparse
import sys

from ..runtime.device import DEVICE
from ..runtime.device import device_info
from .catalog import INNER, REPEATS, SIZES, WARMUP, Unavailable, gemm_table, measure, select
from .persistent import PersistentLimitError


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


def run(versions, out=print, rows: list | None = None) -> int:
    """Validate (and on a GPU time) ``versions``, printing each; the number of versions that failed.
    A version this GPU cannot run (the persistent grid without a grid barrier, or too large for it)
    is skipped, saying why. Each measured case's row is appended to ``rows`` when one is given."""
    computed, sizes = DEVICE.computes, SIZES
    DEVICE.announce()
    if DEVICE.small:
        out("On Numba's CUDA simulator: every version is validated at odd sizes; times need a GPU.")
        sizes = ("odd",)
    elif not computed:  # the project's fake GPU (a test mode): numba-cuda's host path, no kernel runs
        out(f"On a fake {device_info()['name']}: every launch and event is made, no value is compared, "
            "and the times mean nothing.")
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
        + ("correct" if computed else "launched, none compared (fake GPU)")
        + (f"; {skipped} skipped" if skipped else "") + (f"; {failed} FAILED" if failed else ""))
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="a family or a kernel (default: all)")
    parser.add_argument("version", nargs="?", type=int, help="a version number of the family (default: all)")
    parser.add_argument("--list", action="store_true", help="list the versions, run nothing")
    args = parser.parse_args(argv)
    try:
        versions = select(args.name, args.version)
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    if args.list:
        for version in versions:
            print(f"{version.label:<56} {version.what}")
        return 0
    return 1 if run(versions) else 0


if __name__ == "__main__":
    sys.exit(main())
