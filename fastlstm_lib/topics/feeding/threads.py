"""Threads: Python's GIL made measurable (``threads_take_turns``, ``gil_handoff_us``, at Python's
default ``switch_interval``: ``import fastlstm_lib`` shortens it for the CUDA simulator), and the OS
threads of a process and TensorFlow's thread settings (``thread_names``, ``tf_thread_probe``).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from ...checks import check_int, check_int_list, check_seconds
from ...runtime.keras_backend import tensorflow_reason
from ...timing import wall_times
from .dataset import python_work

#: Python's default GIL switch interval (``sys.setswitchinterval`` documentation: 0.005 s).
PYTHON_SWITCH_INTERVAL_S = 0.005


@contextlib.contextmanager
def switch_interval(seconds: float = PYTHON_SWITCH_INTERVAL_S):
    """``sys.setswitchinterval(seconds)`` inside the block, the previous interval after it."""
    seconds = check_seconds("seconds", seconds)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def threads_take_turns(loops: int, n_threads: int = 2) -> dict:
    """``serial_s``, ``threads_s`` and ``speedup`` for ``n_threads`` runs of ``python_work(loops)``."""
    loops = check_int("loops", loops)
    n_threads = check_int("n_threads", n_threads)
    python_work(loops // 10)  # warm-up
    start = time.perf_counter()
    for _ in range(n_threads):
        python_work(loops)
    serial = time.perf_counter() - start
    threads = [threading.Thread(target=python_work, args=(loops,)) for _ in range(n_threads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    together = time.perf_counter() - start
    return {"n_threads": n_threads, "serial_s": serial, "threads_s": together, "speedup": serial / together}


def gil_handoff_us(*, calls: int = 40) -> dict:
    """Microseconds per ``time.sleep(0)`` (lets go of the GIL and takes it back) ``alone`` and
    ``beside_python_work`` in another thread, and the ``switch_interval_us`` in force."""
    calls = check_int("calls", calls)

    def per_call_us():
        start = time.perf_counter()
        for _ in range(calls):
            time.sleep(0)
        return (time.perf_counter() - start) / calls * 1e6

    alone = per_call_us()
    stop = threading.Event()

    def compute():
        while not stop.is_set():
            python_work(20_000)

    worker = threading.Thread(target=compute, daemon=True)
    worker.start()
    try:
        time.sleep(0.01)  # let it start computing
        beside = per_call_us()
    finally:
        stop.set()
        worker.join()
    return {"alone": alone, "beside_python_work": beside, "switch_interval_us": sys.getswitchinterval() * 1e6}


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


def time_matmuls(sizes=(128, 1024), *, repeats: int = 10) -> list[dict]:
    """TensorFlow's (size x size) float32 matmul in this process per size: ms, GFLOP/s, and
    ``cores_busy`` (process CPU seconds per wall second: 1 when one thread did the work)."""
    sizes = check_int_list("sizes", sizes)
    repeats = check_int("repeats", repeats)
    reason = tensorflow_reason()
    if reason:
        raise RuntimeError(f"timing TensorFlow's matmul needs TensorFlow as the Keras backend: {reason}")
    import tensorflow as tf

    return [_time_matmul(tf, size, repeats) for size in sizes]


def _time_matmul(tf, size: int, repeats: int) -> dict:
    # At least 2 GFLOP per size (~10 ms on a CPU core), within 1000 calls: a 128x128 matmul takes
    # ~0.05 ms, and CPU seconds over a window that short would say little about busy cores.
    repeats = max(repeats, min(1000, math.ceil(2e9 / (2 * size**3))))
    a = tf.random.stateless_normal((size, size), seed=(1, 2))
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    times_ms = wall_times(lambda: tf.matmul(a, a).numpy(), warmup=2, repeats=repeats)
    cores_busy = (time.process_time() - cpu_start) / (time.perf_counter() - wall_start)
    median_ms = statistics.median(times_ms)
    return {"size": size, "ms": median_ms, "min_ms": min(times_ms), "max_ms": max(times_ms),
            "gflops": 2 * size**3 / (median_ms * 1e-3) / 1e9, "cores_busy": cores_busy}


def tf_thread_probe(intra_op: int | None = None, inter_op: int | None = None, sizes=(128, 1024),
                    repeats: int = 10) -> dict:
    """Meant for a fresh process (``run_isolated("tf_thread_probe", ...)``): import TensorFlow,
    apply the thread settings *before* its first operation, and report the OS threads at each
    stage, a timed (size x size) float32 matmul per size in ``sizes`` (median ms, GFLOP/s,
    ``cores_busy``: CPU seconds of the process per wall second while timing: 1 means one thread
    did the work), and what changing a setting *after* the first op does."""
    sizes = check_int_list("sizes", sizes)
    repeats = check_int("repeats", repeats)
    report = {"threads_before_tensorflow": thread_count()}
    import tensorflow as tf

    report["threads_after_import"] = thread_count()
    if intra_op is not None:
        tf.config.threading.set_intra_op_parallelism_threads(check_int("intra_op", intra_op))
    if inter_op is not None:
        tf.config.threading.set_inter_op_parallelism_threads(check_int("inter_op", inter_op))
    tf.matmul(tf.ones((2, 2)), tf.ones((2, 2))).numpy()  # the first op: TensorFlow starts its pools now
    report["threads_after_first_op"] = thread_count()
    report["thread_names"] = thread_names()
    report["matmuls"] = [_time_matmul(tf, size, repeats) for size in sizes]
    report["intra_op"] = tf.config.threading.get_intra_op_parallelism_threads()
    report["inter_op"] = tf.config.threading.get_inter_op_parallelism_threads()
    different = 2 if report["intra_op"] == 1 else 1  # setting the value it already has is allowed
    try:
        tf.config.threading.set_intra_op_parallelism_threads(different)
        report["set_after_first_op"] = "accepted"
    except RuntimeError as error:
        report["set_after_first_op"] = f"RuntimeError: {error}"
    return report
