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
(data/gpus.csv), and for the GEMMs beside cuBLAS (torch.matmul, TF32 off) where torch is
installed. On the simulator it validates only, and says so: its times mean nothing. The versions
are listed, and made, in ``catalog.py``; each family file's docstring says what they add.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .. import simulator
from ..device import device_info
from ..gpus import find_gpu
from ..timing import issue_and_run_times
from .catalog import SIZES, VERSIONS, select

RTOL = 1e-5
#: Launches per timed repeat, warm-up repeats, timed repeats.
INNER, WARMUP, REPEATS = 20, 3, 30


def checked(case, when: str) -> float:
    """The case's relative error, after a fresh launch; ``when`` says which check it is."""
    case.reset()
    case.launch()
    error = case.error()
    if not error <= RTOL:  # NaN and inf fail too
        raise AssertionError(f"{case.shape}: relative error {error:.2g} > {RTOL:g} {when}")
    return error


def timed(case) -> dict:
    """Median, min and max milliseconds per launch (CUDA events around INNER launches)."""
    def launches():
        for _ in range(INNER):
            case.launch()

    times = np.asarray(issue_and_run_times(launches, warmup=WARMUP, repeats=REPEATS)["device"]) / INNER
    return {"median": float(np.median(times)), "min": float(times.min()), "max": float(times.max())}


def cublas_ms(m: int, n: int, k: int) -> float | None:
    """cuBLAS's median ms for an (m x k) @ (k x n) FP32 product (torch, TF32 off), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for repeat in range(WARMUP + REPEATS):
        start.record()
        for _ in range(INNER):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        if repeat >= WARMUP:
            times.append(start.elapsed_time(end) / INNER)
    return float(np.median(times))


def rate(case, ms: float, chip: dict | None, flop_bound: bool) -> str:
    """GFLOP/s for the GEMMs and the persistent kernel, GB/s for the rest (memory-bound), with the chip's peak."""
    if flop_bound:
        peak = f" of {chip['fp32_tflops'] * 1e3:,.0f} peak" if chip else ""
        return f"{case.flop / ms / 1e6:,.0f} GFLOP/s{peak}"
    peak = f" of {chip['memory_gb_s']:,.0f} peak" if chip else ""
    return f"{case.bytes / ms / 1e6:,.0f} GB/s{peak}"


def run(versions, sizes=SIZES, out=print) -> int:
    """Validate (and on a GPU time) ``versions``; the number of versions that failed."""
    rng = np.random.default_rng(0)
    info = device_info()
    chip = None if simulator.SIMULATOR else find_gpu(info["name"])
    if simulator.SIMULATOR:
        out("On Numba's CUDA simulator: every version is validated at odd sizes; times need a GPU.")
        sizes = ("odd",)
    else:
        out(f"On {info['name']}: validated at odd sizes, then checked and timed at the article's shapes "
            f"(CUDA events, {INNER} launches x {REPEATS} repeats after {WARMUP}; median [min-max] per launch).")
    failed = 0
    for version in versions:
        out(f"{version.label}: {version.what}")
        for size in sizes:
            try:
                for case in version.case(size, rng):
                    error = checked(case, "")
                    line = f"  {size:<8} {case.shape}: relative error {error:.1e}"
                    if size == "article":
                        t = timed(case)
                        checked(case, "after timing")
                        line += f"; {t['median']:.4f} ms [{t['min']:.4f}-{t['max']:.4f}], {rate(case, t['median'], chip, version.family in ('gemm', 'persistent'))}"
                        if version.family == "gemm":
                            m, n, k = (int(part) for part in case.shape.split(" x "))
                            reference = cublas_ms(m, n, k)
                            if reference is not None:
                                line += f"; cuBLAS {reference:.4f} ms ({reference / t['median']:.0%} of its speed ours)"
                    out(line)
            except AssertionError as error:
                failed += 1
                out(f"  {size:<8} FAILED: {error}")
    out(f"{len(versions) - failed} of {len(versions)} versions correct" + ("" if not failed else f"; {failed} FAILED"))
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
            print(f"{version.label:<44} {version.what}")
        return 0
    return 1 if run(versions) else 0


if __name__ == "__main__":
    sys.exit(main())
