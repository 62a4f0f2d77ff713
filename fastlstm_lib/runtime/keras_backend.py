"""Keras and its backend: importing it quietly, and asking where it computes.

The one place that knows TensorFlow and torch as Keras backends: which runs, the GPUs it sees,
its versions, how to wait for its work and how to switch TF32 off. ``import fastlstm_lib`` only
calls ``set_tensorflow_defaults`` (read once, when TensorFlow loads); Keras loads when first needed.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import tempfile

import numpy as np


@contextlib.contextmanager
def _native_stderr_captured():
    """Send what C++ code writes to file descriptor 2 (TensorFlow's absl start-up log, written before
    ``TF_CPP_MIN_LOG_LEVEL`` applies) to a temporary file, out of the notebooks' stored outputs; if
    the body raises, the captured text is added to the error."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real descriptor 2 (an unusual embedding): nothing to catch
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException as error:
            os.dup2(saved, 2)
            sink.seek(0)
            captured = sink.read().decode(errors="replace").strip()
            if captured and hasattr(error, "add_note"):
                error.add_note("TensorFlow's log while importing:\n" + captured[-4000:])
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


_imported = None


def import_keras():
    """Import Keras (TensorFlow backend unless ``KERAS_BACKEND`` says otherwise), without log noise."""
    global _imported
    if _imported is not None:
        return _imported
    set_tensorflow_defaults()
    with _native_stderr_captured():
        import keras

        if keras.backend.backend() == "tensorflow":
            # TensorFlow looks for GPUs (and logs about it) the first time a device is touched:
            # do it now, inside the capture.
            import tensorflow as tf

            tf.config.list_logical_devices()
    _imported = keras
    return keras


def set_tensorflow_defaults() -> None:
    """TensorFlow's settings for the course, unless the environment already chose: it reads them
    once, when it loads."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # INFO and WARNING lines once absl is up
    # On a GPU TensorFlow would otherwise reserve nearly all of its memory at start-up, and our
    # Numba kernels allocate beside it in the same process (notebooks 07-11, 41, 42).
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    # TensorFlow turns its oneDNN CPU kernels on by default only on CPUs with AVX512_VNNI,
    # AVX512_BF16, AVX_VNNI or AMX (tensorflow/core/util/port.cc, DefaultOneDnnPolicy). Without
    # them its CPU Conv2D refuses channels_first (NCHW), which notebooks 20-21 run on a CPU: turn
    # them on everywhere, so every x86 laptop runs the same kernels. TF_ENABLE_ONEDNN_OPTS=0 still
    # turns them off.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def backend_name() -> str:
    """"tensorflow" or "torch" (the backends the course runs Keras on)."""
    return import_keras().backend.backend()


def tensorflow_reason() -> str | None:
    """None when TensorFlow's own APIs (tf.data, tf.config) can be used here; otherwise why not."""
    backend = backend_name()
    if backend != "tensorflow":
        return f"the Keras backend is {backend!r}, not 'tensorflow'"
    return None


def gpu_names() -> list[str]:
    """Names of the GPUs the Keras backend can use ([] on a CPU)."""
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        return [tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
                for gpu in tf.config.list_physical_devices("GPU")]
    if backend == "torch":
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return []


def gpu_device() -> tuple[str | None, str]:
    """("gpu:0", its name) when the Keras backend sees a GPU, else (None, why not)."""
    names = gpu_names()
    if names:
        return "gpu:0", names[0]
    return None, f"the Keras backend ({backend_name()}) sees no GPU"


def backend_device() -> dict:
    """Where Keras computes: the backend and its device's name (a GPU's, or "CPU")."""
    names = gpu_names()
    return {"backend": backend_name(), "name": names[0] if names else "CPU", "gpu": bool(names)}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as lines:
            for line in lines:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def onednn_enabled():
    """Whether TensorFlow runs its oneDNN CPU kernels (None where that can't be read)."""
    try:
        from tensorflow.python.util import _pywrap_util_port  # what TensorFlow's own tests ask

        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        return None


def environment() -> dict:
    """Where Keras computes and with what: recorded with every Keras measurement."""
    keras = import_keras()
    backend = keras.backend.backend()
    gpus = gpu_names()
    info = {
        "device": gpus[0] if gpus else f"CPU: {cpu_name()} ({os.cpu_count()} logical cores)",
        "gpus": len(gpus),
        "backend": backend,
        "keras": keras.__version__,
        "python": platform.python_version(),
    }
    if backend == "tensorflow":
        import tensorflow as tf

        build = tf.sysconfig.get_build_info()
        info["tensorflow"] = tf.__version__
        info["cuda"] = build.get("cuda_version") if gpus else None
        info["cudnn"] = build.get("cudnn_version") if gpus else None
        info["onednn"] = onednn_enabled()
    elif backend == "torch":
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda if gpus else None
        info["cudnn"] = torch.backends.cudnn.version() if gpus else None
    # On Ampere and newer GPUs float32 matrix math may run as TF32 on the Tensor Cores.
    info["tf32"] = tf32_enabled() if gpus else None
    return info


def device_label(env: dict) -> str:
    """'NVIDIA H100 · tensorflow 2.21.0 · Keras 3.15.1': a short label for tables and charts."""
    framework = env.get("tensorflow") or env.get("torch") or ""
    return f"{env['device']} · {env['backend']} {framework} · Keras {env['keras']}".replace("  ", " ")


def set_tf32(enabled: bool) -> None:
    """Allow (or forbid) TF32 for FP32 matrix math in the Keras backend (Ampere and later GPUs):
    faster and less precise than our kernels' true FP32, so fair comparisons turn it off."""
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(bool(enabled))
    elif backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = bool(enabled)
        torch.backends.cudnn.allow_tf32 = bool(enabled)


@contextlib.contextmanager
def strict_float32():
    """TF32 off inside (true float32 convolutions and matrix math), each flag restored on the way
    out: TensorFlow and torch run float32 convolutions as TF32 on Ampere and newer GPUs by default
    (relative errors of 1e-4 to 1e-3: 9.8e-05 on the article-size LSTM, notebook 10), so
    comparisons that mean float32 run inside this. torch's two flags are saved apart (their
    defaults differ: cuDNN's on, matmul's off)."""
    backend = backend_name()
    if backend == "torch":
        import torch

        saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    else:
        saved = tf32_enabled()  # None on another backend: left alone, as set_tf32 leaves it
    set_tf32(False)
    try:
        yield
    finally:
        if backend == "torch":
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
        elif saved is not None:
            set_tf32(saved)


def tf32_enabled() -> bool | None:
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.experimental.tensor_float_32_execution_enabled())
    if backend == "torch":
        import torch

        return bool(torch.backends.cudnn.allow_tf32)
    return None


def _not_retracing(record) -> bool:
    return "triggered tf.function retracing" not in record.getMessage()


def quiet_retracing_warnings(tf) -> None:
    """Each runner compiles its own model once, on purpose; TensorFlow counts those compilations
    across functions and warns about "retracing", which here is noise. Drop just that message."""
    logger = tf.get_logger()
    if _not_retracing not in logger.filters:
        logger.addFilter(_not_retracing)


def compiled_inference(model):
    """``model(x, training=False)`` as the backend runs it fastest: a tf.function on TensorFlow
    (no Python between the ops), plain eager calls on torch (each op already on the GPU)."""
    if backend_name() == "tensorflow":
        import tensorflow as tf

        quiet_retracing_warnings(tf)
        return tf.function(lambda x: model(x, training=False), jit_compile=False, reduce_retracing=True)
    return lambda x: model(x, training=False)


def wait_for(y) -> None:
    """Return only when the backend has finished computing ``y``."""
    if backend_name() == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return
    np.asarray(y[(0,) * len(y.shape)])  # a one-element copy to the host waits for all of y's work
