"""What TensorFlow does with channels_first on a CPU: the graph Keras builds (``layout_op_census``),
and the kernels that run (``start_cpu_conv_probes``: one Conv2D per format in child processes,
oneDNN on and off, started in the background and read later).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ...checks import check_keras_model, check_seconds
from ...runtime.keras_backend import backend_name


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
