"""Threads: how many a process has (``thread_count``, ``thread_names``), and what TensorFlow's
settings change (``time_matmuls`` here; ``tf_thread_probe`` in a fresh process, through
``run_isolated``): how many cores a matmul kept busy.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path

from ...checks import check_int, check_int_list
from ...runtime.keras_backend import tensorflow_reason
from ...timing import wall_times


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
