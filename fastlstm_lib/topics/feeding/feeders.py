"""Feeders compared: a small model trained on the same slow batches fed in different ways (``fit()``
with workers, tf.data, a plain loop: ``compare_feeders``), and whether the machine was idle meanwhile.
"""

from __future__ import annotations

import statistics

from ...checks import (check_bool, check_int, check_keras_model, check_number, check_records, check_seconds,
                       check_str)
from ...runtime.keras_backend import import_keras, tensorflow_reason
from ...progress import progress_bar
from ...timing import IDLE_ENOUGH, cpu_busy_elsewhere, wall_times
from .dataset import KINDS, calibrate_loops_per_ms, parse_feeder, slow_dataset
from .threads import PYTHON_SWITCH_INTERVAL_S, switch_interval
from .timeline import Timeline, epoch_phases, epoch_seconds, now, production_ms

_MODEL_HINT = " (e.g. from small_model)"


def small_model(n_features: int = 32, hidden: int = 64, *, seed: int = 0):
    """A compiled two-layer MLP (ReLU, MSE, SGD) with seeded weights: the 'training step'."""
    n_features = check_int("n_features", n_features)
    hidden = check_int("hidden", hidden)
    seed = check_int("seed", seed, minimum=0)
    keras = import_keras()
    init = keras.initializers.GlorotUniform
    model = keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(hidden, activation="relu", kernel_initializer=init(seed=seed)),
        keras.layers.Dense(hidden, activation="relu", kernel_initializer=init(seed=seed + 1)),
        keras.layers.Dense(1, kernel_initializer=init(seed=seed + 2)),
    ])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _check_trainable(model):
    keras = check_keras_model("model", model, hint=_MODEL_HINT)
    if not getattr(model, "compiled", True):
        raise ValueError("model must be compiled before training (model.compile(...)); small_model() returns one that is")
    return keras


def _check_timeline(timeline) -> Timeline:
    timeline = timeline if timeline is not None else Timeline()
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline, got {type(timeline).__name__}")
    return timeline


def feed_and_train(data, model, *, epochs: int = 4, timeline: Timeline | None = None) -> dict:
    """``model.fit(data, epochs=epochs, shuffle=False)`` on a PyDataset or a tf.data.Dataset,
    recorded by a ``Timeline``: its ``to_dict()``."""
    keras = _check_trainable(model)
    is_tf_data = False
    if tensorflow_reason() is None:
        import tensorflow as tf

        is_tf_data = isinstance(data, tf.data.Dataset)
    if not (isinstance(data, keras.utils.PyDataset) or is_tf_data):
        raise TypeError(f"data must be a keras.utils.PyDataset (e.g. SlowBatches) or a tf.data.Dataset, got {type(data).__name__}")
    epochs = check_int("epochs", epochs)
    timeline = _check_timeline(timeline)
    # shuffle=False: fit() would otherwise hand the enqueuer the batch indices in a random order.
    model.fit(data, epochs=epochs, shuffle=False, verbose=0, callbacks=[timeline.callback()])
    return timeline.to_dict()


def train_in_a_loop(dataset, model, *, epochs: int = 4, timeline: Timeline | None = None) -> dict:
    """``x, y = dataset[i]`` then ``model.train_on_batch(x, y)`` for every i, in this thread, recorded
    like ``feed_and_train`` (a step spans getting the batch and training on it)."""
    keras = _check_trainable(model)
    if not isinstance(dataset, keras.utils.PyDataset):
        raise TypeError(f"dataset must be a keras.utils.PyDataset (e.g. SlowBatches), got {type(dataset).__name__}")
    epochs = check_int("epochs", epochs)
    timeline = _check_timeline(timeline)
    for epoch in range(epochs):
        epoch_start = now()
        for index in range(len(dataset)):
            step_start = now()
            x, y = dataset[index]
            model.train_on_batch(x, y)
            timeline.steps.append((epoch, index, step_start, now()))
        timeline.epochs.append((epoch, epoch_start, now()))
    return timeline.to_dict()


def train_step_ms(model, batch, *, warmup: int = 3, repeats: int = 20) -> list[float]:
    """Milliseconds per ``model.train_on_batch(x, y)`` on a batch that is already made."""
    _check_trainable(model)
    if not isinstance(batch, tuple) or len(batch) != 2:
        raise TypeError(f"batch must be a tuple (x, y), e.g. from make_batch, got {type(batch).__name__}")
    x, y = batch
    return wall_times(lambda: model.train_on_batch(x, y), warmup=check_int("warmup", warmup, minimum=0),
                      repeats=check_int("repeats", repeats))


def enqueue_all(dataset) -> list:
    """Every batch of ``dataset`` through Keras' internal ``OrderedEnqueuer`` (fit()'s machinery
    for ``workers > 1``), in the order it hands them out."""
    if not hasattr(dataset, "workers") or not hasattr(dataset, "__len__"):
        raise TypeError(f"dataset must be a keras.utils.PyDataset, got {type(dataset).__name__}")
    import_keras()  # quietly, before keras.src
    from keras.src.trainers.data_adapters.py_dataset_adapter import OrderedEnqueuer

    enqueuer = OrderedEnqueuer(dataset, workers=dataset.workers, use_multiprocessing=dataset.use_multiprocessing,
                               max_queue_size=dataset.max_queue_size, shuffle=False)
    timeline = getattr(dataset, "timeline", None)
    batches = []
    enqueuer.start()
    try:
        for batch in enqueuer.get():  # endless while running: stop after one pass
            batches.append(batch)
            if isinstance(timeline, Timeline):
                timeline.collect()  # keep the pipe from worker processes from filling up
            if len(batches) == len(dataset):
                break
    finally:
        enqueuer.stop()
    return batches


def tf_data_pipeline(dataset):
    """The same batches through tf.data: ``range -> map(dataset[i]) -> prefetch``, in parallel
    (AUTOTUNE); the Python code runs in ``tf.numpy_function`` on tf.data's threads."""
    reason = tensorflow_reason()
    if reason:
        raise RuntimeError(f"tf.data needs TensorFlow as the Keras backend: {reason}")
    import tensorflow as tf

    if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "n_features"):
        raise TypeError(f"dataset must be a SlowBatches, got {type(dataset).__name__}")

    def load(index):
        x, y = tf.numpy_function(lambda i: dataset[int(i)], [index], [tf.float32, tf.float32])
        x.set_shape((dataset.batch_size, dataset.n_features))
        y.set_shape((dataset.batch_size, 1))
        return x, y

    indices = tf.data.Dataset.range(len(dataset))
    # deterministic=True: batches come out in index order, as from the PyDataset enqueuer.
    return indices.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def _one_run(kind, feeder, model, *, n_batches, batch_ms, loops_per_ms, epochs, batch_size, n_features) -> dict:
    workers, use_multiprocessing, via = parse_feeder(feeder)
    timeline = Timeline()
    dataset = slow_dataset(n_batches, kind=kind, batch_ms=batch_ms, loops_per_ms=loops_per_ms,
                           feeder=feeder if via == "fit" else "1 worker",
                           batch_size=batch_size, n_features=n_features, timeline=timeline)
    if via == "loop":
        record = train_in_a_loop(dataset, model, epochs=epochs, timeline=timeline)
    else:
        data = tf_data_pipeline(dataset) if via == "tf.data" else dataset
        record = feed_and_train(data, model, epochs=epochs, timeline=timeline)
    return {"kind": kind, "feeder": feeder, "workers": workers, "use_multiprocessing": use_multiprocessing, "via": via,
            "n_batches": n_batches, "batch_ms": batch_ms, "epoch_s": epoch_seconds(record), "timeline": record}


def compare_feeders(feeders=("plain loop", "1 worker", "2 threads"), kinds=KINDS, *, n_batches: int = 24,
                    batch_ms: float = 10.0, loops_per_ms: float | None = None, epochs: int = 3,
                    batch_size: int = 64, n_features: int = 32,
                    switch_interval_s: float = PYTHON_SWITCH_INTERVAL_S, progress: bool = False) -> list[dict]:
    """Train one small model on the same slow batches, fed each way in ``feeders`` for each of
    ``kinds`` (or a dict {kind: [feeders]}), at GIL switch interval ``switch_interval_s``. One dict
    per (kind, feeder): its settings, ``epoch_s`` (warm-up left out) and ``timeline``."""
    runs = _runs(feeders, kinds)
    check_bool("progress", progress)
    if loops_per_ms is not None:
        check_number("loops_per_ms", loops_per_ms, minimum=1e-9)
    if any(parse_feeder(feeder).via == "tf.data" for _, feeder in runs) and tensorflow_reason():
        raise RuntimeError(f"feeder 'tf.data' needs TensorFlow: {tensorflow_reason()}")
    settings = dict(n_batches=check_int("n_batches", n_batches), batch_ms=check_number("batch_ms", batch_ms, minimum=0),
                    epochs=check_int("epochs", epochs), batch_size=check_int("batch_size", batch_size),
                    n_features=check_int("n_features", n_features))
    switch_interval_s = check_seconds("switch_interval_s", switch_interval_s)
    per_ms = loops_per_ms if loops_per_ms is not None else calibrate_loops_per_ms()
    model = small_model(n_features)  # one model: every run after the first reuses its traced step
    results = []
    with switch_interval(switch_interval_s):
        for kind, feeder in progress_bar(runs, "feeders", "run", enabled=progress):
            result = _one_run(kind, feeder, model, loops_per_ms=per_ms, **settings)
            results.append(dict(result, switch_interval_s=switch_interval_s))
    return results


def _runs(feeders, kinds) -> list[tuple[str, str]]:
    """(kind, feeder) pairs, checked: every feeder parses, every kind is one of KINDS."""
    if isinstance(feeders, dict):
        pairs = [(kind, feeder) for kind, names in feeders.items()
                 for feeder in ([names] if isinstance(names, str) else names)]
    elif isinstance(feeders, str) or isinstance(kinds, str):
        raise TypeError("feeders and kinds must be lists of strings, not one string")
    elif not isinstance(feeders, (list, tuple)) or not isinstance(kinds, (list, tuple)):
        raise TypeError(f"feeders and kinds must be lists of strings, got {type(feeders).__name__} and {type(kinds).__name__}")
    else:
        pairs = [(kind, feeder) for kind in kinds for feeder in feeders]
    for kind, feeder in pairs:
        if kind not in KINDS:
            raise ValueError(f"kinds must be taken from {KINDS}, got {kind!r}")
        parse_feeder(feeder)
    if not pairs:
        raise ValueError("no (kind, feeder) to run: feeders and kinds must not be empty")
    return pairs


def summarize_feeders(results: list[dict]) -> list[dict]:
    """Per run: median/min/max epoch seconds, ``speedup`` over "1 worker", ``vs_loop`` over "plain
    loop", ``serial_s``; with a timeline its median phases (``phase_seconds``) and ``made_ms``."""
    check_records("results", results, ("kind", "feeder", "epoch_s", "n_batches", "batch_ms"), "compare_feeders")
    for index, r in enumerate(results):
        if not isinstance(r["epoch_s"], (list, tuple)) or not r["epoch_s"]:
            raise ValueError(f"results[{index}]['epoch_s'] must be a non-empty list of seconds, got {r['epoch_s']!r}")

    def baseline(feeder):
        return {r["kind"]: statistics.median(r["epoch_s"]) for r in results if r["feeder"] == feeder}

    one_worker, loop = baseline("1 worker"), baseline("plain loop")
    rows = []
    for r in results:
        median = statistics.median(r["epoch_s"])
        row = {
            "kind": r["kind"], "feeder": r["feeder"], "median_s": median, "min_s": min(r["epoch_s"]),
            "max_s": max(r["epoch_s"]), "speedup": one_worker[r["kind"]] / median if r["kind"] in one_worker else None,
            "vs_loop": loop[r["kind"]] / median if r["kind"] in loop else None,
            "serial_s": r["n_batches"] * r["batch_ms"] / 1e3,
        }
        if "timeline" in r:
            phases = epoch_phases(r["timeline"])
            made = production_ms(r["timeline"])
            row.update(head_s=phases["head"], steps_s=phases["steps"], tail_s=phases["tail"],
                       to_last_step_s=phases["to_last_step"], made_ms=statistics.median(made) if made else float("nan"))
        rows.append(row)
    return rows


def speed_words(ratio: float) -> str:
    """"faster" when ``ratio`` > 1.1, "slower" when < 1 / 1.1, else "about as fast"."""
    ratio = check_number("ratio", ratio, minimum=0)
    if ratio > 1.1:
        return "faster"
    if ratio < 1 / 1.1:
        return "slower"
    return "about as fast"


def idle_check(when: str, since: tuple | None = None, *, seconds: float = 1.0) -> str:
    """One sentence: how much of the CPUs other processes used (for ``seconds`` now, or since a
    ``timing.cpu_snapshot()``), and whether timings meanwhile are disturbed."""
    when = check_str("when", when, example="for 1 s before the measurements")
    seconds = check_seconds("seconds", seconds)
    if since is not None and not (isinstance(since, tuple) and len(since) == 3):
        raise TypeError(f"since must be None or a cpu_snapshot() (a tuple of 3 ints), got {since!r}")
    busy = cpu_busy_elsewhere(seconds, since=since)
    if busy is None:
        return f"{when}: how busy other processes are cannot be read here (no /proc)"
    verdict = ("idle enough: the timings are this notebook's own" if busy < IDLE_ENOUGH else
               "NOT idle: other programs shared the cores, so the timings are disturbed; "
               "re-run with nothing else running")
    return f"{when}, other processes used {busy:.0%} of the CPUs -> {verdict}"
