"""The library's clocks: how every time in the course is taken, and how repeats are summarised.

- ``time_launches``: work queued on Numba's streams, timed with a pair of CUDA events per repeat
  (what the GPU took, launches included), or a wall clock on the simulator (no events there).
- ``wall_times``: anything that returns when its work is done (or is followed by a
  ``synchronize`` that waits for it): Keras calls, a training step, a data pipeline.
- ``issue_and_run_times``: for work queued on Numba's streams, three clocks at once: the host's
  time to issue it, the GPU's (CUDA events), and the wall clock until it is done.
- ``epoch_timer``: a Keras callback that records the wall time of every epoch of ``fit``.
- ``summarize``: median, quartiles and extremes of a list of times.
- ``cpu_snapshot`` / ``cpu_busy_elsewhere``: how busy other processes keep the CPUs, during a
  short wait or over a whole measurement (timings need that near 0).

Every function warms up first (compilation, caches and allocations stay out of the times).
"""

from __future__ import annotations

import time

import numpy as np

from .runtime.device import DEVICE


def wall_times(call, *, warmup: int, repeats: int, synchronize=None) -> list[float]:
    """Milliseconds per ``call()``, read from a wall clock after ``synchronize()`` (if given)."""
    synchronize = synchronize or (lambda: None)
    _warm_up(call, warmup, repeats, synchronize)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def time_launches(launch, *, warmup: int, repeats: int) -> list[float]:
    """Milliseconds per ``launch()`` of work queued on Numba's streams.

    On a GPU: CUDA events recorded on the default stream before and after each call (work on
    other streams is ordered with it, see ``steps.base``). On the simulator: a wall clock after
    ``cuda.synchronize()``; those times measure Python threads and mean nothing for a GPU.
    """
    from numba import cuda

    if not DEVICE.compiled:  # the simulator has no event timer
        return wall_times(launch, warmup=warmup, repeats=repeats, synchronize=cuda.synchronize)
    _warm_up(launch, warmup, repeats, cuda.synchronize)
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return times


def issue_and_run_times(launch, *, warmup: int, repeats: int) -> dict:
    """{"issue": [...], "device": [...] or None, "wall": [...]}: milliseconds per ``launch()``.

    ``issue``: until ``launch()`` returns (the host's time to queue the work); ``device``: between
    CUDA events recorded before and after it (what the GPU took, including any time it waited for
    the host to queue the next kernel); ``wall``: until the work is done. When ``issue`` is close
    to ``device``, the host sets the pace. On the simulator launches run synchronously and there
    are no events: ``device`` is None and the times mean nothing.
    """
    from numba import cuda

    _warm_up(launch, warmup, repeats, cuda.synchronize)
    events = (cuda.event(timing=True), cuda.event(timing=True)) if DEVICE.compiled else None
    issue, device, wall = [], [], []
    for _ in range(repeats):
        cuda.synchronize()
        start = time.perf_counter()
        if events:
            events[0].record()
        launch()
        issued = time.perf_counter()
        if events:
            events[1].record()
            events[1].synchronize()
            device.append(cuda.event_elapsed_time(*events))
        else:
            cuda.synchronize()
        wall.append((time.perf_counter() - start) * 1e3)
        issue.append((issued - start) * 1e3)
    return {"issue": issue, "device": device if events else None, "wall": wall}


def summarize(times_ms) -> dict:
    """{"median", "min", "max", "q25", "q75"} of a list of times (milliseconds)."""
    times = np.asarray(times_ms, dtype=np.float64)
    if times.size == 0:
        raise ValueError("summarize() needs at least one time, got none")
    return {
        "median": float(np.median(times)),
        "min": float(times.min()),
        "max": float(times.max()),
        "q25": float(np.percentile(times, 25)),
        "q75": float(np.percentile(times, 75)),
    }


def epoch_timer():
    """A Keras callback whose ``seconds`` list gets the wall time of every epoch of ``fit``.

    ``on_epoch_end`` comes after the epoch's last step has finished, so nothing is left queued.
    """
    from .runtime.keras_backend import import_keras

    keras = import_keras()

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds: list[float] = []

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return EpochTimer()


def cpu_snapshot() -> tuple[int, int, int] | None:
    """CPU clock ticks so far: (the machine's busy ticks, all its ticks, those of this process and
    of its waited-for children). Linux (/proc); None elsewhere. See ``cpu_busy_elsewhere``."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:8]]  # user nice system idle iowait irq softirq
        with open("/proc/self/stat") as stat:
            own = stat.read().rsplit(")", 1)[1].split()[11:15]  # utime stime cutime cstime
    except (OSError, ValueError, IndexError):
        return None
    return sum(fields) - fields[3] - fields[4], sum(fields), sum(int(v) for v in own)


#: Other processes may use at most this share of the CPUs (``cpu_busy_elsewhere``) for timings
#: taken meanwhile to count as this program's own.
IDLE_ENOUGH = 0.05


def cpu_busy_elsewhere(seconds: float = 0.5, *, since: tuple | None = None) -> float | None:
    """Fraction of the machine's CPU time that *other* processes used (0: idle, 1: every core
    busy): during ``seconds`` of waiting, or from the ``cpu_snapshot()`` ``since`` until now.
    Timings are only this program's own under ``IDLE_ENOUGH``. None where /proc is missing."""
    start = since if since is not None else cpu_snapshot()
    if since is None and start is not None:
        time.sleep(seconds)
    end = cpu_snapshot()
    if start is None or end is None:
        return None
    busy, total, own = (b - a for a, b in zip(start, end))
    return max(0.0, min(1.0, (busy - own) / total)) if total > 0 else 0.0


def _warm_up(call, warmup: int, repeats: int, synchronize) -> None:
    """The counts checked, then ``warmup`` untimed calls and a ``synchronize()``."""
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    for _ in range(warmup):
        call()
    synchronize()
