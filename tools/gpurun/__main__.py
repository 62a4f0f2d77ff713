"""``python3 -m gpurun OUT_DIR [--budget S] [--quick] [--stages N ...] [--resume DIR] [--fail NAME]`` (tools/ on
the path; ``tools/gpu_run.sh`` is the command): the supervisor (``supervisor.py``), which runs the stages in a
child process of its own (the same arguments and ``--child``) and starts it again after a stage hung or crashed."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m gpurun", description=__doc__)
    parser.add_argument("out", type=Path, help="the folder every file goes to (made if missing)")
    parser.add_argument("--budget", type=float, default=480, help="seconds for the whole run (default 480)")
    parser.add_argument("--quick", action="store_true", help="the rehearsal's small sizes (make test)")
    parser.add_argument("--stages", nargs="+", help="only these stages (names or numbers), in the usual order")
    parser.add_argument("--resume", type=Path, metavar="DIR", help="a folder holding what earlier calls brought back "
                        "(their gpu-run-N.tar.gz, or their OUT folders): run only the stages they did not do")
    parser.add_argument("--fail", metavar="NAME", help="make this stage raise (the frame's own test)")
    parser.add_argument("--killed", metavar="WHY", help="(gpu_run.sh, after it killed the run) write the stage under "
                        "way in OUT's summary and stages.json as cut (WHY), and do nothing else")
    parser.add_argument("--child", action="store_true", help="(the supervisor's) be the stages' process")
    parser.add_argument("--continue", dest="continuing", action="store_true",
                        help="(the supervisor's, with --child) continue the call whose stages.json is in OUT")
    parser.add_argument("--until", type=float, metavar="EPOCH", help="(the supervisor's, with --child) when the "
                        "call's budget ends (time.time()): the budget counts from there, its imports inside it")
    args = parser.parse_args(argv)
    if args.killed:
        from .runner import call_line, load_state, mark_ended, pack, save_state
        from .stages import STAGES

        mark_ended(args.out, "cut", args.killed, STAGES)
        state = load_state(args.out)
        state["tail"] = [call_line(state)]
        save_state(args.out, state)
        pack(args.out, state["call"])
        return 0
    if args.budget <= 0:
        parser.error(f"--budget must be a number of seconds > 0, got {args.budget}")
    from .runner import earlier_calls

    earlier = {"call": 0, "done": {}}
    if args.resume is not None and not args.continuing:
        try:
            earlier = earlier_calls(args.resume)
        except ValueError as error:
            parser.error(str(error))
        if not earlier["call"]:
            parser.error(f"--resume: no earlier call's stages.json in {args.resume} (its gpu-run-N.tar.gz, or an OUT folder)")
    from .stages import STAGES

    chosen = STAGES
    if args.stages:
        known = {s.name for s in STAGES} | {str(s.number) for s in STAGES}
        unknown = [s for s in args.stages if s not in known]
        if unknown:
            parser.error(f"--stages: unknown {', '.join(unknown)}; stages: "
                         + ", ".join(f"{s.number} {s.name}" for s in STAGES))
        chosen = [s for s in STAGES if s.name in args.stages or str(s.number) in args.stages]
    if args.fail and args.fail not in {s.name for s in STAGES}:
        parser.error(f"--fail: unknown stage {args.fail!r}")
    if not args.child:
        from .supervisor import child_command, supervise

        own = [str(args.out), *(["--quick"] if args.quick else []), *(["--stages", *args.stages] if args.stages else []),
               *(["--resume", str(args.resume)] if args.resume is not None else []),
               *(["--fail", args.fail] if args.fail else [])]
        args.out.mkdir(parents=True, exist_ok=True)
        return supervise(args.out, args.budget, child_command(own), chosen, call=earlier["call"] + 1)
    os.environ.setdefault("KERAS_BACKEND", _keras_backend())
    import fastlstm_lib  # noqa: F401  (first: it chooses GPU or simulator before numba.cuda loads)
    from .runner import Context, run_stages, trace_faults
    from .stages import environment
    from fastlstm_lib.kernels.persistent import PersistentLimitError

    args.out.mkdir(parents=True, exist_ok=True)
    trace_faults(args.out)
    if args.until is not None:  # the supervisor's end of the call, not this process's start plus its imports
        args.budget = max(1.0, args.until - time.time())
    ctx = Context(args.out, args.budget, args.quick, fail=args.fail, call=earlier["call"] + 1, done=earlier["done"],
                  continuing=args.continuing)
    ctx.unable = (PersistentLimitError,)  # the persistent grid on a GPU it cannot fit: skipped, with why
    from fastlstm_lib import DEVICE

    if DEVICE.kind == "simulator":
        print("error: no GPU here: the CUDA simulator's times mean nothing and the article's sizes take hours there; "
              "rehearse with FASTLSTM_FAKE_GPU=H100", file=sys.stderr)
        return 2
    note = (f"A STAND-IN DRIVER, {DEVICE.stand_in} (a rehearsal): no kernel runs, no value is checked, "
            "every time means nothing" if DEVICE.stand_in else "")
    records = run_stages(chosen, ctx, lambda: environment(ctx), note=note)
    failed = [r for r in records if r["status"] in ("failed", "stopped")]
    return 1 if failed else 0


def _keras_backend() -> str:
    """TensorFlow where it is installed, else torch (the GPU machine has no TensorFlow)."""
    import importlib.util

    return "tensorflow" if importlib.util.find_spec("tensorflow") else "torch"


if __name__ == "__main__":
    sys.exit(main())
