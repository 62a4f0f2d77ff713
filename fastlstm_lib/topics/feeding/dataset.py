"""The slow dataset (``SlowBatches``, defined on first use) and the work in a batch: notebook 30's ``fit()`` input."""

from __future__ import annotations

import statistics
import time
from typing import NamedTuple

import numpy as np

from ...checks import check_bool, check_choice, check_int, check_number
from ...runtime.keras_backend import import_keras
from ...timing import wall_times
from .timeline import Timeline, now

#: "wait": a batch's time passes in time.sleep (GIL free, like I/O); "compute": in Python (GIL held).
KINDS = ("wait", "compute")


def python_work(loops: int) -> int:
    """Pure-Python arithmetic, ``loops`` iterations: holds the GIL all the time, like feature code
    written in Python. A fixed amount of *work* (not a time): two threads running it share one
    interpreter, so they take twice as long, which is the point."""
    loops = check_int("loops", loops, minimum=0)
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def calibrate_loops_per_ms() -> float:
    """How many ``python_work`` loops this machine runs per millisecond (median of 5 runs)."""
    sample_loops = 200_000
    python_work(sample_loops // 10)  # warm-up
    return sample_loops / statistics.median(wall_times(lambda: python_work(sample_loops), warmup=0, repeats=5))


def make_batch(index: int, batch_size: int = 64, n_features: int = 32, seed: int = 0):
    """Batch ``index``: (x (batch_size, n_features), y (batch_size, 1)) float32, the same in any process."""
    index = check_int("index", index, minimum=0)
    batch_size = check_int("batch_size", batch_size)
    n_features = check_int("n_features", n_features)
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng([seed, index])
    x = rng.standard_normal((batch_size, n_features), dtype=np.float32)
    y = 0.5 * x[:, :1] + x.mean(axis=1, keepdims=True)  # something learnable
    return x, y.astype(np.float32)


def _slow_batches_class(keras):
    """Define SlowBatches; a function, so that Keras is imported only when it is first used."""

    class SlowBatches(keras.utils.PyDataset):
        """``n_batches`` batches of ``make_batch``; each costs ``wait_ms`` of sleeping (GIL free)
        plus ``python_loops`` of pure-Python work (GIL held). ``workers``,
        ``use_multiprocessing`` and ``max_queue_size`` go to ``keras.utils.PyDataset``."""

        def __init__(self, n_batches, *, batch_size=64, n_features=32, wait_ms=0.0, python_loops=0,
                     seed=0, timeline=None, workers=1, use_multiprocessing=False, max_queue_size=10):
            super().__init__(workers=check_int("workers", workers),
                             use_multiprocessing=check_bool("use_multiprocessing", use_multiprocessing),
                             max_queue_size=check_int("max_queue_size", max_queue_size))
            self.n_batches = check_int("n_batches", n_batches)
            self.batch_size = check_int("batch_size", batch_size)
            self.n_features = check_int("n_features", n_features)
            self.wait_ms = check_number("wait_ms", wait_ms, minimum=0)
            self.python_loops = check_int("python_loops", python_loops, minimum=0)
            self.seed = check_int("seed", seed, minimum=0)
            if timeline is not None and not isinstance(timeline, Timeline):
                raise TypeError(f"timeline must be a Timeline or None, got {type(timeline).__name__}")
            self.timeline = timeline

        def __len__(self):
            return self.n_batches

        def __getitem__(self, index):
            if not 0 <= index < self.n_batches:
                raise IndexError(f"batch index {index} out of range 0..{self.n_batches - 1}")
            started = now()
            if self.wait_ms:
                time.sleep(self.wait_ms / 1e3)  # waiting, like I/O: other threads run meanwhile
            if self.python_loops:
                python_work(self.python_loops)  # computing in Python: other threads wait
            batch = make_batch(int(index), self.batch_size, self.n_features, self.seed)
            if self.timeline is not None:
                self.timeline.record_production(index, started, now())
            return batch

    # Picklable by name (fastlstm_lib.topics.feeding.dataset.SlowBatches), which spawn needs: a fresh
    # interpreter imports this module and asks it for SlowBatches, which __getattr__ defines.
    SlowBatches.__module__ = __name__
    SlowBatches.__qualname__ = "SlowBatches"
    return SlowBatches


def slow_batches_class():
    """The ``SlowBatches`` class (imports Keras and defines it the first time)."""
    cls = globals().get("SlowBatches")
    if cls is None:
        cls = globals()["SlowBatches"] = _slow_batches_class(import_keras())
    return cls


def __getattr__(name):
    # PEP 562: ``SlowBatches`` exists once asked for (see the comment in _slow_batches_class).
    if name == "SlowBatches":
        return slow_batches_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Feeder(NamedTuple):
    """How batches reach the training step: ``via`` "fit", "tf.data" or "loop" (no fit())."""

    workers: int | None
    use_multiprocessing: bool
    via: str


def parse_feeder(feeder: str) -> Feeder:
    """"4 threads" -> Feeder(4, False, "fit"); "2 processes" -> (2, True, "fit"); also
    "1 worker", "tf.data", "plain loop"."""
    if not isinstance(feeder, str):
        raise TypeError(f"feeder must be a string like '4 threads', got {type(feeder).__name__} {feeder!r}")
    if feeder in ("tf.data", "plain loop"):
        return Feeder(None, False, "tf.data" if feeder == "tf.data" else "loop")
    words = feeder.split()
    units = {"worker": False, "workers": False, "thread": False, "threads": False, "process": True, "processes": True}
    if len(words) != 2 or not words[0].isdigit() or int(words[0]) < 1 or words[1] not in units:
        raise ValueError("feeder must be 'N worker(s)', 'N thread(s)', 'N process(es)', 'tf.data' or "
                         f"'plain loop', got {feeder!r}")
    if words[1].startswith("worker") and int(words[0]) != 1:
        raise ValueError(f"say 'N threads' or 'N processes' for more than one worker, got {feeder!r}")
    return Feeder(int(words[0]), units[words[1]], "fit")


def slow_dataset(n_batches: int, *, kind: str = "wait", batch_ms: float = 10.0, loops_per_ms: float | None = None,
                 feeder: str = "1 worker", **options):
    """A ``SlowBatches`` whose batches each cost about ``batch_ms`` of ``kind``, fed as ``feeder`` says."""
    n_batches = check_int("n_batches", n_batches)
    check_choice("kind", kind, KINDS)
    batch_ms = check_number("batch_ms", batch_ms, minimum=0)
    loops_per_ms = None if loops_per_ms is None else check_number("loops_per_ms", loops_per_ms, minimum=1e-9)
    workers, use_multiprocessing, via = parse_feeder(feeder)
    if via != "fit":
        raise ValueError(f"slow_dataset() feeds through Keras' PyDataset; {feeder!r} is not a PyDataset feeder")
    if kind == "wait":
        options["wait_ms"] = batch_ms
    else:
        per_ms = loops_per_ms if loops_per_ms is not None else calibrate_loops_per_ms()
        options["python_loops"] = int(round(per_ms * batch_ms))
    return slow_batches_class()(n_batches, workers=workers, use_multiprocessing=use_multiprocessing, **options)
