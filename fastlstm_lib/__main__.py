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
    bench = commands.add_parser("bench", help="check and time the steps on this device")
    bench.add_argument("--steps", nargs="+", metavar="STEP", help=f"default: all ({', '.join(fl.steps.names())})")
    bench.add_argument("--config", choices=CONFIGS, default="default",
                       help="article: hidden 512, batch 64, 100 steps, 4 layers; tiny: odd sizes for the "
                            "simulator; default: article on a GPU, tiny on the simulator")
    bench.add_argument("--warmup", type=int, help="untimed runs first (default 3 on a GPU, 0 on the simulator)")
    bench.add_argument("--repeats", type=int, help="timed runs (default 20 on a GPU, 2 on the simulator)")
    bench.add_argument("--out", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--plot", metavar="PNG", help="also draw GFLOP/s beside the published numbers")
    args = parser.parse_args(argv)

    if args.command == "info":
        print(json.dumps(fl.device_info(), indent=2))
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
