"""Command line: ``python -m fastlstm_lib bench [--steps ...] [--config article|tiny|default] [--out FILE]``."""

from __future__ import annotations

import argparse
import json
import sys

CONFIGS = ("default", "article", "tiny")


def main(argv=None) -> int:
    import fastlstm_lib as fl

    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="print the device and software versions")
    gemm = commands.add_parser("gemm", help="our GEMM against cuBLAS (via torch, TF32 off) on the article's GEMM shapes; GPU only")
    gemm.add_argument("--out", metavar="FILE", help="also write the rows as JSON")
    bench = commands.add_parser("bench", help="check and time the steps on this device")
    bench.add_argument("--steps", nargs="+", metavar="STEP", help=f"default: all ({', '.join(fl.steps.names())})")
    bench.add_argument("--config", choices=CONFIGS, default="default",
                       help="article: hidden 512, batch 64, 100 steps, 4 layers; tiny: odd sizes for the "
                            "simulator; default: article on a GPU, tiny on the simulator")
    bench.add_argument("--warmup", type=int, help="untimed runs first (default 3 on a GPU, 0 on the simulator)")
    bench.add_argument("--repeats", type=int, help="timed runs (default 20 on a GPU, 2 on the simulator)")
    bench.add_argument("--out", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--plot", metavar="PNG", help="also draw GFLOP/s beside the published numbers")
    bench.add_argument("--tf32", choices=("off", "on"), default="off",
                       help="for the Keras steps (keras_cudnn, ...): allow TF32 matrix math (default off: true FP32, "
                            "like our kernels)")
    sweep = commands.add_parser("sweep", help="time steps at several batch sizes (hidden 512, 100 steps, 4 layers)")
    sweep.add_argument("--steps", nargs="+", metavar="STEP", default=["wavefront", "persistent"])
    sweep.add_argument("--batches", nargs="+", type=int, default=[1, 4, 16, 64])
    sweep.add_argument("--config", choices=CONFIGS, default="default", help="the base config whose batch is varied")
    sweep.add_argument("--out", metavar="FILE", help="also write the results as JSON")
    sweep.add_argument("--tf32", choices=("off", "on"), default="off", help="for the Keras steps, as in bench")
    args = parser.parse_args(argv)
    if args.command in ("bench", "sweep") and any(name in fl.steps.keras_names() for name in args.steps or []):
        from fastlstm_lib.keras_steps import set_tf32

        set_tf32(args.tf32 == "on")

    if args.command == "info":
        print(json.dumps(fl.device_info(), indent=2))
        return 0
    if args.command == "gemm":
        from fastlstm_lib.gemm_bench import bench_gemm_vs_cublas

        try:
            rows = bench_gemm_vs_cublas()
        except RuntimeError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for row in rows:
            print(f"{row['shape']:<34} ours {row['ours_gflops']:8.0f} GFLOP/s  cuBLAS {row['cublas_gflops']:8.0f} GFLOP/s"
                  f"  ({100 * row['fraction_of_cublas']:.0f}% of cuBLAS)")
        if args.out:
            print(f"wrote {fl.save_results(rows, args.out)}")
        return 0
    if args.command == "sweep":
        try:
            results = fl.bench_batch_sweep(args.steps, args.batches, getattr(fl.LSTMConfig, args.config)())
        except (ValueError, TypeError, fl.WrongResultError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for r in results:
            where = f"batch {r['config']['batch']:>4} {r['step']:<16}"
            print(where + (f" skipped: {r['skipped']}" if "skipped" in r else
                           f" {r['time_ms']['median']:10.3f} ms {r['gflops']:9.1f} GFLOP/s"))
        if args.out:
            print(f"wrote {fl.save_results(results, args.out)}")
        return 0
    cfg = getattr(fl.LSTMConfig, args.config)()
    try:
        results = fl.bench_steps(args.steps, cfg, warmup=args.warmup, repeats=args.repeats)
    except (ValueError, TypeError, fl.WrongResultError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(fl.format_table(results))
    if args.out:
        print(f"wrote {fl.save_results(results, args.out)}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")  # a file, no window
        from fastlstm_lib.plots import ladder_chart

        ladder_chart(results).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}" + (" (simulator: no measured bars, times mean nothing)" if fl.is_simulator() else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
