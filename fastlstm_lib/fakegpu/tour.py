"""Everything the course does on a GPU, run once on the fake GPU: ``python -m fastlstm_lib.fakegpu.tour``.

With ``FASTLSTM_FAKE_GPU=<GPU>`` set, this runs, through numba-cuda's real host path: every
forward step at the course's odd sizes and at the article's size, every backward step,
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
    from ..kernels.persistent_plan import PersistentLimitError
    from . import state

    before = len(state().launches())
    started = time.perf_counter()
    try:
        call()
        outcome = "ok"
    except PersistentLimitError as error:  # the library's own "this GPU cannot run it"
        outcome = f"skipped: {error}"
    except Exception as error:  # noqa: BLE001 - the tour reports every failure
        outcome = f"failed: {type(error).__name__}: {error}"
        traceback.print_exc(file=sys.stderr)
    results[name] = {"outcome": outcome, "launches": len(state().launches()) - before,
                     "seconds": round(time.perf_counter() - started, 2)}


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
    if "backward" in parts:
        x, params = problems[odd]
        dy = np.ones((odd.batch, odd.seq_len, odd.hidden), np.float32)
        for name in fl.backward.names():
            _item(results, f"backward {name} odd", lambda: fl.backward.get(name).backward(x, params, dy))
    if "harness" in parts:
        _item(results, "bench baseline odd", lambda: fl.bench("baseline", odd))
        _item(results, "bench_steps article", lambda: fl.bench_steps(cfg=article, progress=False,
                                                                             warmup=0, repeats=1))
        _item(results, "profile article", lambda: [fl.profile(name, article) for name in fl.steps.names()])
        _item(results, "clocks odd", lambda: fl.host_and_device_times("fused_pointwise", odd, warmup=0, repeats=2))
        _item(results, "persistent_limits", lambda: fl.persistent_limits())

        def doctor():
            from .. import doctor as doctor_

            lines = []
            doctor_.run(full=False, out=lines.append)
            results["doctor report"] = "\n".join(lines)

        _item(results, "doctor", doctor)
    if "keras" in parts:
        def fast_lstm():
            import keras

            layer = fl.keras_layer.FastLSTM(odd.hidden, return_sequences=True)
            x, _ = problems[odd]
            import tensorflow as tf

            inputs = tf.constant(x)
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                y = layer(inputs)
            tape.gradient(y, [inputs] + layer.trainable_weights)
            del keras

        _item(results, "FastLSTM forward+backward odd", fast_lstm)
    fake = state()
    return {"gpu": active(), "items": results, "refused": fake.refused, "errors": fake.errors,
            "unmodelled_attributes": sorted(fake.device.unmodelled), "launches": len(fake.launches()),
            "driver_seconds": round(fake.driver_seconds, 2)}


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.fakegpu.tour", description=__doc__)
    parser.add_argument("--parts", nargs="+", default=["forward", "backward", "harness", "keras"],
                        choices=["forward", "backward", "harness", "keras"])
    args = parser.parse_args(argv)
    report = run(tuple(args.parts))
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
