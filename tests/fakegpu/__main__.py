"""``python -m fakegpu host-times --gpu H100 [--out FILE]`` (tests/ on PYTHONPATH): the host's cost per pass, measured.

Starts a fresh Python with ``FASTLSTM_FAKE_GPU`` set (the fake must be loaded before Numba is),
which issues one forward pass of every step at the article's size through numba-cuda's real
dispatch path and reports, per step, the CPU time Python and numba-cuda spent issuing it, the
fake driver's own time taken out (``tour.host_times``): per pass and per launch, as the runner
issues it (its first pass replayed, ``fastlstm_lib/replay.py``), running the step's own code, and
numba-cuda's floor (the same kernels launched bare with the same arguments). MEASURED ON
THIS HOST, with the driver stubbed: a real driver adds its own few microseconds per launch.
``tour`` runs the whole fake-GPU tour instead.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys


def run_in_fake_gpu(gpu: str, *args: str) -> dict:
    """``python -m fakegpu.tour *args`` with the fake ``gpu``; its JSON report."""
    from . import child_environment

    done = subprocess.run([sys.executable, "-m", "fakegpu.tour", *args], capture_output=True, text=True,
                          env=child_environment(gpu))
    if done.returncode != 0:
        raise RuntimeError(f"the fake {gpu} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def host_table(steps: dict) -> str:
    """The host-times report as a table: per launch replayed, running the step's code, and numba-cuda's
    floor; per pass as one CUDA Graph."""
    lines = [f"{'step':<18}{'launches':>9}{'ms per pass':>13}{'us per launch':>15}{'own code':>10}"
             f"{'floor':>8}{'vs floor':>10}{'graph ms per pass':>19}"]
    for name, row in steps.items():
        lines.append(f"{name:<18}" + (f"skipped: {row['skipped']}" if "skipped" in row else
                                      f"{row['launches']:>9}{row['per_pass_ms']:>13.1f}{row['per_launch_us']:>15.1f}"
                                      f"{row['own_code_per_launch_us']:>10.1f}{row['floor_per_launch_us']:>8.1f}"
                                      f"{row['vs_floor']:>10.2f}{row['graph_per_pass_ms']:>19.3f}"))
    return "\n".join(lines)


def host_times(gpu: str = "H100") -> dict:
    """Per step: launches, CPU ms per pass and us per launch to issue one article-sized forward pass."""
    from fastlstm_lib import gpus

    gpus.gpu(gpu)  # ValueError naming the known GPUs
    steps = run_in_fake_gpu(gpu, "--host-times")
    return {"what": "host CPU time to issue one forward pass at the article's size, the fake driver's own time "
                    "taken out: measured on this host with the CUDA driver stubbed (the fake GPU, tests/fakegpu)",
            "gpu_presented": gpu, "host": platform.processor() or platform.machine(),
            "python": platform.python_version(), "steps": steps}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fakegpu", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    host = commands.add_parser("host-times", help="the host's CPU time per pass and per launch, driver stubbed")
    host.add_argument("--gpu", default="H100", help="the GPU the fake presents (default H100; plans depend on it)")
    host.add_argument("--out", metavar="FILE", help="also write the report as JSON")
    tour = commands.add_parser("tour", help="every GPU path once on the fake GPU; prints a JSON report")
    tour.add_argument("--gpu", default="T4")
    tour.add_argument("--out", metavar="FILE", help="also write the report as JSON")
    notebooks = commands.add_parser("notebooks", help="execute notebooks on the fake GPU (outputs not compared; "
                                                      "exit status 1 if any cell raises)")
    notebooks.add_argument("--gpu", default="T4")
    notebooks.add_argument("--jobs", type=int, default=1, help="notebooks executed at a time (default 1)")
    notebooks.add_argument("paths", nargs="+", metavar="NOTEBOOK")
    args = parser.parse_args(argv)
    if args.command == "notebooks":
        from . import notebooks as runner

        if args.jobs < 1:
            parser.error(f"--jobs must be at least 1, got {args.jobs}")
        failures = 0
        for report in runner.run_all(args.paths, args.gpu, args.jobs):
            failures += report["error"] is not None
            print(f"{report['notebook']:<36} fake {args.gpu}: {report['seconds']:>6.1f} s  " +
                  (f"FAILED in cell {report['failed_cell']}: {report['error']}" if report["error"] else
                   f"ok; value checks that could not pass (nothing runs): {report['value_checks']}"), flush=True)
        print(f"notebooks: {len(args.paths) - failures} passed, {failures} failed")
        return 1 if failures else 0
    try:
        report = host_times(args.gpu) if args.command == "host-times" else run_in_fake_gpu(args.gpu)
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.command == "host-times":
        print(f"{report['what']}\npresenting a fake {args.gpu}; host {report['host']}, Python {report['python']}")
        print(host_table(report["steps"]))
    else:
        print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
