"""fastlstm_lib.topics.feeding: the slow dataset, the timeline, feeders, the GIL, isolation, profiling, spawn.

No assertion here is about speed: timings only have to exist and be consistent.
"""

import concurrent.futures
import functools
import gc
import math
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest

import fastlstm_lib.topics.feeding as fd
from fastlstm_lib.runtime.keras_backend import import_keras, tensorflow_reason

# The one check that needs a fresh TensorFlow process (fd.run_isolated: ~4 s, mostly imports)
# starts now, before this module imports Keras: the child's imports then overlap ours and the
# tests before it. test_every_feeder_completes_in_a_child_with_a_time_limit waits for it.
ISOLATED_RUNS = {"wait": ["1 worker", "2 processes"], "compute": ["plain loop", "2 processes"]}
ISOLATED_SETTINGS = dict(n_batches=4, batch_ms=2.0, loops_per_ms=200.0, epochs=2, batch_size=8, n_features=4)
isolated_run = concurrent.futures.ThreadPoolExecutor(max_workers=1).submit(
    fd.run_isolated, "compare_feeders", dict(feeders=ISOLATED_RUNS, **ISOLATED_SETTINGS), timeout_s=150)

pytest.importorskip("keras")
keras = import_keras()  # quietly: TensorFlow's start-up log stays out of the test output

SMALL = dict(n_batches=5, batch_size=8, n_features=4)


@functools.lru_cache(maxsize=None)
def tiny_model():
    """One compiled small model for the tests that only need *a* model (building one costs ~0.1 s)."""
    return fd.small_model(SMALL["n_features"], 8)


def small_dataset(**options):
    return fd.SlowBatches(SMALL["n_batches"], batch_size=SMALL["batch_size"], n_features=SMALL["n_features"], **options)


# --------------------------------------------------------------------------- import cost


def test_importing_feeding_does_not_import_keras():
    code = "import sys, fastlstm_lib, fastlstm_lib.topics.feeding; print(sorted({'keras', 'tensorflow', 'matplotlib', 'tqdm'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- batches and the dataset


def test_make_batch_is_deterministic_and_shaped():
    x, y = fd.make_batch(3, batch_size=5, n_features=7, seed=2)
    assert x.shape == (5, 7) and y.shape == (5, 1)
    assert x.dtype == np.float32 and y.dtype == np.float32
    x2, y2 = fd.make_batch(3, batch_size=5, n_features=7, seed=2)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    assert not np.array_equal(x, fd.make_batch(4, batch_size=5, n_features=7, seed=2)[0])


def test_dataset_batches_equal_make_batch():
    dataset = small_dataset(wait_ms=0.1, python_loops=10, seed=3)
    assert len(dataset) == 5
    for index in range(5):
        x, y = dataset[index]
        ex, ey = fd.make_batch(index, SMALL["batch_size"], SMALL["n_features"], seed=3)
        assert np.array_equal(x, ex) and np.array_equal(y, ey)
    with pytest.raises(IndexError, match="out of range 0..4"):
        dataset[5]


def test_enqueuer_hands_out_batches_in_order_with_threads():
    timeline = fd.Timeline()
    dataset = fd.SlowBatches(8, batch_size=4, n_features=3, wait_ms=2, timeline=timeline, workers=3)
    batches = fd.enqueue_all(dataset)
    assert len(batches) == 8
    for index, (x, y) in enumerate(batches):
        ex, ey = fd.make_batch(index, 4, 3)
        assert np.array_equal(x, ex) and np.array_equal(y, ey)
    record = timeline.to_dict()
    assert sorted(fd.finish_order(record)) == list(range(8))


def test_dataset_pickles_by_name():
    copy = pickle.loads(pickle.dumps(small_dataset(seed=5)))
    assert type(copy).__module__ == "fastlstm_lib.topics.feeding.dataset" and type(copy).__qualname__ == "SlowBatches"
    assert type(copy) is fd.SlowBatches  # one class, whichever module it is asked from
    assert np.array_equal(copy[1][0], fd.make_batch(1, SMALL["batch_size"], SMALL["n_features"], seed=5)[0])


def test_dataset_class_is_defined_when_unpickling_asks_for_it():
    # A fresh interpreter (spawn) has no SlowBatches yet: unpickling asks the module for it, and
    # the module's __getattr__ defines it. Here: forget the class, then unpickle.
    from fastlstm_lib.topics.feeding import dataset

    data = pickle.dumps(small_dataset(seed=4))
    original = dataset.__dict__.pop("SlowBatches")
    try:
        copy = pickle.loads(data)
        assert type(copy) is dataset.SlowBatches and type(copy) is not original
        assert np.array_equal(copy[0][0], fd.make_batch(0, SMALL["batch_size"], SMALL["n_features"], seed=4)[0])
    finally:
        dataset.SlowBatches = original


def test_slow_dataset_builds_each_kind_and_feeder():
    waiting = fd.slow_dataset(3, kind="wait", batch_ms=1.5, feeder="2 threads")
    assert (waiting.wait_ms, waiting.python_loops, waiting.workers, waiting.use_multiprocessing) == (1.5, 0, 2, False)
    computing = fd.slow_dataset(3, kind="compute", batch_ms=2, loops_per_ms=100, feeder="4 processes")
    assert (computing.wait_ms, computing.python_loops, computing.workers, computing.use_multiprocessing) == (0, 200, 4, True)


@pytest.mark.parametrize(
    "text, expected",
    [("1 worker", (1, False, "fit")), ("3 threads", (3, False, "fit")), ("1 thread", (1, False, "fit")),
     ("2 processes", (2, True, "fit")), ("tf.data", (None, False, "tf.data")), ("plain loop", (None, False, "loop"))],
)
def test_parse_feeder(text, expected):
    assert fd.parse_feeder(text) == expected


# --------------------------------------------------------------------------- timeline through fit()


def test_fit_timeline_is_consistent_with_threads():
    timeline = fd.Timeline()
    dataset = small_dataset(wait_ms=1, timeline=timeline, workers=2)
    record = fd.feed_and_train(dataset, fd.small_model(SMALL["n_features"], 8), epochs=2, timeline=timeline)
    assert fd.timeline_problems(record, SMALL["n_batches"]) == []
    assert [e[0] for e in record["epochs"]] == [0, 1]
    assert len(record["steps"]) == 2 * SMALL["n_batches"]
    for epoch in (0, 1):  # every batch was made at least once per epoch
        start, end = record["epochs"][epoch][1:]
        made = {index for index, _, _, finished in record["produced"] if start <= finished <= end}
        assert made == set(range(SMALL["n_batches"]))
    assert len(fd.epoch_seconds(record)) == 1 and fd.epoch_seconds(record)[0] > 0
    phases = fd.epoch_phases(record)
    assert set(phases) == {"head", "steps", "tail", "to_last_step"} and all(v >= 0 for v in phases.values())
    assert phases["to_last_step"] == pytest.approx(phases["head"] + phases["steps"])  # one timed epoch


def test_plain_loop_timeline_compares_with_fit():
    timeline = fd.Timeline()
    dataset = small_dataset(wait_ms=1, timeline=timeline)
    record = fd.train_in_a_loop(dataset, tiny_model(), epochs=2, timeline=timeline)
    assert fd.timeline_problems(record, SMALL["n_batches"]) == []  # each step after its batch, as in fit
    workers = {worker for _, worker, _, _ in record["produced"]}
    assert len(workers) == 1  # one thread made every batch: nothing overlaps
    made = fd.production_ms(record)
    assert len(made) == SMALL["n_batches"] and all(ms >= 1.0 for ms in made)  # the timed epoch's batches, >= wait_ms
    assert len(fd.production_ms(record, skip_first=False)) == 2 * SMALL["n_batches"]


def test_train_step_ms():
    times = fd.train_step_ms(tiny_model(), fd.make_batch(0, 8, 4), warmup=1, repeats=3)
    assert len(times) == 3 and all(t > 0 for t in times)


def test_timeline_never_blocks_on_its_own_records():
    # A pipe holds ~64 KiB: written to by the process that never reads it, ~1,000 records
    # used to block that process for good. Records made in the timeline's own process skip the pipe.
    import threading

    timeline = fd.Timeline()
    dataset = fd.SlowBatches(3000, batch_size=1, n_features=1, timeline=timeline)
    worker = threading.Thread(target=lambda: [dataset[i] for i in range(len(dataset))], daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "recording 3000 batches blocked"
    assert sorted(fd.finish_order(timeline.to_dict())) == list(range(3000))


def _in_own_process_group(target, send):
    os.setsid()  # the child and the pool workers it forks: one group, killed together
    # No garbage collection in the forked copy: collecting TensorFlow's objects there runs their
    # finalizers against the parent's runtime, which aborts the child (seen on Python 3.13).
    gc.disable()
    send.send(target())


def run_forked(target, timeout_s: float):
    """``target()`` in a child forked from this process (Keras already imported: no second
    import), in its own process group; the group is killed afterwards, and after ``timeout_s``
    if it hangs. Returns what target returned, or None if it did not answer in time."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_in_own_process_group, args=(target, send))
    child.start()
    send.close()
    try:
        return receive.recv() if receive.poll(timeout_s) else None
    except EOFError:  # the child died without answering
        return None
    finally:
        try:
            if os.getpgid(child.pid) == child.pid:  # never our own group
                os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.kill()
        child.join()


def _drain_2000_batches_from_processes():
    timeline = fd.Timeline()
    dataset = fd.SlowBatches(2000, batch_size=1, n_features=1, timeline=timeline, workers=2, use_multiprocessing=True)
    batches = fd.enqueue_all(dataset)
    produced = timeline.to_dict()["produced"]
    return len(batches), len(produced), len({worker.split("/")[0] for _, worker, _, _ in produced})


def test_enqueue_all_drains_what_worker_processes_send():
    # 2000 records (~70 bytes each) are twice what a 64 KiB pipe holds: without draining, the
    # worker processes block on the full pipe and the enqueuer never sees another batch.
    result = run_forked(_drain_2000_batches_from_processes, timeout_s=120)
    assert result is not None, "the worker processes blocked on a full pipe"
    n_batches, n_produced, n_processes = result
    assert n_batches == n_produced == 2000 and n_processes >= 2


def test_timeline_records_fill_more_than_a_pipe():
    # The drain test above is a regression test only if its records overflow a 64 KiB pipe
    # (each record: its pickle plus a 4-byte length). Without enqueue_all's collect() it hangs.
    record = (1999, f"{os.getpid()}/{2**47}", time.perf_counter(), time.perf_counter())
    assert 2000 * (len(pickle.dumps(record)) + 4) > 1.5 * 65536


def test_timeline_state_travels_with_its_owner():
    # What a spawned worker gets (pickle only allows it while spawning): the pipe and its owner.
    timeline = fd.Timeline()
    timeline.record_production(0, 0.0, 1.0)
    copy = fd.Timeline.__new__(fd.Timeline)
    copy.__setstate__(timeline.__getstate__())
    assert copy.to_dict()["produced"] == []  # what was recorded stays with the owner
    copy.record_production(1, 1.0, 2.0)  # same process as the owner: into the copy's own list
    assert [r[0] for r in copy.to_dict()["produced"]] == [1]
    copy._owner = -1  # as in a worker process: through the pipe, to the owner
    copy.record_production(2, 2.0, 3.0)
    copy.collect()  # not the owner: reads nothing
    assert [r[0] for r in timeline.to_dict()["produced"]] == [0, 2]


def test_timeline_problems_catches_a_step_before_its_batch():
    record = {
        "produced": [[0, "w", 0.0, 1.0], [1, "w", 1.0, 5.0]],
        "steps": [[0, 0, 1.0, 2.0], [0, 1, 2.0, 3.0]],  # step 1 ends before batch 1 was made
        "epochs": [[0, 0.0, 6.0]],
    }
    problems = fd.timeline_problems(record, 2)
    assert len(problems) == 1 and "trained before batch 1" in problems[0]
    record["steps"] = [[0, 1, 1.0, 2.0]]
    assert "expected 0..1" in fd.timeline_problems(record, 2)[0]


def test_plot_timeline_draws_lanes():
    matplotlib = pytest.importorskip("matplotlib", reason="drawing the timeline needs matplotlib (pip install matplotlib)")

    matplotlib.use("Agg")
    record = {
        "produced": [[0, "a", 0.0, 1.0], [1, "b", 0.5, 1.5]],
        "steps": [[0, 0, 1.0, 2.0], [0, 1, 2.0, 3.0]],
        "epochs": [[0, 0.0, 3.5]],
    }
    ax = fd.plot_timeline(record, title="t")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 1", "worker 2", "train steps"]
    with pytest.raises(ValueError, match="no epoch"):
        fd.plot_timeline({"produced": [], "steps": [], "epochs": []})


def test_summarize_feeders_speedup():
    results = [
        {"kind": "wait", "feeder": "1 worker", "n_batches": 4, "batch_ms": 10.0, "epoch_s": [0.4, 0.4]},
        {"kind": "wait", "feeder": "2 threads", "n_batches": 4, "batch_ms": 10.0, "epoch_s": [0.2, 0.2]},
        {"kind": "wait", "feeder": "plain loop", "n_batches": 4, "batch_ms": 10.0, "epoch_s": [0.5, 0.3]},
    ]
    rows = fd.summarize_feeders(results)
    assert [r["speedup"] for r in rows] == [1.0, 2.0, 1.0]
    assert [r["vs_loop"] for r in rows] == [1.0, 2.0, 1.0]
    assert rows[0]["serial_s"] == pytest.approx(0.04)
    assert "head_s" not in rows[0]  # no timeline, no phases
    assert fd.summarize_feeders(results[:2])[1]["vs_loop"] is None


def test_summarize_feeders_phases_and_batch_time():
    record = {  # two epochs; the second is timed: batch 0 took 10 ms, batch 1 30 ms
        "produced": [[0, "w", 0.0, 0.5], [0, "w", 1.0, 1.01], [1, "w", 1.01, 1.04]],
        "steps": [[0, 0, 0.5, 0.6], [1, 0, 1.02, 1.03], [1, 1, 1.03, 1.05]],
        "epochs": [[0, 0.0, 0.7], [1, 1.0, 1.15]],
    }
    row = fd.summarize_feeders([{"kind": "wait", "feeder": "2 threads", "n_batches": 2, "batch_ms": 10.0,
                                 "epoch_s": fd.epoch_seconds(record), "timeline": record}])[0]
    assert row["median_s"] == pytest.approx(0.15)
    assert (row["head_s"], row["steps_s"], row["tail_s"]) == pytest.approx((0.02, 0.03, 0.10))
    assert row["to_last_step_s"] == pytest.approx(0.05)
    assert row["made_ms"] == pytest.approx(20.0)  # median of 10 and 30 ms
    every = fd.phase_seconds(record, skip_first=False)
    assert every["head"] == pytest.approx([0.5, 0.02]) and every["tail"] == pytest.approx([0.1, 0.10])


@pytest.mark.parametrize("ratio, words", [(1.2, "faster"), (0.8, "slower"), (1.05, "about as fast"), (0.95, "about as fast")])
def test_speed_words(ratio, words):
    assert fd.speed_words(ratio) == words


@pytest.mark.parametrize("busy, words", [(0.01, "1% of the CPUs -> idle enough"), (0.5, "50% of the CPUs -> NOT idle"),
                                         (None, "cannot be read here")])
def test_idle_check_words_what_other_processes_used(monkeypatch, busy, words):
    asked = []
    monkeypatch.setattr(fd.feeders, "cpu_busy_elsewhere", lambda seconds, since=None: asked.append((seconds, since)) or busy)
    sentence = fd.idle_check("during the runs", since=(1, 2, 3))
    assert sentence.startswith("during the runs") and words in sentence
    assert asked == [(1.0, (1, 2, 3))]


def test_idle_check_on_this_machine():
    from fastlstm_lib.timing import cpu_snapshot

    sentence = fd.idle_check("since the start", since=cpu_snapshot())
    assert sentence.startswith("since the start") and ("of the CPUs ->" in sentence or "cannot be read" in sentence)


def test_step_cost_line_recovers_a_line():
    rows = [{"batch_size": b, "step_ms": 2.0 + 0.01 * b} for b in (8, 64, 512)]
    line = fd.step_cost_line(rows)
    assert line["fixed_ms"] == pytest.approx(2.0) and line["per_sample_ms"] == pytest.approx(0.01)
    assert line["break_even"] == pytest.approx(200.0)


# --------------------------------------------------------------------------- the GIL


def test_switch_interval_is_restored():
    before = sys.getswitchinterval()
    with fd.switch_interval(0.003):
        assert sys.getswitchinterval() == pytest.approx(0.003)
    assert sys.getswitchinterval() == pytest.approx(before, abs=2e-6)  # Python keeps whole microseconds


def test_threads_take_turns_reports_both_ways():
    result = fd.threads_take_turns(2000, n_threads=2)
    assert result["n_threads"] == 2 and result["serial_s"] > 0 and result["threads_s"] > 0
    assert result["speedup"] == pytest.approx(result["serial_s"] / result["threads_s"])


def test_gil_handoff_reports_the_interval():
    with fd.switch_interval(0.001):
        result = fd.gil_handoff_us(calls=3)
    assert result["switch_interval_us"] == pytest.approx(1000.0)
    assert result["alone"] > 0 and result["beside_python_work"] > 0


@pytest.mark.skipif(tensorflow_reason() is not None, reason="tf.data needs the TensorFlow backend")
def test_fit_on_a_tf_data_pipeline_keeps_a_consistent_timeline():
    timeline = fd.Timeline()
    dataset = small_dataset(python_loops=10, timeline=timeline)
    record = fd.feed_and_train(fd.tf_data_pipeline(dataset), tiny_model(), epochs=2, timeline=timeline)
    assert fd.timeline_problems(record, SMALL["n_batches"]) == []


@pytest.mark.skipif(tensorflow_reason() is not None, reason="tf.data needs the TensorFlow backend")
def test_tf_data_pipeline_gives_the_same_batches():
    dataset = small_dataset()
    batches = list(fd.tf_data_pipeline(dataset).as_numpy_iterator())
    assert len(batches) == SMALL["n_batches"]
    for index, (x, y) in enumerate(batches):
        assert np.array_equal(x, dataset[index][0]) and np.array_equal(y, dataset[index][1])


# --------------------------------------------------------------------------- threads vs processes, isolated


def test_every_feeder_completes_in_a_child_with_a_time_limit():
    # compare_feeders' ways (fit, the plain loop, processes) with both kinds, in a child process
    # started at the top of this module; threads and tf.data are checked in this process.
    results = isolated_run.result(timeout=200)
    assert [(r["kind"], r["feeder"]) for r in results] == [
        (k, f) for k, feeders in ISOLATED_RUNS.items() for f in feeders]
    for result in results:
        assert len(result["epoch_s"]) == 1 and result["switch_interval_s"] == fd.PYTHON_SWITCH_INTERVAL_S
        assert fd.timeline_problems(result["timeline"], 4) == []
    for process_run in (r for r in results if r["feeder"] == "2 processes"):
        pids = {worker.split("/")[0] for _, worker, _, _ in process_run["timeline"]["produced"]}
        assert len(pids) >= 2  # batches made in worker processes (and the shape probe in the parent)


def test_run_isolated_kills_a_child_past_its_time_limit():
    with pytest.raises(fd.IsolatedRunTimeout, match="did not finish within 0.2 s"):
        fd.run_isolated("tf_thread_probe", {}, timeout_s=0.2)


def test_run_isolated_reports_a_failing_child():
    with pytest.raises(RuntimeError, match="failed in the child process"):
        fd.run_isolated("compare_feeders", {"feeders": ["7 llamas"]}, timeout_s=120)


# --------------------------------------------------------------------------- batch size, small calls, threads


def test_training_throughput_rows():
    rows = fd.training_throughput([4, 16], n_samples=32, max_steps=4, n_features=4, hidden=8, repeats=1)
    assert [r["batch_size"] for r in rows] == [4, 16]
    assert [r["samples"] for r in rows] == [16, 32]
    assert all(r["samples_per_s"] > 0 and r["min"] <= r["samples_per_s"] <= r["max"] for r in rows)


def test_small_call_latency_callers_agree():
    result = fd.small_call_latency(n_features=4, hidden=8, repeats={"default": 2, "model.predict(x)": 1})
    assert result["outputs_agree"] is True and result["tf32"] is False
    assert {"model.predict(x)", "model.predict_on_batch(x)", "model(x)"} <= set(result["callers_ms"])
    assert len(result["callers_ms"]["model.predict(x)"]) == 1 and len(result["callers_ms"]["model(x)"]) == 2


def test_measure_devices_records_each_device(monkeypatch):
    # The two measurements are tested above; here only what measure_devices makes of them.
    from fastlstm_lib.topics.feeding import devices

    calls = []
    monkeypatch.setattr(devices, "training_throughput", lambda sizes, device, **kw: calls.append(device) or [{"b": sizes}])
    monkeypatch.setattr(devices, "small_call_latency", lambda device, **kw: {"device": device, **kw})
    monkeypatch.setattr(devices, "gpu_device", lambda: ("gpu:0", "Some GPU"))
    results = devices.measure_devices([4, 8], small_calls={"hidden": 8})
    assert calls == ["cpu", "gpu:0"]
    assert [r["device"] for r in results] == ["cpu", "gpu:0"]
    assert results[0]["device_name"].startswith("CPU: ") and results[1]["device_name"] == "Some GPU"
    assert results[1]["throughput"] == [{"b": [4, 8]}] and results[1]["small_calls"] == {"device": "gpu:0", "hidden": 8}
    assert all(r["measurement"] == "feeding" and r["environment"]["backend"] == keras.backend.backend() for r in results)


def test_committed_device_runs_reads_only_feeding_results(tmp_path, monkeypatch):
    from fastlstm_lib.topics.feeding import devices
    from fastlstm_lib.results import save_results

    save_results([{"measurement": "feeding", "device": "gpu:0"}], tmp_path / "feeding-x.json")
    save_results([{"step": "baseline"}], tmp_path / "ladder-x.json")
    monkeypatch.setattr(devices, "RESULTS", tmp_path)
    assert devices.committed_device_runs() == [{"measurement": "feeding", "device": "gpu:0", "file": "feeding-x.json"}]


@pytest.mark.skipif(tensorflow_reason() is not None, reason="times TensorFlow's matmul")
def test_time_matmuls_in_this_process():
    rows = fd.time_matmuls([8, 16], repeats=2)
    assert [r["size"] for r in rows] == [8, 16]
    assert all(r["min_ms"] <= r["ms"] <= r["max_ms"] and r["cores_busy"] > 0 for r in rows)


def test_keras_docstring_on_predict_is_quoted():
    text = fd.docstring_paragraph(keras.Model.predict, "For small numbers of inputs")
    assert "directly use `__call__()` for faster execution" in text and "\n" not in text
    with pytest.raises(ValueError, match="is in no paragraph"):
        fd.docstring_paragraph(keras.Model.predict, "no such words anywhere")


def test_cpu_busy_elsewhere_leaves_out_this_process():
    from fastlstm_lib.timing import cpu_busy_elsewhere, cpu_snapshot

    start = cpu_snapshot()
    if start is None:
        pytest.skip("no /proc here")
    fd.python_work(300_000)  # our own work is not "elsewhere"
    for busy in (cpu_busy_elsewhere(since=start), cpu_busy_elsewhere(0.05)):
        assert 0.0 <= busy <= 1.0


def test_thread_count_and_names():
    count, names = fd.thread_count(), fd.thread_names()
    assert count >= 1
    assert all(isinstance(n, str) and k >= 1 for n, k in names.items())


# --------------------------------------------------------------------------- profiling


def test_profiler_finds_the_slow_key_function():
    rng = np.random.default_rng(0)
    states = rng.standard_normal((3000, 16), dtype=np.float32)
    targets = rng.standard_normal(3000).astype(np.float32)
    text_table = fd.lookup_table(states, targets, fd.key_as_text)
    bytes_table = fd.lookup_table(states, targets, fd.key_as_bytes)
    slow, stats = fd.profile_call(lambda: list(fd.lookup_batches(states, text_table, fd.key_as_text)))
    fast = list(fd.lookup_batches(states, bytes_table, fd.key_as_bytes))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(slow, fast)) and len(slow) == len(fast) == 47
    top = fd.top_functions(stats, 3)
    assert top[0]["name"] == "key_as_text" and top[0]["calls"] == 3000
    assert fd.function_share(stats, "key_as_text") > 0.5
    assert "key_as_text" in fd.format_profile(top)


# --------------------------------------------------------------------------- spawn


def test_spawned_process_runs_an_importable_function_but_not_one_it_cannot_import():
    start = time.perf_counter()
    assert fd.call_in_spawned_process(fd.python_work, 10, timeout_s=60) == {"outcome": "returned", "detail": "19"}
    answered_s = time.perf_counter() - start
    # Like a function defined in a notebook: the parent can name it, the spawned child cannot
    # import it. It gets 1.5 times what the importable one needed (at least 0.5 s): so its
    # silence is not slowness.
    module = types.ModuleType("fastlstm_test_only_in_parent")
    exec("def double(x):\n    return 2 * x", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        outcome = fd.call_in_spawned_process(module.double, 1, timeout_s=max(0.5, 1.5 * answered_s))
    finally:
        del sys.modules[module.__name__]
    assert outcome["outcome"] == "timed out"


def test_spawned_process_reports_an_unpicklable_function():
    outcome = fd.call_in_spawned_process(lambda x: x, 1, timeout_s=10)
    assert outcome["outcome"] == "raised" and "pickle" in outcome["detail"].lower()


def test_run_script_prints_plain_tracebacks_even_when_colour_is_forced(monkeypatch):
    # ipykernel sets FORCE_COLOR; on Python 3.13 a child would then colour its traceback (notebook 30).
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("PYTHON_COLORS", "1")
    run = fd.run_script("raise RuntimeError('plain')")
    assert run["returncode"] == 1
    assert "\x1b[" not in run["stderr"]
    assert run["stderr"].splitlines()[-1] == "RuntimeError: plain"


def test_run_script_with_and_without_a_time_limit():
    assert fd.run_script("print(6 * 7)")["stdout"].strip() == "42"
    slow = fd.run_script("import time\ntime.sleep(30)", timeout_s=0.2)
    assert slow["timed_out"] is True


def test_quote_source():
    text = fd.quote_source(fd.python_work, "total = 0", "return total")
    assert text.splitlines()[0].startswith("# dataset.py, line ")
    assert text.splitlines()[1] == "total = 0" and text.splitlines()[-1] == "return total"
    with pytest.raises(ValueError, match="is not in the source"):
        fd.quote_source(fd.python_work, "no such line")


# --------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: fd.make_batch(-1), ValueError, "index must be an int >= 0, got -1"),
        (lambda: fd.make_batch(1.5), TypeError, "index must be an int >= 0, got float 1.5"),
        (lambda: fd.make_batch(0, batch_size=0), ValueError, "batch_size must be an int >= 1, got 0"),
        (lambda: fd.SlowBatches(0), ValueError, "n_batches must be an int >= 1, got 0"),
        (lambda: fd.SlowBatches(2, wait_ms=-1), ValueError, "wait_ms must be a finite number >= 0"),
        (lambda: fd.SlowBatches(2, wait_ms="5"), TypeError, "wait_ms must be a number"),
        (lambda: fd.SlowBatches(2, wait_ms=math.nan), ValueError, "wait_ms must be a finite number >= 0, got nan"),
        (lambda: fd.SlowBatches(2, wait_ms=math.inf), ValueError, "wait_ms must be a finite number >= 0, got inf"),
        (lambda: fd.slow_dataset(2, batch_ms=math.nan), ValueError, "batch_ms must be a finite number"),
        (lambda: fd.slow_dataset(2, kind="compute", loops_per_ms=math.inf), ValueError, "loops_per_ms must be a finite"),
        (lambda: fd.SlowBatches(2, workers=0), ValueError, "workers must be an int >= 1, got 0"),
        (lambda: fd.SlowBatches(2, use_multiprocessing="yes"), TypeError, "use_multiprocessing must be True or False"),
        (lambda: fd.SlowBatches(2, timeline=[]), TypeError, "timeline must be a Timeline or None, got list"),
        (lambda: fd.slow_dataset(2, kind="sleepy"), ValueError, "kind must be one of"),
        (lambda: fd.slow_dataset(2, feeder="tf.data"), ValueError, "not a PyDataset feeder"),
        (lambda: fd.parse_feeder("four threads"), ValueError, "feeder must be 'N worker"),
        (lambda: fd.slow_dataset(2, feeder="plain loop"), ValueError, "not a PyDataset feeder"),
        (lambda: fd.parse_feeder("2 workers"), ValueError, "say 'N threads' or 'N processes'"),
        (lambda: fd.parse_feeder(4), TypeError, "feeder must be a string"),
        (lambda: fd.compare_feeders("4 threads"), TypeError, "lists of strings"),
        (lambda: fd.compare_feeders(["4 threads"], kinds=["sleep"]), ValueError, "kinds must be taken from"),
        (lambda: fd.compare_feeders({"sleep": ["4 threads"]}), ValueError, "kinds must be taken from"),
        (lambda: fd.compare_feeders({"wait": ["7 llamas"]}), ValueError, "feeder must be 'N worker"),
        (lambda: fd.compare_feeders([]), ValueError, "no \\(kind, feeder\\) to run"),
        (lambda: fd.compare_feeders(["1 worker"], batch_ms=math.nan), ValueError, "batch_ms must be a finite number"),
        (lambda: fd.compare_feeders(["1 worker"], switch_interval_s=0), ValueError, "switch_interval_s must be"),
        (lambda: fd.switch_interval(math.inf).__enter__(), ValueError, "seconds must be a finite number"),
        (lambda: fd.threads_take_turns(0), ValueError, "loops must be an int >= 1"),
        (lambda: fd.speed_words(math.nan), ValueError, "ratio must be a finite number"),
        (lambda: fd.idle_check(""), ValueError, "when must be a non-empty str"),
        (lambda: fd.idle_check(1), TypeError, "when must be a non-empty str"),
        (lambda: fd.idle_check("now", seconds=0), ValueError, "seconds must be a finite number of seconds > 0"),
        (lambda: fd.idle_check("now", since=[1, 2, 3]), TypeError, "since must be None or a cpu_snapshot"),
        (lambda: fd.step_cost_line([{"batch_size": 8, "step_ms": 1.0}]), ValueError, "at least two"),
        (lambda: fd.run_isolated("os.system"), ValueError, "function must be one of"),
        (lambda: fd.run_isolated("compare_feeders", [1]), TypeError, "kwargs must be a dict"),
        (lambda: fd.run_isolated("compare_feeders", timeout_s=0), ValueError, "timeout_s must be a finite number of seconds > 0"),
        (lambda: fd.run_isolated("compare_feeders", timeout_s=math.nan), ValueError, "timeout_s must be a finite number"),
        (lambda: fd.run_isolated("compare_feeders", env=["A=1"]), TypeError, "env must be a dict"),
        (lambda: fd.training_throughput([]), ValueError, "at least one"),
        (lambda: fd.training_throughput("8"), TypeError, "batch_sizes must be a list of ints"),
        (lambda: fd.training_throughput([64], n_samples=32), ValueError, r"batch sizes \[64\] are larger than n_samples=32"),
        (lambda: fd.training_throughput([8], device=0), TypeError, "device must be a string"),
        (lambda: fd.small_call_latency(repeats={"model(x)": 3}), TypeError, "'default' count"),
        (lambda: fd.lookup_table(np.zeros(3), np.zeros(3), fd.key_as_text), TypeError, "states must be a 2-D NumPy array"),
        (lambda: fd.lookup_table(np.zeros((3, 2)), np.zeros(2), fd.key_as_text), ValueError, "one value per state"),
        (lambda: fd.lookup_table(np.zeros((3, 2)), np.zeros(3), "str"), TypeError, "key_of must be a function"),
        (lambda: fd.profile_call(42), TypeError, "function must be callable"),
        (lambda: fd.top_functions({}), TypeError, "stats must be a pstats.Stats"),
        (lambda: fd.call_in_spawned_process(fd.python_work, 1, timeout_s=-1), ValueError, "timeout_s"),
        (lambda: fd.call_in_spawned_process(fd.python_work, 1, timeout_s=math.inf), ValueError, "timeout_s must be a finite"),
        (lambda: fd.run_script("print(1)", timeout_s=math.nan), ValueError, "timeout_s must be a finite"),
        (lambda: fd.run_script(b"print(1)"), TypeError, "source must be the script's text"),
        (lambda: fd.timeline_problems({"produced": [], "steps": [], "epochs": []}, 0), ValueError, "n_batches"),
        (lambda: fd.epoch_phases("record"), TypeError, "record must be a dict from Timeline.to_dict"),
        (lambda: fd.epoch_phases({"epochs": []}), ValueError, r"lacks \['steps'\]"),
        (lambda: fd.epoch_phases({"epochs": 3, "steps": []}), TypeError, r"record\['epochs'\] must be a list"),
        (lambda: fd.epoch_phases({"epochs": [], "steps": []}, skip_first="yes"), TypeError, "skip_first must be True or False"),
        (lambda: fd.epoch_seconds([]), TypeError, "record must be a dict"),
        (lambda: fd.summarize_feeders("results"), TypeError, "results must be a list"),
        (lambda: fd.summarize_feeders([3]), TypeError, r"results\[0\] must be a dict"),
        (lambda: fd.summarize_feeders([{"kind": "wait", "feeder": "1 worker"}]), ValueError, "lacks"),
        (lambda: fd.summarize_feeders([{"kind": "wait", "feeder": "1 worker", "n_batches": 2, "batch_ms": 1.0, "epoch_s": []}]),
         ValueError, "non-empty list"),
        (lambda: fd.feed_and_train(small_dataset(), "model"), TypeError, "model must be a keras.Model"),
        (lambda: fd.feed_and_train([1, 2, 3], tiny_model()), TypeError, "data must be a keras.utils.PyDataset"),
        (lambda: fd.feed_and_train(small_dataset(), keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])),
         ValueError, "must be compiled"),
        (lambda: fd.feed_and_train(small_dataset(), tiny_model(), epochs=0), ValueError, "epochs must be an int >= 1"),
        (lambda: fd.single_sample_callers(42), TypeError, "model must be a keras.Model"),
        (lambda: fd.train_in_a_loop(small_dataset(), "model"), TypeError, "model must be a keras.Model"),
        (lambda: fd.train_in_a_loop([1, 2], tiny_model()), TypeError, "dataset must be a keras.utils.PyDataset"),
        (lambda: fd.train_step_ms(tiny_model(), [1, 2]), TypeError, "batch must be a tuple"),
        (lambda: fd.production_ms({"produced": []}), ValueError, r"lacks \['epochs'\]"),
        (lambda: fd.measure_devices([8], small_calls=[1]), TypeError, "small_calls must be a dict"),
        (lambda: fd.docstring_paragraph(fd.python_work, ""), TypeError, "containing must be a non-empty string"),
    ],
)
def test_bad_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_top_functions_unknown_function():
    _, stats = fd.profile_call(fd.python_work, 10)
    with pytest.raises(ValueError, match="no function named 'nothing'"):
        fd.function_share(stats, "nothing")
