"""Training in each layout: epoch times taken in turns on the same batches, and the accuracy both reach."""

from __future__ import annotations

import contextlib

import numpy as np

from ...checks import check_bool, check_choice, check_int
from ...runtime.keras_backend import environment, import_keras
from ...timing import epoch_timer, summarize
from .images import ImageData
from .models import DATA_FORMATS, build, check_model_name, model_label, to_layout

PRECISIONS = ("float32", "mixed_float16")
#: How each time in a result was taken (stored with it).
TIMING = ("wall clock per epoch of model.fit (timing.epoch_timer); the first epoch per layout traces and "
          "compiles the training step and is reported apart; then rounds of one epoch per layout, in turns")


@contextlib.contextmanager
def precision_policy(precision: str):
    """Keras' global dtype policy for the models built inside, restored afterwards."""
    check_choice("precision", precision, PRECISIONS)
    keras = import_keras()
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def short_error(error: BaseException) -> str:
    """The line of a TensorFlow error that says what went wrong (not the traceback of the graph)."""
    if not isinstance(error, BaseException):
        raise TypeError(f"error must be an exception, got {type(error).__name__} {error!r}")
    skip = ("Graph execution error", "Detected at node", "File ", "[[", "{{")
    lines = [line.strip() for line in str(error).splitlines()]
    useful = [line for line in lines if line and not line.startswith(skip)]
    message = useful[-1] if useful else type(error).__name__
    return message.split(" [Op:")[0].split("}} ")[-1]


def time_layouts(model: str, data: ImageData, *, precision: str = "float32",
                 jit_compile: bool = False, batch_size: int = 128, rounds: int = 5, seed: int = 0, strategy=None,
                 variant: str = "", on_error: str = "raise", env: dict | None = None, **model_options) -> list[dict]:
    """Train ``model`` (a name in BUILDERS) on ``data`` in each layout from the same seed: a compile
    epoch, ``rounds`` epochs per layout in turns (``_train_in_turns``), the test accuracy. One JSON-able
    dict per layout. ``strategy``: a tf.distribute strategy (``batch_size`` is then global); ``variant``:
    a label for any other difference; ``on_error="record"``: a layout that can't train gets ``error``."""
    check_model_name(model)
    check_choice("precision", precision, PRECISIONS)
    if not isinstance(data, ImageData):
        raise TypeError(f"data must be an ImageData (from load_images), got {type(data).__name__}")
    check_bool("jit_compile", jit_compile)
    check_choice("on_error", on_error, ("raise", "record"))
    batch_size = check_int("batch_size", batch_size)
    rounds = check_int("rounds", rounds)
    seed = check_int("seed", seed, minimum=0)
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str (a label, may be empty), got {type(variant).__name__} {variant!r}")
    if env is not None and not isinstance(env, dict):
        raise TypeError(f"env must be a dict from keras_backend.environment() or None, got {type(env).__name__}")
    if strategy is not None and not (hasattr(strategy, "scope") and hasattr(strategy, "num_replicas_in_sync")):
        raise TypeError(f"strategy must be a tf.distribute strategy or None, got {type(strategy).__name__}")
    model_label(model, data.image_size, **model_options)  # checks the size options' names before any work
    keras = import_keras()
    env = env or environment()
    runs = {}
    for data_format in DATA_FORMATS:
        keras.utils.set_random_seed(seed)
        scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
        with precision_policy(precision), scope:
            net = build(model, data_format, image_size=data.image_size, **model_options)
            # The same optimizer, loss and metric for every layout and variant.
            net.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss="sparse_categorical_crossentropy",
                        metrics=["accuracy"], jit_compile=jit_compile)
        result = {
            "kind": "cnn-layouts", "model": model, "label": model_label(model, data.image_size, **model_options),
            "options": dict(model_options), "variant": variant, "data_format": data_format, "precision": precision,
            "jit_compile": jit_compile, "batch_size": batch_size,
            "replicas": strategy.num_replicas_in_sync if strategy is not None else 1,
            "images": len(data.x_train), "image_size": data.image_size, "data": data.source,
            "params": int(net.count_params()), "env": env, "timing": TIMING, "error": None,
        }
        runs[data_format] = {"net": net, "x": to_layout(data.x_train, data_format), "timer": epoch_timer(), "result": result}
    _train_in_turns(runs, data, DATA_FORMATS, batch_size=batch_size, rounds=rounds, seed=seed, on_error=on_error)
    for data_format, run in runs.items():
        if not run["result"]["error"]:
            first, *timed = (1e3 * seconds for seconds in run["timer"].seconds)
            summary = summarize(timed)
            loss, accuracy = run["net"].evaluate(to_layout(data.x_test, data_format), data.y_test, batch_size=256, verbose=0)
            run["result"].update(first_epoch_ms=first, epoch_ms=timed, time_ms=summary,
                                 images_per_s=len(data.x_train) / (summary["median"] / 1e3),
                                 test_accuracy=float(accuracy), test_loss=float(loss), test_images=len(data.x_test))
    return [runs[data_format]["result"] for data_format in DATA_FORMATS]


def _train_in_turns(runs: dict, data: ImageData, data_formats, *, batch_size: int, rounds: int, seed: int,
                    on_error: str) -> None:
    """The compile epoch of every layout, then ``rounds`` rounds, alternating which layout goes
    first. Each epoch's order of the images is drawn once and used by every layout (so both
    layouts see the same batches, and the data order is no difference between them); the
    reordering happens before the epoch's clock starts."""
    orders = np.random.default_rng(seed)
    for turn in range(1 + rounds):
        order = orders.permutation(len(data.y_train))
        for data_format in data_formats if turn % 2 == 0 else data_formats[::-1]:
            run = runs[data_format]
            if run["result"]["error"]:
                continue
            x, y = run["x"][order], data.y_train[order]
            try:
                run["net"].fit(x, y, batch_size=batch_size, epochs=1, verbose=0, shuffle=False, callbacks=[run["timer"]])
            except Exception as error:  # TF raises InvalidArgumentError / UnimplementedError for a layout it can't run
                if on_error == "raise":
                    raise
                run["result"]["error"] = short_error(error)
