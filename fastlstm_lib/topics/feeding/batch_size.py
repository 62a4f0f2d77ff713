"""Batch size: a step costs a fixed part plus a part per sample, so samples/s of ``fit()`` grows
with the batch (``training_throughput``); ``step_cost_line`` fits ``fixed_ms + per_sample_ms * B``.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from ...checks import check_int, check_int_list
from ...runtime.keras_backend import import_keras
from ...progress import progress_bar
from ...timing import epoch_timer
from .training import small_model

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
