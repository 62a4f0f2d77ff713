"""The GPU side of notebook 31: batch size and small calls on every device Keras sees
(``measure_devices``, run by ``python -m fastlstm_lib.topics.feeding``), and the files it wrote
under data/results/ (``committed_device_runs``).
"""

from __future__ import annotations

import os

from ...checks import check_bool, check_int, check_int_list
from ...runtime.keras_backend import cpu_name, environment, gpu_device
from ...results import RESULTS, load_results
from .batch_size import CPU, training_throughput
from .small_calls import small_call_latency

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
