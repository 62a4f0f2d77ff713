"""Feeding data to Keras: where the time goes between a dataset and a training step.

The pieces notebook 30 is built from:

- ``SlowBatches``: a ``keras.utils.PyDataset`` whose batches cost time, either by *waiting*
  (``time.sleep``, like reading a file: the GIL is released) or by *computing in pure Python*
  (the GIL is held). ``Timeline`` records when each batch was produced, in whichever thread or
  process produced it, and when ``fit()`` ran each training step.
- ``compare_feeders``: epoch times for one worker, N threads, N processes and ``tf.data``;
  ``run_isolated`` runs it (or any function listed in ``ISOLATED``) in a child process that is
  killed after a time limit, so that a process pool that hangs cannot hang the caller.
- ``training_throughput``: samples/s against batch size on a device; ``small_call_latency``:
  the cost of one single-sample inference through ``predict``, ``model(x)`` and compiled calls.
- ``thread_count``, ``thread_names``, ``tf_thread_probe``: the OS threads of a process and what
  TensorFlow's thread settings change.
- ``profile_call``, ``top_functions``, ``function_share``: cProfile made readable; the
  ``lookup_batches`` generator with its slow ``key_as_text`` step and the ``key_as_bytes`` fix.
- ``call_in_spawned_process``, ``run_script``: what the *spawn* start method (macOS, Windows)
  asks of the code it runs.

``import fastlstm_lib`` stays light: Keras, TensorFlow, matplotlib and tqdm are imported inside
the functions that use them.
"""

from __future__ import annotations

import cProfile
import json
import math
import multiprocessing
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .keras_bridge import import_keras

#: The two ways a batch can be slow. "wait": the time passes in time.sleep (the GIL is free,
#: as while reading a file or a socket); "compute": the time passes in pure-Python arithmetic
#: (the GIL is held).
KINDS = ("wait", "compute")

#: Functions ``run_isolated`` may run in a child process (it takes names, not code).
ISOLATED = ("compare_feeders", "tf_thread_probe")


# --------------------------------------------------------------------------- validation


def _check_int(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def _check_number(name: str, value, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number >= {minimum}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value}")
    return float(value)


def _check_int_list(name: str, values) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of ints >= 1, got {type(values).__name__} {values!r}")
    values = [_check_int(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if not values:
        raise ValueError(f"{name} must hold at least one int, got an empty list")
    return values


def _check_record(record, keys=("produced", "steps", "epochs")) -> dict:
    """A ``Timeline.to_dict()``: a dict with a list under each of ``keys``."""
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict from Timeline.to_dict(), got {type(record).__name__}")
    missing = [key for key in keys if key not in record]
    if missing:
        raise ValueError(f"record must be a Timeline.to_dict() with keys {list(keys)}; it lacks {missing}")
    for key in keys:
        if not isinstance(record[key], (list, tuple)):
            raise TypeError(f"record[{key!r}] must be a list, got {type(record[key]).__name__}")
    return record


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _check_model(model):
    """A Keras model: TypeError otherwise. Returns keras."""
    keras = import_keras()
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model (e.g. from small_model), got {type(model).__name__}")
    return keras


# --------------------------------------------------------------------------- the work in a batch


def python_work(loops: int) -> int:
    """Pure-Python arithmetic, ``loops`` iterations: holds the GIL all the time, like feature code
    written in Python. A fixed amount of *work* (not a time): two threads running it share one
    interpreter, so they take twice as long, which is the point."""
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def calibrate_loops_per_ms(*, sample_loops: int = 200_000, repeats: int = 5) -> float:
    """How many ``python_work`` loops this machine runs per millisecond (median of repeats)."""
    sample_loops = _check_int("sample_loops", sample_loops)
    repeats = _check_int("repeats", repeats)
    python_work(sample_loops // 10)  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        python_work(sample_loops)
        seconds.append(time.perf_counter() - start)
    return sample_loops / (statistics.median(seconds) * 1e3)


def make_batch(index: int, batch_size: int = 64, n_features: int = 32, seed: int = 0):
    """Batch ``index``: (x float32 (batch_size, n_features), y float32 (batch_size, 1)).

    The same arguments always give the same arrays, in any thread or process, so a test can
    tell which batch arrived where."""
    index = _check_int("index", index, minimum=0)
    batch_size = _check_int("batch_size", batch_size)
    n_features = _check_int("n_features", n_features)
    seed = _check_int("seed", seed, minimum=0)
    rng = np.random.default_rng([seed, index])
    x = rng.standard_normal((batch_size, n_features), dtype=np.float32)
    y = 0.5 * x[:, :1] + x.mean(axis=1, keepdims=True)  # something learnable
    return x, y.astype(np.float32)


# --------------------------------------------------------------------------- timeline


def _now() -> float:
    # perf_counter is CLOCK_MONOTONIC on Linux (and system-wide on macOS and Windows too), so
    # times taken in worker processes are on the same clock as the parent's.
    return time.perf_counter()


class Timeline:
    """When each batch was produced (any thread, any process) and when fit() trained on it.

    Each production is ``(index, worker, start, end)``. In the process that made the timeline
    (its main thread or worker threads) it goes straight into the list ``produced``. A worker
    *process* can't reach that list (an append there would stay in the worker), so it writes
    into a multiprocessing pipe, which the parent drains with ``collect()``: the callback
    returned by ``callback()`` after every training step, ``enqueue_all`` after every batch,
    ``to_dict`` at the end.

    A pipe holds 64 KiB by default on Linux (about 1,000 of these records); a worker writing
    into a full one blocks until someone reads. That is why nothing from the parent itself goes
    through the pipe (it would block on its own unread records), and why the parent drains it at
    every batch it receives: the enqueuer runs at most ``max_queue_size`` batches ahead, so only
    a handful of records ever wait in it.
    """

    def __init__(self):
        self._inbox = multiprocessing.SimpleQueue()
        self._owner = os.getpid()
        self._reading = threading.Lock()
        self.produced: list[tuple] = []  # (index, worker "pid/thread", start, end)
        self.steps: list[tuple] = []  # (epoch, step, start, end): fit's train step incl. waiting
        self.epochs: list[tuple] = []  # (epoch, start, end)

    def record_production(self, index: int, started: float, finished: float) -> None:
        record = (int(index), f"{os.getpid()}/{threading.get_ident()}", float(started), float(finished))
        if os.getpid() == self._owner:
            self.produced.append(record)  # list.append is atomic: worker threads need no lock
        else:
            self._inbox.put(record)  # a worker process: through the pipe

    def collect(self) -> None:
        """Move what worker processes sent into ``produced`` (call it from the process that made
        the timeline; one thread at a time reads the pipe)."""
        if os.getpid() != self._owner:
            return
        with self._reading:
            while not self._inbox.empty():
                self.produced.append(tuple(self._inbox.get()))

    def callback(self):
        """A Keras callback recording epochs and training steps into this timeline."""
        keras = import_keras()
        return _timeline_callback_class(keras)(self)

    def to_dict(self) -> dict:
        """JSON-able copy (times in seconds on the perf_counter clock)."""
        self.collect()
        return {
            "produced": [list(r) for r in self.produced],
            "steps": [list(r) for r in self.steps],
            "epochs": [list(r) for r in self.epochs],
        }

    def __getstate__(self):
        # Only the pipe (and whose it is) travels to a spawned worker: what was recorded stays
        # with the process that made the timeline.
        return {"_inbox": self._inbox, "_owner": self._owner}

    def __setstate__(self, state):
        self._inbox, self._owner = state["_inbox"], state["_owner"]
        self._reading = threading.Lock()
        self.produced, self.steps, self.epochs = [], [], []


def _timeline_callback_class(keras):
    class RecordSteps(keras.callbacks.Callback):
        """Timestamps of fit(): epochs and training steps; drains the production pipe."""

        def __init__(self, timeline: Timeline):
            super().__init__()
            self.timeline = timeline
            self._epoch = self._epoch_start = self._step_start = None

        def on_epoch_begin(self, epoch, logs=None):
            self._epoch, self._epoch_start = epoch, _now()

        def on_train_batch_begin(self, batch, logs=None):
            self._step_start = _now()

        def on_train_batch_end(self, batch, logs=None):
            end = _now()  # before collecting, which is our cost, not fit's
            self.timeline.steps.append((self._epoch, batch, self._step_start, end))
            self.timeline.collect()

        def on_epoch_end(self, epoch, logs=None):
            self.timeline.epochs.append((epoch, self._epoch_start, _now()))
            self.timeline.collect()

    return RecordSteps


def epoch_seconds(record: dict, *, skip_first: bool = True) -> list[float]:
    """Seconds per epoch from a ``Timeline.to_dict()``; the first (warm-up) epoch left out."""
    _check_record(record, ("epochs",))
    _check_bool("skip_first", skip_first)
    times = [end - start for _, start, end in record["epochs"]]
    return times[1:] if skip_first and len(times) > 1 else times


def epoch_phases(record: dict, *, skip_first: bool = True) -> dict:
    """Median seconds, over epochs, of: ``head`` (epoch start to the first training step),
    ``steps`` (first step's start to the last step's end) and ``tail`` (from there to the end of
    the epoch). Head and tail are what an epoch costs besides feeding and training."""
    _check_record(record, ("steps", "epochs"))
    _check_bool("skip_first", skip_first)
    phases = {"head": [], "steps": [], "tail": []}
    epochs = record["epochs"][1:] if skip_first and len(record["epochs"]) > 1 else record["epochs"]
    for epoch, start, end in epochs:
        steps = [s for s in record["steps"] if s[0] == epoch]
        if not steps:
            continue
        phases["head"].append(steps[0][2] - start)
        phases["steps"].append(steps[-1][3] - steps[0][2])
        phases["tail"].append(end - steps[-1][3])
    return {name: statistics.median(values) if values else float("nan") for name, values in phases.items()}


def plot_timeline(record: dict, *, epoch: int = -1, ax=None, title: str | None = None, xmax_ms: float | None = None):
    """One epoch of a ``Timeline.to_dict()``: a lane per worker (thread or process) with a bar
    for each batch it produced, and fit's lane with a bar for each training step (which includes
    any wait for its batch). Milliseconds from the start of the epoch, up to ``xmax_ms`` (default:
    the epoch's end). Returns the axes."""
    import matplotlib.pyplot as plt

    if not record.get("epochs"):
        raise ValueError("the timeline has no epoch: was fit() run with its callback?")
    number, epoch_start, epoch_end = record["epochs"][epoch]
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3))
    window = [p for p in record["produced"] if p[3] > epoch_start and p[2] < epoch_end]  # overlapping the epoch
    workers = list(dict.fromkeys(p[1] for p in sorted(window, key=lambda p: p[2])))
    to_ms = lambda t: (t - epoch_start) * 1e3  # noqa: E731
    for lane, worker in enumerate(workers):
        for index, _, start, end in (p for p in window if p[1] == worker):
            ax.barh(lane, to_ms(end) - to_ms(start), left=to_ms(start), height=0.7, color="tab:blue", edgecolor="white")
    fit_lane = len(workers)
    for _, step, start, end in (s for s in record["steps"] if s[0] == number):
        ax.barh(fit_lane, to_ms(end) - to_ms(start), left=to_ms(start), height=0.7,
                color="tab:orange" if step % 2 else "tab:red", edgecolor="white")
    ax.axvline(to_ms(epoch_end), color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(fit_lane + 1), [f"worker {i + 1}" for i in range(fit_lane)] + ["fit: train steps"])
    ax.set_xlim(0, xmax_ms if xmax_ms is not None else max(to_ms(epoch_end) * 1.02, 1))
    ax.set_xlabel("time since the epoch began (ms); blue: a batch being produced; dashed: epoch end")
    if title:
        ax.set_title(title)
    return ax


def timeline_problems(record: dict, n_batches: int) -> list[str]:
    """What is inconsistent in a timeline of fit(shuffle=False) over ``n_batches`` batches.

    Empty when: every epoch has ``n_batches`` steps 0..n-1, inside the epoch, in time order;
    every production ends after it starts; and step k ends after some production of batch k
    has finished (a step cannot train on a batch that does not exist yet)."""
    n_batches = _check_int("n_batches", n_batches)
    problems = []
    finished_by_index: dict[int, list[float]] = {}
    for index, _, start, end in record["produced"]:
        if end < start:
            problems.append(f"batch {index} produced from {start} to an earlier {end}")
        finished_by_index.setdefault(index, []).append(end)
    if not record["epochs"]:
        problems.append("no epoch recorded")
    for epoch, epoch_start, epoch_end in record["epochs"]:
        steps = [s for s in record["steps"] if s[0] == epoch]
        if [s[1] for s in steps] != list(range(n_batches)):
            problems.append(f"epoch {epoch}: steps {[s[1] for s in steps]}, expected 0..{n_batches - 1}")
            continue
        previous_end = epoch_start
        for _, step, start, end in steps:
            if not previous_end <= start <= end <= epoch_end:
                problems.append(f"epoch {epoch} step {step}: out of order or outside its epoch")
            previous_end = end
            if not any(done <= end for done in finished_by_index.get(step, [])):
                problems.append(f"epoch {epoch} step {step}: trained before batch {step} was produced")
    return problems


# --------------------------------------------------------------------------- the slow dataset


def _slow_batches_class(keras):
    """Define SlowBatches; a function, so that Keras is imported only when it is first used."""

    class SlowBatches(keras.utils.PyDataset):
        """``n_batches`` batches of ``make_batch``; each costs ``wait_ms`` of sleeping (GIL free)
        plus ``python_loops`` of pure-Python work (GIL held). ``workers``,
        ``use_multiprocessing`` and ``max_queue_size`` go to ``keras.utils.PyDataset``."""

        def __init__(self, n_batches, *, batch_size=64, n_features=32, wait_ms=0.0, python_loops=0,
                     seed=0, timeline=None, workers=1, use_multiprocessing=False, max_queue_size=10):
            workers = _check_int("workers", workers)
            if not isinstance(use_multiprocessing, bool):
                raise TypeError(f"use_multiprocessing must be True or False, got {use_multiprocessing!r}")
            super().__init__(workers=workers, use_multiprocessing=use_multiprocessing,
                             max_queue_size=_check_int("max_queue_size", max_queue_size))
            self.n_batches = _check_int("n_batches", n_batches)
            self.batch_size = _check_int("batch_size", batch_size)
            self.n_features = _check_int("n_features", n_features)
            self.wait_ms = _check_number("wait_ms", wait_ms)
            self.python_loops = _check_int("python_loops", python_loops, minimum=0)
            self.seed = _check_int("seed", seed, minimum=0)
            if timeline is not None and not isinstance(timeline, Timeline):
                raise TypeError(f"timeline must be a Timeline or None, got {type(timeline).__name__}")
            self.timeline = timeline

        def __len__(self):
            return self.n_batches

        def __getitem__(self, index):
            if not 0 <= index < self.n_batches:
                raise IndexError(f"batch index {index} out of range 0..{self.n_batches - 1}")
            started = _now()
            if self.wait_ms:
                time.sleep(self.wait_ms / 1e3)  # waiting, like I/O: other threads run meanwhile
            if self.python_loops:
                python_work(self.python_loops)  # computing in Python: other threads wait
            batch = make_batch(int(index), self.batch_size, self.n_features, self.seed)
            if self.timeline is not None:
                self.timeline.record_production(index, started, _now())
            return batch

    # Picklable by name (fastlstm_lib.feeding.SlowBatches), which the spawn start method needs.
    SlowBatches.__module__ = __name__
    SlowBatches.__qualname__ = "SlowBatches"
    return SlowBatches


def __getattr__(name):
    # ``SlowBatches`` is defined on first use (PEP 562), so that importing this module does not
    # import Keras, yet pickle still finds the class as fastlstm_lib.feeding.SlowBatches.
    if name == "SlowBatches":
        cls = _slow_batches_class(import_keras())
        globals()["SlowBatches"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def slow_dataset(n_batches: int, *, kind: str = "wait", batch_ms: float = 10.0, loops_per_ms: float | None = None,
                 feeder: str = "1 worker", **options):
    """A ``SlowBatches`` whose batches each cost about ``batch_ms``, of the given ``kind``, fed
    the way ``feeder`` says ("1 worker", "N threads", "N processes")."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    batch_ms = _check_number("batch_ms", batch_ms)
    workers, use_multiprocessing = parse_feeder(feeder)
    if workers is None:
        raise ValueError(f"slow_dataset() feeds through Keras' PyDataset; {feeder!r} is not a PyDataset feeder")
    if kind == "wait":
        options["wait_ms"] = batch_ms
    else:
        per_ms = loops_per_ms if loops_per_ms is not None else calibrate_loops_per_ms()
        options["python_loops"] = int(round(_check_number("loops_per_ms", per_ms, minimum=1e-9) * batch_ms))
    cls = globals().get("SlowBatches") or __getattr__("SlowBatches")
    return cls(n_batches, workers=workers, use_multiprocessing=use_multiprocessing, **options)


def parse_feeder(feeder: str) -> tuple[int | None, bool]:
    """"1 worker" -> (1, False); "4 threads" -> (4, False); "2 processes" -> (2, True);
    "tf.data" -> (None, False): a tf.data pipeline instead of the PyDataset enqueuer."""
    if not isinstance(feeder, str):
        raise TypeError(f"feeder must be a string like '4 threads', got {type(feeder).__name__} {feeder!r}")
    if feeder == "tf.data":
        return None, False
    words = feeder.split()
    units = {"worker": False, "workers": False, "thread": False, "threads": False, "process": True, "processes": True}
    if len(words) != 2 or not words[0].isdigit() or int(words[0]) < 1 or words[1] not in units:
        raise ValueError(f"feeder must be 'N worker(s)', 'N thread(s)', 'N process(es)' or 'tf.data', got {feeder!r}")
    workers, use_multiprocessing = int(words[0]), units[words[1]]
    if words[1].startswith("worker") and workers != 1:
        raise ValueError(f"say 'N threads' or 'N processes' for more than one worker, got {feeder!r}")
    return workers, use_multiprocessing


def enqueue_all(dataset) -> list:
    """Every batch of ``dataset`` through Keras' own ``OrderedEnqueuer`` (the machinery fit()
    uses when ``workers > 1`` or ``use_multiprocessing``), in the order it hands them out.

    The enqueuer is internal to Keras (keras.src...): fine for looking inside, not for
    production code. Batch indices are submitted in order (fit(shuffle=False))."""
    from keras.src.trainers.data_adapters.py_dataset_adapter import OrderedEnqueuer

    if not hasattr(dataset, "workers") or not hasattr(dataset, "__len__"):
        raise TypeError(f"dataset must be a keras.utils.PyDataset, got {type(dataset).__name__}")
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


def finish_order(record: dict) -> list[int]:
    """Batch indices in the order their production finished (from ``Timeline.to_dict()``)."""
    return [index for index, _, _, end in sorted(record["produced"], key=lambda r: r[3])]


def quote_source(obj, first: str, last: str | None = None) -> str:
    """Lines of ``obj``'s source from the first line containing ``first`` through the next line
    containing ``last`` (or just that one line), headed by file name and line number: for
    quoting short pieces of installed libraries."""
    import inspect

    if not isinstance(first, str) or (last is not None and not isinstance(last, str)):
        raise TypeError("first and last must be strings found in the source")
    lines, start_line = inspect.getsourcelines(obj)
    begin = next((i for i, line in enumerate(lines) if first in line), None)
    if begin is None:
        raise ValueError(f"{first!r} is not in the source of {getattr(obj, '__qualname__', obj)!r}")
    end = begin if last is None else next((i for i in range(begin, len(lines)) if last in lines[i]), None)
    if end is None:
        raise ValueError(f"{last!r} does not follow {first!r} in the source of {getattr(obj, '__qualname__', obj)!r}")
    header = f"# {Path(inspect.getsourcefile(obj)).name}, line {start_line + begin}"
    body = inspect.cleandoc("".join(lines[begin:end + 1])) if begin == end else _dedent(lines[begin:end + 1])
    return header + "\n" + body


def _dedent(lines: list[str]) -> str:
    import textwrap

    return textwrap.dedent("".join(lines)).rstrip()


# --------------------------------------------------------------------------- backends and devices


def backend_name() -> str:
    return import_keras().backend.backend()


def tensorflow_reason() -> str | None:
    """None when tf.data / tf.config can be used here; otherwise why not."""
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        return f"the Keras backend is {keras.backend.backend()!r}, not 'tensorflow'"
    try:
        import tensorflow  # noqa: F401
    except ImportError as error:  # pragma: no cover - the tensorflow backend needs it
        return f"TensorFlow is not importable ({error})"
    return None


def gpu_device() -> tuple[str | None, str]:
    """("gpu:0", its name) when the Keras backend sees a GPU, else (None, why not)."""
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        return ("gpu:0", gpus[0].name) if gpus else (None, "TensorFlow sees no GPU")
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return "gpu:0", torch.cuda.get_device_name(0)
        return None, "torch sees no CUDA GPU"
    if backend == "jax":
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        return ("gpu:0", str(gpus[0])) if gpus else (None, "JAX sees no GPU")
    return None, f"no GPU lookup for the {backend!r} backend"


def small_model(n_features: int = 32, hidden: int = 64, *, seed: int = 0):
    """A compiled two-layer MLP (ReLU, MSE, SGD) with seeded weights: the 'training step'."""
    n_features = _check_int("n_features", n_features)
    hidden = _check_int("hidden", hidden)
    seed = _check_int("seed", seed, minimum=0)
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


def _progress(iterable, enabled: bool, description: str):
    from .harness import progress_bar  # the library's one progress bar

    return progress_bar(list(iterable), description, "run", enabled=enabled)


# --------------------------------------------------------------------------- feeders compared


def tf_data_pipeline(dataset, *, parallel: bool = True):
    """The same batches through tf.data: ``range -> map(dataset[i]) -> prefetch``.

    ``parallel``: ``map(num_parallel_calls=AUTOTUNE)`` and ``prefetch(AUTOTUNE)``, else one batch
    at a time. The Python code runs inside ``tf.numpy_function`` on tf.data's threads."""
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
    if not parallel:
        return indices.map(load)
    # deterministic=True: batches come out in index order, as from the PyDataset enqueuer.
    return indices.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def feed_and_train(data, model, *, epochs: int = 4, timeline: Timeline | None = None) -> dict:
    """``model.fit(data, epochs=epochs, shuffle=False)`` silently, timed by a ``Timeline``.

    Returns ``timeline.to_dict()``. The first epoch includes one-off costs (tracing the training
    step, the first pool): ``epoch_seconds`` leaves it out. ``data``: a ``keras.utils.PyDataset``
    (e.g. ``SlowBatches``) or a ``tf.data.Dataset``; ``model``: a compiled Keras model."""
    keras = _check_model(model)
    if not getattr(model, "compiled", True):
        raise ValueError("model must be compiled before training (model.compile(...)); small_model() returns one that is")
    is_tf_data = False
    if tensorflow_reason() is None:
        import tensorflow as tf

        is_tf_data = isinstance(data, tf.data.Dataset)
    if not (isinstance(data, keras.utils.PyDataset) or is_tf_data):
        raise TypeError(f"data must be a keras.utils.PyDataset (e.g. SlowBatches) or a tf.data.Dataset, got {type(data).__name__}")
    epochs = _check_int("epochs", epochs)
    timeline = timeline if timeline is not None else Timeline()
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline, got {type(timeline).__name__}")
    # shuffle=False: fit() would otherwise hand the enqueuer the batch indices in a random order.
    model.fit(data, epochs=epochs, shuffle=False, verbose=0, callbacks=[timeline.callback()])
    return timeline.to_dict()


def compare_feeders(feeders=("1 worker", "2 threads", "4 threads"), kinds=KINDS, *, n_batches: int = 24,
                    batch_ms: float = 10.0, loops_per_ms: float | None = None, epochs: int = 4,
                    batch_size: int = 64, n_features: int = 32, progress: bool = False) -> list[dict]:
    """Train the same small model on the same slow batches, fed each way in ``feeders`` (see
    ``parse_feeder``), for each kind of slowness in ``kinds``.

    One dict per (kind, feeder): its settings, ``epoch_s`` (seconds per epoch, warm-up epoch left
    out) and ``timeline`` (``Timeline.to_dict()``)."""
    if isinstance(feeders, str) or isinstance(kinds, str):
        raise TypeError("feeders and kinds must be lists of strings, not one string")
    parsed = {feeder: parse_feeder(feeder) for feeder in feeders}
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kinds must be taken from {KINDS}, got {kind!r}")
    if "tf.data" in parsed and tensorflow_reason():
        raise RuntimeError(f"feeder 'tf.data' needs TensorFlow: {tensorflow_reason()}")
    per_ms = loops_per_ms if loops_per_ms is not None else calibrate_loops_per_ms()
    model = small_model(n_features)  # one model: every run after the first reuses its traced step
    results = []
    runs = [(kind, feeder) for kind in kinds for feeder in feeders]
    for kind, feeder in _progress(runs, progress, "feeders"):
        workers, use_multiprocessing = parsed[feeder]
        timeline = Timeline()
        dataset = slow_dataset(n_batches, kind=kind, batch_ms=batch_ms, loops_per_ms=per_ms,
                               feeder="1 worker" if workers is None else feeder,
                               batch_size=batch_size, n_features=n_features, timeline=timeline)
        data = tf_data_pipeline(dataset) if workers is None else dataset
        record = feed_and_train(data, model, epochs=epochs, timeline=timeline)
        results.append({
            "kind": kind, "feeder": feeder, "workers": workers, "use_multiprocessing": use_multiprocessing,
            "n_batches": n_batches, "batch_ms": batch_ms, "epoch_s": epoch_seconds(record), "timeline": record,
        })
    return results


def summarize_feeders(results: list[dict]) -> list[dict]:
    """Per (kind, feeder): median epoch seconds, min, max, and speedup over '1 worker'."""
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"results must be a list of compare_feeders results (dicts), got {type(results).__name__}")
    for index, r in enumerate(results):
        if not isinstance(r, dict):
            raise TypeError(f"results[{index}] must be a dict from compare_feeders, got {type(r).__name__}")
        missing = [key for key in ("kind", "feeder", "epoch_s", "n_batches", "batch_ms") if key not in r]
        if missing:
            raise ValueError(f"results[{index}] lacks {missing}: expected a dict from compare_feeders")
        if not isinstance(r["epoch_s"], (list, tuple)) or not r["epoch_s"]:
            raise ValueError(f"results[{index}]['epoch_s'] must be a non-empty list of seconds, got {r['epoch_s']!r}")
    baseline = {r["kind"]: statistics.median(r["epoch_s"]) for r in results if r["feeder"] == "1 worker"}
    rows = []
    for r in results:
        median = statistics.median(r["epoch_s"])
        rows.append({
            "kind": r["kind"], "feeder": r["feeder"], "median_s": median, "min_s": min(r["epoch_s"]),
            "max_s": max(r["epoch_s"]), "speedup": baseline[r["kind"]] / median if r["kind"] in baseline else None,
            "serial_s": r["n_batches"] * r["batch_ms"] / 1e3,
        })
    return rows


# --------------------------------------------------------------------------- a child process with a time limit


class IsolatedRunTimeout(TimeoutError):
    """The child process ran past its time limit and was killed, with everything it started."""


def run_isolated(function: str, kwargs: dict | None = None, *, timeout_s: float = 120.0, env: dict | None = None):
    """``fastlstm_lib.feeding.<function>(**kwargs)`` in a fresh Python process; its JSON result.

    The child runs in its own process group, and the whole group (its pool workers too) is
    killed after ``timeout_s``: a process pool that hangs cannot hang the caller. Raises
    ``IsolatedRunTimeout`` then, and ``RuntimeError`` (with the end of the child's stderr) when
    the child fails. ``env``: extra environment variables for the child."""
    if function not in ISOLATED:
        raise ValueError(f"function must be one of {ISOLATED}, got {function!r}")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    timeout_s = _check_number("timeout_s", timeout_s, minimum=1e-3)
    with tempfile.TemporaryDirectory(prefix="fastlstm-isolated-") as folder:
        request, answer = Path(folder, "request.json"), Path(folder, "answer.json")
        request.write_text(json.dumps({"function": function, "kwargs": kwargs}))
        code = f"from fastlstm_lib.feeding import _isolated_main; _isolated_main({str(request)!r}, {str(answer)!r})"
        child_env = {**os.environ, **(env or {})}
        # The child must find this very package, whatever the caller's working directory.
        package_parent = str(Path(__file__).resolve().parent.parent)
        child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, child_env.get("PYTHONPATH")]))
        child = subprocess.Popen([sys.executable, "-c", code], env=child_env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=(os.name == "posix"))
        try:
            _, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            raise IsolatedRunTimeout(f"{function} did not finish within {timeout_s:g} s; its processes were killed") from None
        if child.returncode != 0 or not answer.exists():
            tail = stderr.decode(errors="replace").strip().splitlines()[-15:]
            raise RuntimeError(f"{function} failed in the child process (exit {child.returncode}):\n" + "\n".join(tail))
        return json.loads(answer.read_text())


def _kill_group(child: subprocess.Popen) -> None:
    if os.name == "posix":
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the child and the pool workers it forked
        except ProcessLookupError:
            pass
    else:  # pragma: no cover - no process groups: the child only
        child.kill()


def _isolated_main(request_path: str, answer_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    if request["function"] not in ISOLATED:
        raise SystemExit(f"not allowed: {request['function']!r}")
    result = globals()[request["function"]](**request["kwargs"])
    Path(answer_path).write_text(json.dumps(result))


# --------------------------------------------------------------------------- batch size


def _epoch_timer(keras):
    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds: list[float] = []

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return EpochTimer()


def training_throughput(batch_sizes, *, device: str = "cpu:0", n_samples: int = 8192, max_steps: int = 128,
                        n_features: int = 64, hidden: int = 256, repeats: int = 3, seed: int = 0,
                        progress: bool = False) -> list[dict]:
    """Samples per second of ``fit()`` on in-memory data, for each batch size, on ``device``.

    Per batch size: a fresh model built on the device, one warm-up epoch (tracing), then
    ``repeats`` timed epochs over ``n_samples`` samples, or fewer: at most ``max_steps`` steps
    per epoch, so that small batches do not take all day. Returns dicts with ``batch_size``,
    ``samples`` (per epoch), ``samples_per_s`` (median), ``min``/``max`` and ``step_ms``."""
    batch_sizes = _check_int_list("batch_sizes", batch_sizes)
    n_samples = _check_int("n_samples", n_samples)
    max_steps = _check_int("max_steps", max_steps)
    repeats = _check_int("repeats", repeats)
    if not isinstance(device, str):
        raise TypeError(f"device must be a string like 'cpu:0' or 'gpu:0', got {device!r}")
    too_big = [b for b in batch_sizes if b > n_samples]
    if too_big:
        raise ValueError(f"batch sizes {too_big} are larger than n_samples={n_samples}")
    keras = import_keras()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, n_features), dtype=np.float32)
    y = (x[:, :1] * 0.5).astype(np.float32)
    rows = []
    for batch_size in _progress(batch_sizes, progress, f"batch sizes on {device}"):
        samples = min(n_samples, max_steps * batch_size)
        timer = _epoch_timer(keras)
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


# --------------------------------------------------------------------------- small calls


def _timed_calls(call, repeats: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        call()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return seconds


def single_sample_callers(model) -> dict:
    """Ways to get one sample's prediction out of ``model``: name -> function(x) -> NumPy.

    Each returns a NumPy array, so each pays for getting the answer back to Python. The
    compiled ones exist on the TensorFlow backend only (tf.function, and XLA via jit_compile)."""
    keras = _check_model(model)

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


def small_call_latency(*, device: str = "cpu:0", n_features: int = 64, hidden: int = 256, repeats: dict | None = None,
                       seed: int = 0) -> dict:
    """Seconds per single-sample inference, for each of ``single_sample_callers``, on ``device``.

    ``repeats``: calls timed per caller (after 3 warm-up calls); predict() is slow, so it gets
    fewer by default. Returns {"device", "outputs_agree", "tf32", "callers": {name: [seconds, ...]}}.

    Everything runs with TF32 off (``cnn.strict_float32``): on Ampere and newer GPUs TensorFlow
    would otherwise run float32 matmuls in TF32 (10 mantissa bits, ~1e-3 relative error), and
    a compiled caller may round differently from an eager one. With strict float32 the callers
    differ only in summation order, so ``outputs_agree`` uses a tolerance of 1e-4 (relative)
    on any device, and the timings are those of float32 matmuls."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a string like 'cpu:0' or 'gpu:0', got {device!r}")
    repeats = {"model.predict(x)": 30, "default": 300} if repeats is None else repeats
    if not isinstance(repeats, dict) or "default" not in repeats:
        raise TypeError(f"repeats must be a dict with a 'default' count, got {repeats!r}")
    from .cnn import strict_float32

    keras = import_keras()
    x = np.random.default_rng(seed).standard_normal((1, n_features), dtype=np.float32)
    with keras.device(device), strict_float32():
        model = small_model(n_features, hidden, seed=seed)
        callers = single_sample_callers(model)
        outputs = {name: np.asarray(call(x)) for name, call in callers.items()}
        first = next(iter(outputs.values()))
        # TF32 off: only float32 rounding in another order separates the callers (~1e-6 here).
        agree = all(out.shape == first.shape and np.allclose(out, first, rtol=1e-4, atol=1e-5) for out in outputs.values())
        seconds = {}
        for name, call in callers.items():
            count = _check_int(f"repeats[{name!r}]", repeats.get(name, repeats["default"]))
            seconds[name] = _timed_calls(lambda: call(x), count)
    return {"device": device, "outputs_agree": bool(agree), "tf32": False, "callers": seconds}


# --------------------------------------------------------------------------- threads


def thread_count() -> int:
    """OS threads of this process (all of them: Python's, NumPy's, TensorFlow's)."""
    try:
        return len(os.listdir("/proc/self/task"))  # Linux: one entry per thread
    except OSError:
        import psutil

        return psutil.Process().num_threads()


def thread_names() -> dict[str, int]:
    """How many OS threads of this process carry each name (Linux; {} elsewhere)."""
    names: dict[str, int] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return names
    for task in tasks:
        try:
            name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        names[name] = names.get(name, 0) + 1
    return dict(sorted(names.items()))


def tf_thread_probe(intra_op: int | None = None, inter_op: int | None = None, size: int = 1000,
                    repeats: int = 10) -> dict:
    """Meant for a fresh process (``run_isolated("tf_thread_probe", ...)``): import TensorFlow,
    apply the thread settings *before* its first operation, time a (size x size) matmul, and
    report the OS threads at each stage and what a setting changed *after* the first op does."""
    report = {"threads_before_tensorflow": thread_count()}
    import tensorflow as tf

    report["threads_after_import"] = thread_count()
    if intra_op is not None:
        tf.config.threading.set_intra_op_parallelism_threads(_check_int("intra_op", intra_op))
    if inter_op is not None:
        tf.config.threading.set_inter_op_parallelism_threads(_check_int("inter_op", inter_op))
    a = tf.random.stateless_normal((size, size), seed=(1, 2))
    tf.matmul(a, a).numpy()  # the first op: TensorFlow starts its thread pools now
    report["threads_after_first_op"] = thread_count()
    report["thread_names"] = thread_names()
    seconds = _timed_calls(lambda: tf.matmul(a, a).numpy(), _check_int("repeats", repeats))
    report["matmul_ms"] = statistics.median(seconds) * 1e3
    report["gflops"] = 2 * size**3 / statistics.median(seconds) / 1e9
    report["intra_op"] = tf.config.threading.get_intra_op_parallelism_threads()
    report["inter_op"] = tf.config.threading.get_inter_op_parallelism_threads()
    different = 2 if report["intra_op"] == 1 else 1  # setting the value it already has is allowed
    try:
        tf.config.threading.set_intra_op_parallelism_threads(different)
        report["set_after_first_op"] = "accepted"
    except RuntimeError as error:
        report["set_after_first_op"] = f"RuntimeError: {error}"
    return report


# --------------------------------------------------------------------------- profiling


def key_as_text(state: np.ndarray) -> str:
    """A state's features turned into a string, to serve as a dict key: correct, and slow
    (a Python float object and its decimal digits for every feature)."""
    return str(state.tolist())


def key_as_bytes(state: np.ndarray) -> bytes:
    """The same key, as the state's raw bytes: one copy, no formatting."""
    return state.tobytes()


def lookup_table(states: np.ndarray, targets: np.ndarray, key_of) -> dict:
    """{key_of(state): target} for each row of ``states``."""
    states, targets = _check_states(states, targets)
    if not callable(key_of):
        raise TypeError(f"key_of must be a function of one state, got {type(key_of).__name__}")
    return {key_of(state): float(target) for state, target in zip(states, targets)}


def lookup_batches(states: np.ndarray, table: dict, key_of, batch_size: int = 64):
    """Yield (states, targets) batches, each target looked up in ``table`` by its state's key:
    the shape of a replay-buffer generator that hides its slow step in ``key_of``."""
    states, _ = _check_states(states)
    batch_size = _check_int("batch_size", batch_size)
    for start in range(0, len(states), batch_size):
        rows = states[start:start + batch_size]
        targets = np.array([table[key_of(state)] for state in rows], dtype=np.float32)
        yield rows, targets


def _check_states(states, targets=None):
    if not isinstance(states, np.ndarray) or states.ndim != 2:
        raise TypeError(f"states must be a 2-D NumPy array (samples, features), got {type(states).__name__}"
                        f"{' of shape ' + str(states.shape) if isinstance(states, np.ndarray) else ''}")
    if targets is not None:
        targets = np.asarray(targets)
        if targets.shape[:1] != states.shape[:1]:
            raise ValueError(f"targets must hold one value per state ({len(states)}), got shape {targets.shape}")
    return states, targets


def profile_call(function, *args, **kwargs):
    """Run ``function(*args, **kwargs)`` under cProfile: (its result, pstats.Stats)."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    profiler = cProfile.Profile()
    result = profiler.runcall(function, *args, **kwargs)
    return result, pstats.Stats(profiler)


def _readable(key) -> str:
    filename, line, name = key
    if filename == "~":  # a built-in: pstats writes its name in braces already
        return name
    return f"{Path(filename).name}:{line}({name})"


def top_functions(stats: pstats.Stats, n: int = 8, *, sort: str = "tottime") -> list[dict]:
    """The ``n`` functions with the most time: name, calls, own seconds (without what they
    call), total seconds (with it). ``sort``: "tottime" (own) or "cumtime" (total)."""
    if not isinstance(stats, pstats.Stats):
        raise TypeError(f"stats must be a pstats.Stats, got {type(stats).__name__}")
    n = _check_int("n", n)
    if sort not in ("tottime", "cumtime"):
        raise ValueError(f"sort must be 'tottime' or 'cumtime', got {sort!r}")
    rows = [
        {"function": _readable(key), "name": key[2], "calls": calls, "own_s": own, "total_s": total}
        for key, (_, calls, own, total, _) in stats.stats.items()
    ]
    rows.sort(key=lambda row: row["own_s" if sort == "tottime" else "total_s"], reverse=True)
    return rows[:n]


def function_share(stats: pstats.Stats, name: str) -> float:
    """Fraction of the profiled time spent inside function ``name`` and what it calls."""
    if not isinstance(stats, pstats.Stats):
        raise TypeError(f"stats must be a pstats.Stats, got {type(stats).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"name must be a function's name (str), got {type(name).__name__}")
    matches = [total for key, (_, _, _, total, _) in stats.stats.items() if key[2] == name]
    if not matches:
        raise ValueError(f"no function named {name!r} in this profile")
    return max(matches) / stats.total_tt if stats.total_tt else 0.0


def format_profile(rows: list[dict]) -> str:
    """``top_functions`` rows as a table."""
    lines = [f"{'own s':>8} {'total s':>8} {'calls':>8}  function"]
    lines += [f"{r['own_s']:>8.3f} {r['total_s']:>8.3f} {r['calls']:>8}  {r['function']}" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- spawn


def _quiet_worker() -> None:
    # A worker that dies prints its traceback to stderr; in a notebook that would land in the
    # cell's output. The outcome is reported by call_in_spawned_process instead.
    sys.stderr = open(os.devnull, "w")


def call_in_spawned_process(function, *args, timeout_s: float = 10.0) -> dict:
    """Run ``function(*args)`` in a one-process pool started with *spawn* (a fresh interpreter
    that receives the function and arguments by pickle). Never waits more than ``timeout_s``.

    Returns {"outcome": "returned" | "raised" | "timed out", "detail": str}."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    timeout_s = _check_number("timeout_s", timeout_s, minimum=1e-3)
    pool = multiprocessing.get_context("spawn").Pool(1, initializer=_quiet_worker)
    try:
        pending = pool.apply_async(function, args)
        try:
            return {"outcome": "returned", "detail": repr(pending.get(timeout=timeout_s))}
        except multiprocessing.TimeoutError:
            return {"outcome": "timed out", "detail": f"no answer within {timeout_s:g} s"}
        except Exception as error:  # noqa: BLE001 - reporting what the user's code raised
            return {"outcome": "raised", "detail": f"{type(error).__name__}: {error}"}
    finally:
        pool.terminate()  # also ends a worker stuck on a task it could not unpickle
        pool.join()


def run_script(source: str, *, timeout_s: float = 60.0) -> dict:
    """Run ``source`` as a script file in a fresh Python process, killed after ``timeout_s``.

    Returns {"returncode", "stdout", "stderr", "timed_out"}."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the script's text (str), got {type(source).__name__}")
    timeout_s = _check_number("timeout_s", timeout_s, minimum=1e-3)
    with tempfile.TemporaryDirectory(prefix="fastlstm-script-") as folder:
        script = Path(folder, "script.py")
        script.write_text(source)
        child = subprocess.Popen([sys.executable, str(script)], cwd=folder, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=(os.name == "posix"))
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
            return {"returncode": child.returncode, "stdout": stdout, "stderr": stderr, "timed_out": False}
        except subprocess.TimeoutExpired:
            _kill_group(child)
            stdout, stderr = child.communicate()
            return {"returncode": child.returncode, "stdout": stdout, "stderr": stderr, "timed_out": True}
