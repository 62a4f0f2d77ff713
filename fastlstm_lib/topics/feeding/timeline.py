"""The timeline: when each batch was made (any thread or process) and when fit() trained; read from its JSON dict."""

from __future__ import annotations

import multiprocessing
import os
import statistics
import threading
import time

from ...checks import check_bool, check_dict, check_int, check_number
from ...runtime.keras_backend import import_keras


def now() -> float:
    """The clock of every timeline: perf_counter is system-wide, so worker processes share it."""
    return time.perf_counter()


class Timeline:
    """When each batch was produced and when fit() trained on it. A worker process's productions come
    through a pipe, drained at every step (``collect()``): a full pipe (64 KiB) would block the worker."""

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
        """Move what worker processes sent into ``produced`` (in the owner process, one thread at a time)."""
        if os.getpid() != self._owner:
            return
        with self._reading:
            while not self._inbox.empty():
                self.produced.append(tuple(self._inbox.get()))

    def callback(self):
        """A Keras callback recording epochs and training steps into this timeline."""
        return _timeline_callback_class(import_keras())(self)

    def to_dict(self) -> dict:
        """JSON-able copy (times in seconds on the ``now()`` clock)."""
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
            self._epoch, self._epoch_start = epoch, now()

        def on_train_batch_begin(self, batch, logs=None):
            self._step_start = now()

        def on_train_batch_end(self, batch, logs=None):
            end = now()  # before collecting, which is our cost, not fit's
            self.timeline.steps.append((self._epoch, batch, self._step_start, end))
            self.timeline.collect()

        def on_epoch_end(self, epoch, logs=None):
            self.timeline.epochs.append((epoch, self._epoch_start, now()))
            self.timeline.collect()

    return RecordSteps


def check_record(record, keys=("produced", "steps", "epochs")) -> dict:
    """A ``Timeline.to_dict()``: a dict with a list under each of ``keys``."""
    check_dict("record", record, keys, "Timeline.to_dict()")
    for key in keys:
        if not isinstance(record[key], (list, tuple)):
            raise TypeError(f"record[{key!r}] must be a list, got {type(record[key]).__name__}")
    return record


def _timed_epochs(record: dict, skip_first: bool) -> list:
    epochs = record["epochs"]
    return epochs[1:] if check_bool("skip_first", skip_first) and len(epochs) > 1 else epochs


def epoch_seconds(record: dict, *, skip_first: bool = True) -> list[float]:
    """Seconds per epoch from a ``Timeline.to_dict()``; the first (warm-up) epoch left out."""
    check_record(record, ("epochs",))
    return [end - start for _, start, end in _timed_epochs(record, skip_first)]


def phase_seconds(record: dict, *, skip_first: bool = True) -> dict:
    """Seconds per epoch of ``head`` (to the first step), ``steps`` (first to last step), ``tail``
    (the enqueuer stopping) and ``to_last_step`` (head + steps)."""
    check_record(record, ("steps", "epochs"))
    phases = {"head": [], "steps": [], "tail": [], "to_last_step": []}
    for epoch, start, end in _timed_epochs(record, skip_first):
        steps = [s for s in record["steps"] if s[0] == epoch]
        if not steps:
            continue
        phases["head"].append(steps[0][2] - start)
        phases["steps"].append(steps[-1][3] - steps[0][2])
        phases["tail"].append(end - steps[-1][3])
        phases["to_last_step"].append(steps[-1][3] - start)
    return phases


def epoch_phases(record: dict, *, skip_first: bool = True) -> dict:
    """The median over epochs of each of ``phase_seconds``."""
    phases = phase_seconds(record, skip_first=skip_first)
    return {name: statistics.median(values) if values else float("nan") for name, values in phases.items()}


def production_ms(record: dict, *, skip_first: bool = True) -> list[float]:
    """Milliseconds each batch finished inside the timed epochs took to make (``__getitem__``)."""
    check_record(record, ("produced", "epochs"))
    windows = [(start, end) for _, start, end in _timed_epochs(record, skip_first)]
    return [(end - start) * 1e3 for _, _, start, end in record["produced"]
            if any(low <= end <= high for low, high in windows)]


def finish_order(record: dict) -> list[int]:
    """Batch indices in the order their production finished (from ``Timeline.to_dict()``)."""
    check_record(record, ("produced",))
    return [index for index, _, _, end in sorted(record["produced"], key=lambda r: r[3])]


def timeline_problems(record: dict, n_batches: int) -> list[str]:
    """What is inconsistent in a timeline of fit(shuffle=False) over ``n_batches`` batches: steps
    0..n-1 in order inside each epoch, productions that end before they start, a step that ends
    before its batch was made."""
    n_batches = check_int("n_batches", n_batches)
    check_record(record)
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


def plot_timeline(record: dict, *, ax=None, title: str | None = None, xmax_ms: float | None = None):
    """The last epoch of a ``Timeline.to_dict()``: a lane per worker with a bar per batch it made,
    and fit's lane with a bar per step (waiting included), in ms up to ``xmax_ms``. Returns the axes."""
    check_record(record)
    if not record["epochs"]:
        raise ValueError("the timeline has no epoch: was fit() run with its callback?")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__} {title!r}")
    if xmax_ms is not None:
        check_number("xmax_ms", xmax_ms, minimum=0)
    import matplotlib.pyplot as plt

    number, epoch_start, epoch_end = record["epochs"][-1]
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3))
    window = [p for p in record["produced"] if p[3] > epoch_start and p[2] < epoch_end]  # overlapping the epoch
    workers = list(dict.fromkeys(p[1] for p in sorted(window, key=lambda p: p[2])))
    to_ms = lambda t: (t - epoch_start) * 1e3  # noqa: E731
    for lane, worker in enumerate(workers):
        for _, _, start, end in (p for p in window if p[1] == worker):
            ax.barh(lane, to_ms(end) - to_ms(start), left=to_ms(start), height=0.7, color="tab:blue", edgecolor="white")
    fit_lane = len(workers)
    for _, step, start, end in (s for s in record["steps"] if s[0] == number):
        ax.barh(fit_lane, to_ms(end) - to_ms(start), left=to_ms(start), height=0.7,
                color="tab:orange" if step % 2 else "tab:red", edgecolor="white")
    ax.axvline(to_ms(epoch_end), color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(fit_lane + 1), [f"worker {i + 1}" for i in range(fit_lane)] + ["train steps"])
    ax.set_xlim(0, xmax_ms if xmax_ms is not None else max(to_ms(epoch_end) * 1.02, 1))
    ax.set_xlabel("time since the epoch began (ms); blue: a batch being produced; dashed: epoch end")
    if title:
        ax.set_title(title)
    return ax
