"""``python -m fastlstm_lib.backward [--out FILE]``: the backward ladder against cuDNN, on a GPU."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from ..config import LSTMConfig
    from ..course.results import format_table
    from ..results import save_results
    from . import names
    from .benchmark import bench_backward

    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.backward", description=__doc__)
    parser.add_argument("--config", choices=("article", "tiny"), default="article",
                        help="article: hidden 512, batch 64, 100 steps, 4 layers (default)")
    parser.add_argument("--steps", nargs="+", metavar="STEP",
                        help=f"default: all ({', '.join(names())})")
    parser.add_argument("--no-keras", action="store_true", help="skip Keras' LSTM (cuDNN) forward + backward")
    parser.add_argument("--out", metavar="FILE", help="also write the report as JSON (e.g. data/results/backward-DATE.json)")
    args = parser.parse_args(argv)
    try:
        report = bench_backward(getattr(LSTMConfig, args.config)(), steps=args.steps, keras=not args.no_keras)
    except (RuntimeError, ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table([r for r in report["steps"] if r["options"]["timed"] == "forward+backward"]))
    print(format_table([r for r in report["steps"] if r["options"]["timed"] == "backward"]))
    grad = report["weight_gradient"]
    print(f"weight gradient {grad['shape']}: one GEMM {grad['all_steps_ms']['median']:.3f} ms, "
          f"{grad['per_step_launches']} GEMMs {grad['per_step_ms']['median']:.3f} ms: {grad['speedup']:.1f}x")
    if "forward_backward_vs_cudnn" in report:
        versus = report["forward_backward_vs_cudnn"]
        print(f"forward + backward: {versus['ours']} takes {versus['ratio']:.2f}x the time of {versus['keras']}")
    if args.out:
        path = save_results([report], args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
