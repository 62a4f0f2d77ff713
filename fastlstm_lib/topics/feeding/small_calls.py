"""Small calls: the cost of asking a model about one sample, through each way Keras offers
(``single_sample_callers``), timed on a device after checking they agree (``small_call_latency``).
"""

from __future__ import annotations

import numpy as np

from ...checks import check_int, check_keras_model
from ...runtime.keras_backend import import_keras, strict_float32
from ...timing import wall_times
from .batch_size import CPU
from .training import small_model


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
    if not isinstance(device, str):
        raise TypeError(f"device must be a string like 'cpu' or 'gpu:0', got {device!r}")
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
