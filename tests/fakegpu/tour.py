"""Everything the course does on a GPU, run once on the fake GPU: ``python -m fakegpu.tour``.

With ``FASTLSTM_FAKE_GPU=<GPU>`` set and tests/ on PYTHONPATH, this runs, through numba-cuda's
real host path: every forward step at the course's odd sizes and at the article's size (two of them
under the "tf32" GEMM policy too, refused below compute capability 8.0), every backward step,
``FastLSTM``'s forward and backward, ``fl.bench``, ``fl.profile`` (the chip read from the
driver), the clocks and the doctor. Each item ends "ok", "skipped: <the library's reason>"
(a step the GPU cannot run, such as the persistent one on an M40) or "failed: <error>". It
prints one JSON object: the items, every launch the driver refused, every error inside the
fake, the device attributes asked for that the fake does not model, and the launches recorded.
Values are not computed in this mode (kernels never run); the simulator checks them.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def _item(results: dict, name: str, call) -> None:
    from fastlstm_lib.kernels.case import Unavailable
    from fastlstm_lib.kernels.persistent import PersistentLimitError
    from fastlstm_lib.steps.gemm_policy import PolicyNotOffered
    from . import state

    before = len(state().launches())
    started = time.perf_counter()
    try:
        returned = call()
        skipped = [r["skipped"] for r in returned if isinstance(r, dict) and "skipped" in r] \
            if isinstance(returned, list) else []
        outcome = f"skipped: {skipped[0]}" if skipped else "ok"  # a bench that skipped a step, with why
    except (PersistentLimitError, Unavailable, PolicyNotOffered) as error:  # the library's "this GPU cannot run it"
        outcome = f"skipped: {error}"
    except Exception as error:  # noqa: BLE001 - the tour reports every failure
        outcome = f"failed: {type(error).__name__}: {error}"
        traceback.print_exc(file=sys.stderr)
    results[name] = {"outcome": outcome, "launches": len(state().launches()) - before,
                     "seconds": round(time.perf_counter() - started, 2)}


def _launches_tf32(step, x, params) -> None:
    """``step``'s forward pass under the "tf32" GEMM policy, which must launch GEMM version 9."""
    import fastlstm_lib as fl

    with fl.count_launches() as launches:
        step.forward(x, params, gemms="tf32")
    if "tf32_gemm" not in launches:
        raise RuntimeError(f"gemms='tf32' launched no tf32_gemm: {dict(launches)}")


def run(parts=("forward", "backward", "harness", "keras")) -> dict:
    import numpy as np

    import fastlstm_lib as fl

    from . import active, state

    if active() is None:
        raise RuntimeError("set FASTLSTM_FAKE_GPU=<GPU> (a row of data/gpus.csv) before running the tour")
    odd = fl.LSTMConfig(batch=3, seq_len=5, input_size=7, hidden=13, layers=2)
    article = fl.LSTMConfig.article()
    results: dict = {}
    problems = {cfg: (fl.random_input(cfg, seed=1), fl.init_params(cfg, seed=0)) for cfg in (odd, article)}
    if "forward" in parts:
        for name in fl.steps.names():
            for label, cfg in (("odd", odd), ("article", article)):
                x, params = problems[cfg]
                _item(results, f"forward {name} {label}", lambda: fl.steps.get(name).forward(x, params))
        x, params = problems[article]
        for name in ("wavefront", "persistent"):  # the "tf32" GEMM policy: version 9 on compute capability 8.0+
            _item(results, f"forward {name} article tf32", lambda: _launches_tf32(fl.steps.get(name), x, params))
    if "backward" in parts:
        x, params = problems[odd]
        dy = np.ones((odd.batch, odd.seq_len, odd.hidden), np.float32)
        for name in fl.backward.names():
            _item(results, f"backward {name} odd", lambda: fl.backward.get(name).backward(x, params, dy))
    if "harness" in parts:
        _item(results, "bench baseline odd", lambda: fl.bench("baseline", odd))
        _item(results, "bench_steps odd", lambda: fl.bench_steps(cfg=odd, progress=False, warmup=0, repeats=1))
        _item(results, "bench persistent article", lambda: fl.bench_steps(["persistent"], cfg=article,
                                                                          progress=False, warmup=0, repeats=1))
        for name in fl.steps.names():
            _item(results, f"profile {name} article", lambda: fl.profile(name, article))
        _item(results, "clocks odd", lambda: fl.host_and_device_times("fused_pointwise", odd, warmup=0, repeats=2))
        for name in fl.steps.names():  # captured into a CUDA Graph, launched whole (fastlstm_lib/runtime/graphs.py)
            _item(results, f"graph {name} odd", lambda: fl.bench(name, odd, graph=True, warmup=1, repeats=2))
        backward_last = fl.backward.names()[-1]
        _item(results, "graph backward odd", lambda: fl.bench(fl.backward.get(backward_last), odd, graph=True,
                                                             warmup=1, repeats=2))

        def clocks_command():
            from fastlstm_lib.__main__ import main

            if main(["clocks", "--config", "tiny", "--steps", "combined_inputs", "persistent"]) != 0:
                raise RuntimeError("python -m fastlstm_lib clocks failed")

        _item(results, "clocks command tiny", clocks_command)
        from fastlstm_lib.kernels.catalog import VERSIONS
        from fastlstm_lib.kernels.runner import measure

        for version in VERSIONS:  # each alone, at odd sizes and the article's (python -m fastlstm_lib.kernels)
            _item(results, f"kernel {version.label}",
                  lambda version=version: measure(version, check=False, counts=(2, 0, 2)))
        _item(results, "persistent_limits", lambda: fl.persistent_limits())

        def doctor():
            from fastlstm_lib.setup import doctor as doctor_

            lines = []
            doctor_.run(full=False, out=lines.append)
            results["doctor report"] = "\n".join(lines)

        _item(results, "doctor", doctor)
    if "keras" in parts:
        def fast_lstm():
            layer = fl.keras_layer.FastLSTM(odd.hidden, return_sequences=True)
            x, _ = problems[odd]
            import tensorflow as tf

            inputs = tf.constant(x)
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                y = layer(inputs)
            tape.gradient(y, [inputs] + layer.trainable_weights)

        _item(results, "FastLSTM forward+backward odd", fast_lstm)
    fake = state()
    kernels: dict = {}
    for call in fake.launches():
        d = call.details
        k = kernels.setdefault(d["kernel"], {"launches": 0, "max_blocks": 0, "threads": set(), "registers": d["registers"],
                                             "max_dynamic_shared": 0, "cooperative": False})
        k["launches"] += 1
        k["max_blocks"] = max(k["max_blocks"], d["grid"][0] * d["grid"][1] * d["grid"][2])
        k["threads"].add(d["block"][0] * d["block"][1] * d["block"][2])
        k["max_dynamic_shared"] = max(k["max_dynamic_shared"], d["dynamic_shared"])
        k["cooperative"] |= d["cooperative"]
    for k in kernels.values():
        k["threads"] = sorted(k["threads"])
    opt_ins = [c.details for c in fake.calls if c.api == "set_attribute"]
    return {"gpu": active(), "items": results, "kernels": kernels, "opt_ins": opt_ins, "refused": fake.refused, "errors": fake.errors,
            "unmodelled_attributes": sorted(fake.device.unmodelled), "launches": len(fake.launches()),
            "graphs": {"captured": sum(c.api == "end_capture" for c in fake.calls),
                       "launched": sum(c.api == "graph_launch" for c in fake.calls)},
            "driver_seconds": round(fake.driver_seconds, 2)}


def host_times(cfg=None, passes: int = 5) -> dict:
    """Per step, the CPU time Python and numba-cuda spend issuing one forward pass, the fake
    driver's own time (measured by its C stubs, ctypes crossing included) taken out:
    {step: {"launches", "per_pass_ms", "per_launch_us", "own_code_per_launch_us",
    "floor_per_launch_us", "vs_floor", "graph_per_pass_ms"}}.

    - ``per_pass_ms``, ``per_launch_us``: as the runner issues a pass, its first pass replayed
      (``fastlstm_lib/replay.py``);
    - ``own_code_per_launch_us``: running the step's own ``run`` code every pass, as before replay;
    - ``floor_per_launch_us``: numba-cuda's own floor: the same kernels launched bare
      (``kernel[grid, block, stream, shared](*args)``) with the same arguments and the same event
      records and waits, written out, in the same run; ``vs_floor`` = per_launch_us / floor.
      Every figure is per kernel launch, event operations included in the pass's time;
    - ``graph_per_pass_ms``: the whole pass captured into a CUDA Graph (``graph=True``), one
      ``cuGraphLaunch`` per pass.

    Measured on this machine with the driver stubbed (the fake GPU, ``tests/fakegpu``): what a host
    of this speed adds to every pass before a GPU does any work. The median of ``passes``.
    """
    import gc
    import statistics

    import fastlstm_lib as fl

    from . import shim, state

    cfg = fl.LSTMConfig.article() if cfg is None else cfg
    x, params = fl.random_input(cfg, seed=1), fl.init_params(cfg, seed=0)
    fake, out = state(), {}

    def cpu_seconds(call, times: int = 1) -> tuple[float, int]:
        """(CPU seconds per call of ``times`` calls back to back, the driver's own time out; launches per call)."""
        before_launches, before_driver = len(fake.launches()), shim.driver_cpu_seconds()
        started = time.thread_time()
        for _ in range(times):
            call()
        spent = time.thread_time() - started - (shim.driver_cpu_seconds() - before_driver)
        return spent / times, (len(fake.launches()) - before_launches) // times

    for name in fl.steps.names():
        try:
            runner = fl.steps.get(name).runner(x, params, replay=True)
        except ValueError as error:  # the step does not fit this GPU
            out[name] = {"skipped": str(error)}
            continue
        runner.launch()  # compiled, prepared and recorded before timing

        def bare(ops=runner.replay.ops):  # numba-cuda's own calls, written out: no replay loop of ours
            for kind, target, how, args in ops:
                if kind == "launch":
                    target[how](*args)
                else:
                    getattr(target, kind)(how)

        graphed = fl.steps.get(name).runner(x, params, graph=True)
        graphed.launch()  # recorded, captured and instantiated before timing
        # (call, passes back to back per sample): a graph's pass is one driver call, so it is timed
        # over 20 passes in a row, as a training loop issues them.
        ways = {"replayed": (runner.launch, 1), "floor": (bare, 1),
                "own_code": (lambda: runner.step.run(runner.state, runner.x, runner.out), 1),
                "graph": (graphed.launch, 20)}
        costs: dict = {way: [] for way in ways}
        launches = 0
        gc.collect()
        gc.disable()  # as timeit does: the fake's log of every call grows by millions of objects, and
        try:  # a collection of them would land on whichever pass was running
            for _ in range(passes):  # interleaved, so that a slower moment of a shared host hits all four
                for way, (call, times) in ways.items():
                    spent, made = cpu_seconds(call, times)
                    costs[way].append(spent)
                    launches = made if way == "replayed" else launches
        finally:
            gc.enable()
        us = {way: statistics.median(values) * 1e6 for way, values in costs.items()}
        per = max(launches, 1)
        out[name] = {"launches": launches, "per_pass_ms": round(us["replayed"] * 1e-3, 2),
                     "per_launch_us": round(us["replayed"] / per, 1),
                     "own_code_per_launch_us": round(us["own_code"] / per, 1),
                     "floor_per_launch_us": round(us["floor"] / per, 1), "vs_floor": round(us["replayed"] / us["floor"], 2),
                     "graph_per_pass_ms": round(us["graph"] * 1e-3, 3)}
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m fakegpu.tour", description=__doc__)
    parser.add_argument("--parts", nargs="+", default=["forward", "backward", "harness", "keras"],
                        choices=["forward", "backward", "harness", "keras"])
    parser.add_argument("--host-times", action="store_true", help="instead: the host's CPU time to issue one "
                        "forward pass of each step at the article's size, the fake driver's own time taken out")
    args = parser.parse_args(argv)
    import contextlib
    import warnings

    # What the library prints along the way (the clocks command, progress) goes to stderr: stdout
    # carries the JSON report alone.
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("always")
        report = host_times() if args.host_times else run(tuple(args.parts))
    if not args.host_times:
        report["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught})
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
