"""Command line: ``python -m fastlstm_lib bench [--steps ...] [--config article|tiny|default] [--out FILE]``;
``profile`` records every step without running it and bounds it per GPU (meaningful on the simulator too);
``python -m fastlstm_lib doctor [--full]`` checks that the course will run on this machine.

Every argument is checked before any work (step and GPU names, counts, and that each output file
can be written): a bad one prints ``error: ...`` and exits with status 2, never a traceback."""

from __future__ import annotations

import argparse
import sys

CONFIGS = ("default", "article", "tiny")


def count(name: str, minimum: int):
    """An argparse type: an int >= ``minimum``, in the words of ``checks.check_int``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an int >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be an int >= {minimum}, got {value}")
        return value

    return parse


def known(check):
    """An argparse type: the text, if ``check(text)`` accepts it; its ValueError's words if not."""
    def parse(text: str) -> str:
        try:
            check(text)
        except (ValueError, TypeError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    return parse


def build_parser(fl) -> argparse.ArgumentParser:
    from fastlstm_lib.setup.doctor import add_arguments as doctor_arguments

    def ladder_step(name):
        if fl.steps.get(name).name not in fl.steps.names():
            raise ValueError(f"{name!r} is not a ladder step (one of {', '.join(fl.steps.names())})")

    any_step, a_ladder_step, a_gpu = known(fl.steps.get), known(ladder_step), known(fl.gpu)
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    doctor = commands.add_parser("doctor", help="will the course run here? each problem with the command that fixes it "
                                                "(exit status 0 only if it will)")
    doctor_arguments(doctor)  # for --help; `doctor` itself is dispatched above
    bench = commands.add_parser("bench", help="check and time the steps on this device")
    bench.add_argument("--steps", nargs="+", metavar="STEP", type=any_step,
                       help=f"default: all ({', '.join(fl.steps.names())})")
    bench.add_argument("--config", choices=CONFIGS, default="default",
                       help="article: hidden 512, batch 64, 100 steps, 4 layers; tiny: odd sizes for the "
                            "simulator; default: article on a GPU, tiny on the simulator")
    bench.add_argument("--warmup", type=count("warmup", 0), help="untimed runs first (default 3 on a GPU, 0 on the simulator)")
    bench.add_argument("--repeats", type=count("repeats", 1), help="timed runs (default 20 on a GPU, 2 on the simulator)")
    bench.add_argument("--out", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--plot", metavar="PNG", help="also draw GFLOP/s beside the published numbers (.png, .svg, .pdf, ...)")
    clocks = commands.add_parser("clocks", help="per step, the host's time to issue a forward pass beside the GPU's "
                                                 "(is it host-bound?); GPU only")
    clocks.add_argument("--steps", nargs="+", metavar="STEP", type=a_ladder_step, help="default: all ladder steps")
    clocks.add_argument("--config", choices=CONFIGS, default="default", help="as in bench")
    clocks.add_argument("--out", metavar="FILE", help="also write the results as JSON")
    profile = commands.add_parser("profile", help="record the steps without running them (launches, FLOPs, bytes, "
                                                  "dependencies) and print lower bounds per GPU and host; no GPU needed")
    profile.add_argument("--steps", nargs="+", metavar="STEP", type=a_ladder_step, help="default: the whole ladder")
    profile.add_argument("--config", choices=CONFIGS, default="article", help="default: article")
    profile.add_argument("--gpus", nargs="+", metavar="GPU", type=a_gpu, default=["M40", "T4", "A100", "H100"],
                         help="names in data/gpus.csv (default: M40 T4 A100 H100)")
    profile.add_argument("--hosts", nargs="+", choices=("cpp", "python", "measured"), default=["cpp", "python"],
                         help="rows of data/host_launch_costs.csv (measured: this project's host, driver stubbed)")
    profile.add_argument("--out", metavar="FILE", help="also write the rows as JSON")
    return parser


def check_outputs(args) -> None:
    """Every file the command will write can be written (and --plot is an image format): ValueError if not."""
    from fastlstm_lib.checks import check_writable_path

    if args.out is not None:  # every command has --out
        check_writable_path("--out", args.out)
    if getattr(args, "plot", None) is not None:  # bench's alone
        from pathlib import Path

        from fastlstm_lib.course.plots import check_image_path

        check_image_path("--plot", args.plot)
        if args.out is not None and Path(args.out).resolve() == Path(args.plot).resolve():
            raise ValueError(f"--out and --plot must be different files, got {args.out!r} for both")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["doctor"]:  # first, and alone: the doctor runs in any Python 3, even one without NumPy or Numba
        from fastlstm_lib.setup.doctor import main as doctor_main

        return doctor_main(argv[1:])
    import fastlstm_lib as fl

    try:
        args = build_parser(fl).parse_args(argv)
    except SystemExit as exit_:  # argparse has printed "error: ..." (status 2), or --help (status 0)
        return exit_.code if isinstance(exit_.code, int) else 2
    command = {"bench": bench_command, "clocks": clocks_command, "profile": profile_command}[args.command]
    try:
        check_outputs(args)
        status, rows = command(fl, args)
        if rows is not None and args.out:  # every command that measures keeps its rows in --out
            print(f"wrote {fl.save_results(rows, args.out)}")
        return status
    except (ValueError, TypeError, fl.WrongResultError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def clocks_command(fl, args) -> tuple:
    if fl.is_simulator():
        print("error: on the CUDA simulator launches run synchronously and there are no events: "
              "issue and device times mean nothing there", file=sys.stderr)
        return 2, None
    cfg = getattr(fl.LSTMConfig, args.config)()
    results = [fl.harness.bench_or_skip(name, cfg, measure=fl.host_and_device_times)
               for name in (args.steps or fl.steps.names())]
    from fastlstm_lib.tables import Column, Span, table

    rows = [[r["step"], Span(f"skipped: {r['skipped']}")] if "skipped" in r else
            [r["step"], f"issue {r['issue_ms']['median']:9.3f} ms", f"GPU {r['device_ms']['median']:9.3f} ms",
             f"wall {r['wall_ms']['median']:9.3f} ms"] for r in results]
    print(table((Column("step", "<", 18), Column("issue"), Column("GPU"), Column("wall")), rows,
                sep=(" ", "  ", "  "), header=False))
    return 0, results


def bench_command(fl, args) -> tuple:
    if any(name in fl.steps.keras_names() for name in args.steps or []):  # Keras in true FP32, like our kernels
        from fastlstm_lib.runtime.keras_backend import set_tf32

        set_tf32(False)
    cfg = getattr(fl.LSTMConfig, args.config)()
    results = fl.bench_steps(args.steps, cfg, warmup=args.warmup, repeats=args.repeats)
    print(fl.format_table(results))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")  # a file, no window
        from fastlstm_lib.course.plots import ladder_chart

        ladder_chart(results).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}" + (" (simulator: no measured bars, times mean nothing)" if fl.is_simulator() else ""))
    return 0, results


def profile_command(fl, args) -> tuple:
    """``profile``: the ladder's bounds per GPU and host, the article beside them, and how long it took."""
    import time

    from fastlstm_lib.course.profile import ladder
    from fastlstm_lib.tables import Column, table

    cfg = getattr(fl.LSTMConfig, args.config)()
    started = time.perf_counter()
    rows = ladder.ladder_bounds(gpus=args.gpus, hosts=args.hosts, steps=args.steps, cfg=cfg)
    seconds = time.perf_counter() - started
    print(f"lower bounds per forward pass, {cfg}")
    print(ladder.table_text(rows, args.gpus, args.hosts))
    if any("article_ms" in row for row in rows) and "M40" in args.gpus and "cpp" in args.hosts and "python" in args.hosts:
        checked = [[row["step"], f"article {row['article_ms']:8.2f} ms = {row['measured_over_bound']:4.2f} x "
                    f"our M40 C++-host bound" + ("" if row["consistent"] else "  BEATS THE BOUND: the bound is wrong")]
                   for row in ladder.article_check(rows)]
        print(table((Column("step", "<", 16), Column("article")), checked, header=False))
    print(f"profiled {len(rows)} steps and bounded them on {len(args.gpus)} GPUs x {len(args.hosts)} hosts "
          f"in {seconds:.1f} s")
    return 0, rows


if __name__ == "__main__":
    sys.exit(main())
