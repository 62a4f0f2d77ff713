"""fastlstm_lib.feeding: the slow dataset, the timeline, feeders, isolation, profiling, spawn.

No assertion here is about speed: timings only have to exist and be consistent.
"""

import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

import fastlstm_lib.feeding as fd

keras = pytest.importorskip("keras")

SMALL = dict(n_batches=5, batch_size=8, n_features=4)


def small_dataset(**options):
    return fd.SlowBatches(SMALL["n_batches"], batch_size=SMALL["batch_size"], n_features=SMALL["n_features"], **options)


# --------------------------------------------------------------------------- import cost


def test_importing_feeding_does_not_import_keras():
    code = "import sys, fastlstm_lib, fastlstm_lib.feeding; print(sorted({'keras', 'tensorflow', 'matplotlib', 'tqdm'} & set(sys.modules)))"
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
    assert type(copy).__module__ == "fastlstm_lib.feeding" and type(copy).__qualname__ == "SlowBatches"
    assert np.array_equal(copy[1][0], fd.make_batch(1, SMALL["batch_size"], SMALL["n_features"], seed=5)[0])


def test_slow_dataset_builds_each_kind_and_feeder():
    waiting = fd.slow_dataset(3, kind="wait", batch_ms=1.5, feeder="2 threads")
    assert (waiting.wait_ms, waiting.python_loops, waiting.workers, waiting.use_multiprocessing) == (1.5, 0, 2, False)
    computing = fd.slow_dataset(3, kind="compute", batch_ms=2, loops_per_ms=100, feeder="4 processes")
    assert (computing.wait_ms, computing.python_loops, computing.workers, computing.use_multiprocessing) == (0, 200, 4, True)


@pytest.mark.parametrize(
    "text, expected",
    [("1 worker", (1, False)), ("3 threads", (3, False)), ("1 thread", (1, False)), ("2 processes", (2, True)),
     ("tf.data", (None, False))],
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
    assert set(phases) == {"head", "steps", "tail"} and all(v >= 0 for v in phases.values())


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


def test_enqueue_all_drains_what_worker_processes_send():
    script = (
        "import fastlstm_lib.feeding as fd\n"
        "timeline = fd.Timeline()\n"
        "dataset = fd.SlowBatches(2500, batch_size=1, n_features=1, timeline=timeline, workers=2, use_multiprocessing=True)\n"
        "batches = fd.enqueue_all(dataset)\n"
        "produced = timeline.to_dict()['produced']\n"
        "print('RESULT', len(batches), len(produced), len({worker.split('/')[0] for _, worker, _, _ in produced}))\n"
    )
    run = fd.run_script(script, timeout_s=240)
    assert not run["timed_out"], "the worker processes blocked on a full pipe"
    result = [line for line in run["stdout"].splitlines() if line.startswith("RESULT")]
    assert result, run["stderr"][-2000:]
    n_batches, n_produced, n_processes = map(int, result[0].split()[1:])
    assert n_batches == n_produced == 2500 and n_processes >= 2


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
    import matplotlib

    matplotlib.use("Agg")
    record = {
        "produced": [[0, "a", 0.0, 1.0], [1, "b", 0.5, 1.5]],
        "steps": [[0, 0, 1.0, 2.0], [0, 1, 2.0, 3.0]],
        "epochs": [[0, 0.0, 3.5]],
    }
    ax = fd.plot_timeline(record, title="t")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 1", "worker 2", "fit: train steps"]
    with pytest.raises(ValueError, match="no epoch"):
        fd.plot_timeline({"produced": [], "steps": [], "epochs": []})


def test_summarize_feeders_speedup():
    results = [
        {"kind": "wait", "feeder": "1 worker", "n_batches": 4, "batch_ms": 10.0, "epoch_s": [0.4, 0.4]},
        {"kind": "wait", "feeder": "2 threads", "n_batches": 4, "batch_ms": 10.0, "epoch_s": [0.2, 0.2]},
    ]
    rows = fd.summarize_feeders(results)
    assert [r["speedup"] for r in rows] == [1.0, 2.0]
    assert rows[0]["serial_s"] == pytest.approx(0.04)


@pytest.mark.skipif(fd.tensorflow_reason() is not None, reason="tf.data needs the TensorFlow backend")
def test_tf_data_pipeline_gives_the_same_batches():
    dataset = small_dataset()
    for parallel in (True, False):
        batches = list(fd.tf_data_pipeline(dataset, parallel=parallel).as_numpy_iterator())
        assert len(batches) == SMALL["n_batches"]
        for index, (x, y) in enumerate(batches):
            assert np.array_equal(x, dataset[index][0]) and np.array_equal(y, dataset[index][1])


# --------------------------------------------------------------------------- threads vs processes, isolated


def test_threads_and_processes_complete_in_a_child_with_a_time_limit():
    results = fd.run_isolated(
        "compare_feeders",
        dict(feeders=["1 worker", "2 threads", "2 processes"], kinds=["wait", "compute"], n_batches=4,
             batch_ms=2.0, loops_per_ms=200.0, epochs=2, batch_size=8, n_features=4),
        timeout_s=150,
    )
    assert [(r["kind"], r["feeder"]) for r in results] == [
        (k, f) for k in ("wait", "compute") for f in ("1 worker", "2 threads", "2 processes")]
    for result in results:
        assert len(result["epoch_s"]) == 1
        assert fd.timeline_problems(result["timeline"], 4) == []
    processes = next(r for r in results if r["feeder"] == "2 processes")
    pids = {worker.split("/")[0] for _, worker, _, _ in processes["timeline"]["produced"]}
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
    assert {"model.predict(x)", "model.predict_on_batch(x)", "model(x)"} <= set(result["callers"])
    assert len(result["callers"]["model.predict(x)"]) == 1 and len(result["callers"]["model(x)"]) == 2


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


def test_spawned_process_runs_an_importable_function():
    assert fd.call_in_spawned_process(fd.python_work, 10, timeout_s=60) == {"outcome": "returned", "detail": "19"}


def test_spawned_process_cannot_find_a_function_it_cannot_import():
    # Like a function defined in a notebook: the parent can name it, the spawned child cannot import it.
    module = types.ModuleType("fastlstm_test_only_in_parent")
    exec("def double(x):\n    return 2 * x", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        outcome = fd.call_in_spawned_process(module.double, 1, timeout_s=3)
    finally:
        del sys.modules[module.__name__]
    assert outcome["outcome"] == "timed out"


def test_spawned_process_reports_an_unpicklable_function():
    outcome = fd.call_in_spawned_process(lambda x: x, 1, timeout_s=10)
    assert outcome["outcome"] == "raised" and "pickle" in outcome["detail"].lower()


def test_run_script_with_and_without_a_time_limit():
    assert fd.run_script("print(6 * 7)")["stdout"].strip() == "42"
    slow = fd.run_script("import time\ntime.sleep(30)", timeout_s=0.5)
    assert slow["timed_out"] is True


def test_quote_source():
    text = fd.quote_source(fd.python_work, "total = 0", "return total")
    assert text.splitlines()[0].startswith("# feeding.py, line ")
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
        (lambda: fd.SlowBatches(2, workers=0), ValueError, "workers must be an int >= 1, got 0"),
        (lambda: fd.SlowBatches(2, use_multiprocessing="yes"), TypeError, "use_multiprocessing must be True or False"),
        (lambda: fd.SlowBatches(2, timeline=[]), TypeError, "timeline must be a Timeline or None, got list"),
        (lambda: fd.slow_dataset(2, kind="sleepy"), ValueError, "kind must be one of"),
        (lambda: fd.slow_dataset(2, feeder="tf.data"), ValueError, "not a PyDataset feeder"),
        (lambda: fd.parse_feeder("four threads"), ValueError, "feeder must be 'N worker"),
        (lambda: fd.parse_feeder("2 workers"), ValueError, "say 'N threads' or 'N processes'"),
        (lambda: fd.parse_feeder(4), TypeError, "feeder must be a string"),
        (lambda: fd.compare_feeders("4 threads"), TypeError, "lists of strings"),
        (lambda: fd.compare_feeders(["4 threads"], kinds=["sleep"]), ValueError, "kinds must be taken from"),
        (lambda: fd.run_isolated("os.system"), ValueError, "function must be one of"),
        (lambda: fd.run_isolated("compare_feeders", [1]), TypeError, "kwargs must be a dict"),
        (lambda: fd.run_isolated("compare_feeders", timeout_s=0), ValueError, "timeout_s must be a finite number"),
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
        (lambda: fd.feed_and_train([1, 2, 3], fd.small_model(4, 8)), TypeError, "data must be a keras.utils.PyDataset"),
        (lambda: fd.feed_and_train(small_dataset(), keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])),
         ValueError, "must be compiled"),
        (lambda: fd.feed_and_train(small_dataset(), fd.small_model(4, 8), epochs=0), ValueError, "epochs must be an int >= 1"),
        (lambda: fd.single_sample_callers(42), TypeError, "model must be a keras.Model"),
    ],
)
def test_bad_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_top_functions_bad_sort_and_unknown_function():
    _, stats = fd.profile_call(fd.python_work, 10)
    with pytest.raises(ValueError, match="sort must be 'tottime' or 'cumtime'"):
        fd.top_functions(stats, sort="calls")
    with pytest.raises(ValueError, match="no function named 'nothing'"):
        fd.function_share(stats, "nothing")
