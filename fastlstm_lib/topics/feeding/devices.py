"""The GPU side of notebook 31: batch size and small calls measured on every device Keras sees,
written under ``data/results/`` by one command, and read back by the notebook.

On a machine with a GPU (the torch backend needs no TensorFlow)::

    KERAS_BACKEND=torch python -m fastlstm_lib.topics.feeding --out data/results/feeding-DATE.json

``measure_devices`` does the work; ``committed_device_runs`` reads the files back. The notebook
shows committed GPU numbers only from such files (each names its device and versions); without
one, what it says about GPUs is the article's observation.
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
    """For the CPU and, when Keras sees one, the first GPU: ``training_throughput`` rows and
    ``small_call_latency`` (with the keyword arguments in ``small_calls``), each result with the
    ``environment()`` it was measured in."""
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
