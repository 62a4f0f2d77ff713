"""TensorFlow's side of the layouts: what it runs for channels_first on a CPU (``layout_op_census``,
``start_cpu_conv_probes``) and the GPU settings the article met (memory growth, several GPUs, the
layout optimizer); where one can't apply (another backend, no GPU) it says why instead of failing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys

from ...checks import check_bool, check_keras_model, check_seconds
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


def layout_op_census(model) -> dict[str, int]:
    """Layout-relevant ops ('Conv2D NCHW', 'MaxPool NHWC', 'Transpose', ...) in the graph Keras
    builds for one forward pass, before TensorFlow's optimizers rewrite it."""
    check_keras_model("model", model)
    if backend_name() != "tensorflow":
        raise RuntimeError(f"layout_op_census needs the TensorFlow backend; Keras runs on {backend_name()}")
    import tensorflow as tf

    spec = tf.TensorSpec((None,) + tuple(model.input.shape[1:]), tf.float32)
    graph = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec).graph
    counts: dict[str, int] = {}
    for op in graph.get_operations():
        if op.type in ("Conv2D", "MaxPool", "AvgPool", "FusedBatchNormV3"):
            key = f"{op.type} {op.get_attr('data_format').decode()}"
        elif op.type == "Transpose":
            key = "Transpose"
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


_PROBE = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
result = {}
for fmt in ("NHWC", "NCHW"):
    x = np.random.default_rng(0).random((4, 8, 8, 8), dtype=np.float32)  # N=4 and H = W = C = 8: valid in both formats
    k = np.random.default_rng(1).random((3, 3, 8, 8), dtype=np.float32)
    sys.stdout.write("PROBE-BEGIN " + fmt + "\n"); sys.stdout.flush()
    try:
        y = tf.nn.conv2d(x, k, 1, "SAME", data_format=fmt).numpy()
        result[fmt] = {"ok": True, "error": None}
    except Exception as error:
        result[fmt] = {"ok": False, "error": type(error).__name__ + ": " + str(error).split(" [Op:")[0].split("}}")[-1].strip()}
    sys.stdout.write("PROBE-END " + fmt + "\n"); sys.stdout.flush()
print("PROBE-RESULT " + json.dumps(result))
"""


def _start_probe(onednn: bool) -> subprocess.Popen:
    """A child that hides every GPU, switches oneDNN on or off (TF_ENABLE_ONEDNN_OPTS) and asks
    oneDNN to log each primitive it runs (ONEDNN_VERBOSE=1)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0",
               ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen([sys.executable, "-c", _PROBE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _parse_probe(stdout: str, stderr: str, returncode: int) -> dict:
    result, current, primitives = None, None, {"NHWC": [], "NCHW": []}
    for line in stdout.splitlines():
        if line.startswith("PROBE-BEGIN "):
            current = line.split()[1]
        elif line.startswith("PROBE-END "):
            current = None
        elif line.startswith("PROBE-RESULT "):
            result = json.loads(line[len("PROBE-RESULT "):])
        elif current and line.startswith("onednn_verbose,") and ",primitive,exec," in line:
            fields = line.split(",")
            # onednn_verbose,v1,primitive,exec,cpu,<kind>,<implementation>,<prop>,<memory descriptors>,...
            primitives[current].append({"kind": fields[5], "implementation": fields[6], "memory": fields[8]})
    if result is None:
        raise RuntimeError(f"the probe process failed (exit {returncode}): {stderr[-500:]}")
    for fmt in result:
        result[fmt]["primitives"] = primitives[fmt]
    return result


class CpuConvProbes:
    """The two probe children, started at once; ``result()`` waits for them and parses what they said."""

    def __init__(self):
        self._children = {onednn: _start_probe(onednn) for onednn in (True, False)}
        self._results = None

    def result(self, timeout: float = 180.0) -> dict[bool, dict]:
        """{oneDNN on: {"NHWC": {ok, error, primitives}, "NCHW": ...}, off: ...}."""
        timeout = check_seconds("timeout", timeout)
        if self._results is None:
            try:
                self._results = {onednn: _parse_probe(*child.communicate(timeout=timeout), child.returncode)
                                 for onednn, child in self._children.items()}
            finally:
                for child in self._children.values():
                    if child.poll() is None:  # timed out: don't leave it running
                        child.kill()
                        child.communicate()
        return self._results


def start_cpu_conv_probes() -> CpuConvProbes:
    """Start both probes in the background (each child imports TensorFlow: seconds)."""
    return CpuConvProbes()
