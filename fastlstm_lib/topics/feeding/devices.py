"""Notebook 31's measurements: samples/s of ``fit()`` against batch size and single-sample calls, on
every device Keras sees (``measure_devices``, run by ``python -m fastlstm_lib.topics.feeding``)."""

from __future__ import annotations

import math
import os
import statistics

import numpy as np

from ...checks import check_bool, check_int, check_int_list, check_keras_model, check_str
from ...runtime.keras_backend import cpu_name, environment, gpu_device, import_keras, strict_float32
from ...progress import progress_bar
from ...results import RESULTS, load_results
from ...timing import epoch_timer, wall_times
from .feeders import small_model

#: The CPU as a Keras device. "cpu", not "cpu:0": Keras' torch backend (3.15) creates variables
#: on "cpu" and, under a "cpu:0" scope, copies them into tensors that get no gradient.
CPU = "cpu"


def training_throughput(batch_sizes, *, device: str = CPU, n_samples: int = 8192, max_steps: int = 128,
                        n_features: int = 64, hidden: int = 256, repeats: int = 3, seed: int = 0,
                        progress: bool = False) -> list[dict]:
    """Samples per second of ``fit()`` on in-memory data, for each batch size, on ``device``.

    Per batch size: a fresh model built on the device, one warm-up epoch (tracing), then
    ``repeats`` timed epochs over ``n_samples`` samples, or fewer: at most ``max_steps`` steps
    per epoch, so that small batches do not take all day. Returns dicts with ``batch_size``,
    ``samples`` (per epoch), ``samples_per_s`` (median), ``min``/``max`` and ``step_ms``."""
    batch_sizes = check_int_list("batch_sizes", batch_sizes)
    n_samples = check_int("n_samples", n_samples)
    max_steps = check_int("max_steps", max_steps)
    repeats = check_int("repeats", repeats)
    if not isinstance(device, str):
        raise TypeError(f"device must be a string like 'cpu' or 'gpu:0', got {device!r}")
    too_big = [b for b in batch_sizes if b > n_samples]
    if too_big:
        raise ValueError(f"batch sizes {too_big} are larger than n_samples={n_samples}")
    keras = import_keras()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, n_features), dtype=np.float32)
    y = (x[:, :1] * 0.5).astype(np.float32)
    rows = []
    for batch_size in progress_bar(batch_sizes, f"batch sizes on {device}", "run", enabled=progress):
        samples = min(n_samples, max_steps * batch_size)
        timer = epoch_timer()
        with keras.device(device):
            model = small_model(n_features, hidden, seed=seed)
            model.fit(x[:samples], y[:samples], batch_size=batch_size, epochs=1 + repeats, shuffle=False,
                      verbose=0, callbacks=[timer])
        seconds = timer.seconds[1:]  # the first epoch traced the step: warm-up
        steps = math.ceil(samples / batch_size)
        rows.append({
            "device": device, "batch_size": batch_size, "samples": samples,
            "samples_per_s": samples / statistics.median(seconds),
            "min": samples / max(seconds), "max": samples / min(seconds),
            "step_ms": statistics.median(seconds) / steps * 1e3,
        })
    return rows


def step_cost_line(rows: list[dict]) -> dict:
    """``step_ms ~ fixed_ms + per_sample_ms * B`` fitted on relative errors, and ``break_even``,
    the batch whose per-sample work equals the fixed cost."""
    if not isinstance(rows, (list, tuple)) or len(rows) < 2:
        raise ValueError(f"rows must be at least two training_throughput rows, got {rows!r}"[:200])
    sizes = np.array([r["batch_size"] for r in rows], dtype=float)
    step_ms = np.array([r["step_ms"] for r in rows], dtype=float)
    per_sample, fixed = np.polyfit(sizes, step_ms, 1, w=1 / step_ms)
    return {"fixed_ms": float(fixed), "per_sample_ms": float(per_sample),
            "break_even": float(fixed / per_sample) if per_sample > 0 else math.inf}


def single_sample_callers(model) -> dict:
    """Ways to get one sample's prediction out of ``model``: name -> function(x) -> NumPy.

    Each returns a NumPy array, so each pays for getting the answer back to Python. The
    compiled ones exist on the TensorFlow backend only (tf.function, and XLA via jit_compile)."""
    keras = check_keras_model("model", model, hint=" (e.g. from small_model)")

    def as_numpy(tensor):
        return keras.ops.convert_to_numpy(tensor)

    callers = {
        "model.predict(x)": lambda x: model.predict(x, verbose=0),
        "model.predict_on_batch(x)": lambda x: as_numpy(model.predict_on_batch(x)),
        "model(x)": lambda x: as_numpy(model(x, training=False)),
    }
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        graph = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
        xla = tf.function(lambda x: model(x, training=False), jit_compile=True, reduce_retracing=True)
        callers["tf.function(model)(x)"] = lambda x: graph(x).numpy()
        callers["XLA: tf.function(jit_compile=True)"] = lambda x: xla(x).numpy()
    return callers


def small_call_latency(*, device: str = CPU, n_features: int = 64, hidden: int = 256, repeats: dict | None = None,
                       seed: int = 0) -> dict:
    """Milliseconds per single-sample call of each of ``single_sample_callers`` on ``device``
    (``repeats``: per caller, after 3 warm-ups), TF32 off so that ``outputs_agree`` within 1e-4.
    Returns {"device", "outputs_agree", "tf32", "callers_ms": {name: [ms, ...]}}."""
    check_str("device", device, example="cpu")
    repeats = {"model.predict(x)": 15, "default": 200} if repeats is None else repeats
    if not isinstance(repeats, dict) or "default" not in repeats:
        raise TypeError(f"repeats must be a dict with a 'default' count, got {repeats!r}")
    n_features, hidden = check_int("n_features", n_features), check_int("hidden", hidden)
    seed = check_int("seed", seed, minimum=0)
    for name, count in repeats.items():
        check_int(f"repeats[{name!r}]", count)
    keras = import_keras()
    x = np.random.default_rng(seed).standard_normal((1, n_features), dtype=np.float32)
    with keras.device(device), strict_float32():
        model = small_model(n_features, hidden, seed=seed)
        callers = single_sample_callers(model)
        outputs = {name: np.asarray(call(x)) for name, call in callers.items()}
        first = next(iter(outputs.values()))
        agree = all(out.shape == first.shape and np.allclose(out, first, rtol=1e-4, atol=1e-5) for out in outputs.values())
        times = {}
        for name, call in callers.items():
            count = check_int(f"repeats[{name!r}]", repeats.get(name, repeats["default"]))
            times[name] = wall_times(lambda: call(x), warmup=3, repeats=count)
    return {"device": device, "outputs_agree": bool(agree), "tf32": False, "callers_ms": times}


#: Committed files of this measurement: data/results/feeding-*.json.
PATTERN = "feeding-*.json"
#: Batch sizes of the throughput sweep (the article compared 64 and 1024).
BATCH_SIZES = (8, 64, 512, 1024, 4096)


def measure_devices(batch_sizes=BATCH_SIZES, *, n_samples: int = 8192, max_steps: int = 64, repeats: int = 3,
                    small_calls: dict | None = None, progress: bool = False) -> list[dict]:
    """``training_throughput`` and ``small_call_latency(**small_calls)`` on the CPU and the first
    GPU, each with its ``environment()``."""
    small_calls = {} if small_calls is None else small_calls
    if not isinstance(small_calls, dict):
        raise TypeError(f"small_calls must be a dict of small_call_latency arguments, got {type(small_calls).__name__}")
    batch_sizes = check_int_list("batch_sizes", batch_sizes)
    n_samples, max_steps = check_int("n_samples", n_samples), check_int("max_steps", max_steps)
    repeats = check_int("repeats", repeats)
    check_bool("progress", progress)
    env = environment()
    gpu, gpu_name = gpu_device()
    names = {CPU: f"CPU: {cpu_name()} ({os.cpu_count()} logical cores)", gpu: gpu_name}
    results = []
    for device in [CPU] + ([gpu] if gpu else []):
        results.append({
            "measurement": "feeding", "device": device,
            "device_name": names[device],
            "environment": env,
            "throughput": training_throughput(batch_sizes, device=device, n_samples=n_samples, max_steps=max_steps,
                                              repeats=repeats, progress=progress),
            "small_calls": small_call_latency(device=device, **small_calls),
        })
    return results


def committed_device_runs() -> list[dict]:
    """Every result of ``measure_devices`` committed under data/results/ (``file`` added)."""
    return [dict(result, file=path.name) for path in sorted(RESULTS.glob(PATTERN))
            for result in load_results(path) if result.get("measurement") == "feeding"]
