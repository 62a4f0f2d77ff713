"""TensorFlow's GPU settings the article met: memory growth, several GPUs, the layout optimizer.
Where one can't apply (another backend, no GPU) it says why instead of failing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys

from ...checks import check_bool, check_seconds
from ...runtime.keras_backend import backend_name, import_keras

#: TensorFlow's switch for set_memory_growth(gpu, True) on every GPU (its GPU guide).
GROWTH_ENV = "TF_FORCE_GPU_ALLOW_GROWTH"


def enable_memory_growth() -> str:
    """Let TensorFlow take GPU memory as it needs it, instead of nearly all of it at start.

    Sets ``TF_FORCE_GPU_ALLOW_GROWTH=true`` before Keras (and TensorFlow) start, which works
    only if nothing has touched a GPU yet: call it first. Returns what it did, or why it did
    nothing. Keras is imported through ``import_keras``, so TensorFlow's start-up log stays out
    of the output.
    """
    tensorflow_started = "tensorflow" in sys.modules
    os.environ.setdefault(GROWTH_ENV, "true")
    backend = backend_name()
    if backend != "tensorflow":
        return f"skipped: Keras runs on {backend}; memory growth is a TensorFlow setting (torch's caching allocator grows on demand anyway)"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "skipped: TensorFlow sees no GPU; on the CPU memory is allocated as needed anyway"
    if os.environ[GROWTH_ENV] != "true":
        return f"not changed: {GROWTH_ENV}={os.environ[GROWTH_ENV]!r} was set before, and TensorFlow follows it"
    if tensorflow_started:
        try:
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError as error:
            return f"too late: {error} (call enable_memory_growth() first thing in a fresh process)"
    return f"memory growth on for {len(gpus)} GPU(s): TensorFlow allocates GPU memory as it needs it"


def gpu_memory_mib() -> dict | None:
    """TensorFlow's current and peak GPU memory use on GPU:0 (MiB), None without a TF GPU."""
    if backend_name() != "tensorflow":
        return None
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return None
    info = tf.config.experimental.get_memory_info("GPU:0")
    return {"current": info["current"] / 2**20, "peak": info["peak"] / 2**20}


_GRAB = r"""
import os, subprocess, sys
import tensorflow as tf
if sys.argv[1] == "growth":
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
(tf.ones((1024, 1024)) * 2.0).numpy()  # a 4 MiB tensor
out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                     capture_output=True, text=True).stdout
mine = [line.split(",")[1].strip() for line in out.splitlines() if line.split(",")[0].strip() == str(os.getpid())]
print("GRAB", mine[0] if mine else "unknown")
"""


def memory_grab_demo(timeout: float = 180.0) -> dict | str:
    """GPU memory (MiB, nvidia-smi) held by a process that made one 4 MiB tensor, growth off and on."""
    timeout = check_seconds("timeout", timeout)
    if backend_name() != "tensorflow":
        return f"skipped: Keras runs on {backend_name()}, memory growth is a TensorFlow setting"
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return "skipped: no GPU visible to TensorFlow"
    if shutil.which("nvidia-smi") is None:
        return "skipped: nvidia-smi not found, so the memory a process holds can't be read"
    used = {}
    for mode in ("default", "growth"):
        env = {key: value for key, value in os.environ.items() if key != GROWTH_ENV}  # the child decides by itself
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        out = subprocess.run([sys.executable, "-c", _GRAB, mode], env=env, capture_output=True, text=True, timeout=timeout).stdout
        value = next((line.split()[1] for line in out.splitlines() if line.startswith("GRAB ")), "unknown")
        used[mode] = float(value) if value.replace(".", "").isdigit() else None
    return used


def mirrored_strategy():
    """(tf.distribute.MirroredStrategy over all GPUs, None) or (None, why not)."""
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        return None, (f"Keras runs on {keras.backend.backend()}: MirroredStrategy is TensorFlow's "
                      "(torch would use DistributedDataParallel, one process per GPU)")
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) < 2:
        return None, f"TensorFlow sees {len(gpus)} GPU(s); data parallelism needs at least 2"
    return tf.distribute.MirroredStrategy(), None


@contextlib.contextmanager
def layout_optimizer(enabled: bool):
    """Grappler's layout optimizer (NHWC <-> NCHW rewriting on GPU) on or off inside; then the
    previous state (never set: on, TensorFlow's default)."""
    check_bool("enabled", enabled)
    import tensorflow as tf

    previous = tf.config.optimizer.get_experimental_options().get("layout_optimizer")
    tf.config.optimizer.set_experimental_options({"layout_optimizer": bool(enabled)})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"layout_optimizer": True if previous is None else previous})
