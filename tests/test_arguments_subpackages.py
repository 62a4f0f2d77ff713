"""Bad arguments to the public functions of cnn, feeding, backward and keras_layer: refused up
front with a TypeError / ValueError naming the argument, before any real work."""

from __future__ import annotations

import pstats
import cProfile

import numpy as np
import pytest

from fastlstm_lib.topics import cnn, feeding
from fastlstm_lib.backward import benchmark, layer_api
from fastlstm_lib.topics.cnn import measure
from fastlstm_lib.config import LSTMConfig


def _stats():
    profiler = cProfile.Profile()
    profiler.runcall(sum, [1, 2])
    return pstats.Stats(profiler)


_RECORD = {"produced": [], "steps": [], "epochs": [[0, 0.0, 1.0]]}
_ROW = {"label": "x", "precision": "float32", "jit_compile": False, "replicas": 1, "winner": None, "clear": False,
        "error": None}

CASES = [
    # cnn
    (lambda: cnn.find_cached_cifar10(42), TypeError, r"cache_dir must be a path"),
    (lambda: cnn.load_images(4, 4, cache_dir=42), TypeError, r"cache_dir must be a path"),
    (lambda: cnn.load_images(4, 4, seed=-1), ValueError, r"seed must be an int >= 0"),
    (lambda: cnn.model_label("cnn10", image_size=1.5), TypeError, r"image_size must be an int >= 1, got float 1.5"),
    (lambda: cnn.model_label("cnn10", widht=8), TypeError, r"no option 'widht'"),
    (lambda: cnn.model_label("cnn10", width=0), ValueError, r"width must be an int >= 1"),
    (lambda: cnn.chart_percent("channels_first", float("nan")), ValueError, r"percent_faster must be a finite"),
    (lambda: cnn.chart_percent("channels_first", None), TypeError, r"percent_faster must be a number"),
    (lambda: cnn.outcome(None), TypeError, r"row must be a dict"),
    (lambda: cnn.verdict({}), ValueError, r"row lacks"),
    (lambda: cnn.short_error("boom"), TypeError, r"error must be an exception"),
    (lambda: cnn.epoch_chart(None), TypeError, r"results must be a list"),
    (lambda: cnn.variant_plan("cnn10"), TypeError, r"models must be a list of strs"),
    (lambda: cnn.variant_plan([]), ValueError, r"models must hold at least one"),
    (lambda: cnn.variant_plan(["cnn10"], ["float64"]), ValueError, r"precisions\[0\] must be one of"),
    (lambda: cnn.variant_plan(["cnn10"], xla=(0,), backend="x"), TypeError, r"xla\[0\] must be True or False"),
    (lambda: cnn.variant_plan(["cnn10"], xla=None), TypeError, r"xla must be"),
    (lambda: cnn.variant_plan(["cnn10"], backend=42), TypeError, r"backend must be a non-empty str"),
    (lambda: cnn.run_plan(None, {}, options_for={}, batch_size=8, rounds=1), TypeError, r"plan must be"),
    (lambda: cnn.run_plan([("cnn10", "float32", False)], {}, options_for={}, batch_size=8, rounds=1), ValueError,
     r"data_for has no entry for model 'cnn10'"),
    (lambda: cnn.run_plan([("cnn10", "float32", False)], {"cnn10": 1}, options_for={"cnn10": {}}, batch_size=True,
                          rounds=1), TypeError, r"batch_size must be an int >= 1, got bool True"),
    (lambda: cnn.committed_layout_results(42), TypeError, r"directory must be a path"),
    (lambda: cnn.time_layouts("cnn10", "data"), TypeError, r"data must be an ImageData"),
    # feeding
    (lambda: feeding.python_work(None), TypeError, r"loops must be an int >= 0, got NoneType"),
    (lambda: feeding.python_work(-1), ValueError, r"loops must be an int >= 0, got -1"),
    (lambda: feeding.slow_dataset(0), ValueError, r"n_batches must be an int >= 1, got 0"),
    (lambda: feeding.slow_dataset(4, kind="compute", loops_per_ms=float("inf")), ValueError, r"loops_per_ms must be"),
    (lambda: feeding.compare_feeders(None), TypeError, r"feeders and kinds must be lists"),
    (lambda: feeding.compare_feeders(kinds=None), TypeError, r"feeders and kinds must be lists"),
    (lambda: feeding.compare_feeders(progress=1), TypeError, r"progress must be True or False"),
    (lambda: feeding.compare_feeders(loops_per_ms=-1), ValueError, r"loops_per_ms must be"),
    (lambda: feeding.enqueue_all([1, 2]), TypeError, r"dataset must be a keras.utils.PyDataset"),
    (lambda: feeding.run_isolated(None), TypeError, r"function must be a non-empty str"),
    (lambda: feeding.run_isolated(["x"]), TypeError, r"function must be a non-empty str"),
    (lambda: feeding.run_isolated("compare_feeders", {"x": object()}), TypeError, r"kwargs must be JSON-able"),
    (lambda: next(feeding.lookup_batches(np.zeros((2, 2)), None, str)), TypeError, r"table must be a dict"),
    (lambda: next(feeding.lookup_batches(np.zeros((2, 2)), {}, 42)), TypeError, r"key_of must be a function"),
    (lambda: next(feeding.lookup_batches(np.zeros((2, 2)), {}, str, 0)), ValueError, r"batch_size must be an int >= 1"),
    (lambda: feeding.format_profile(None), TypeError, r"rows must be a list"),
    (lambda: feeding.format_profile([{}]), ValueError, r"rows\[0\] lacks .*: expected a dict from top_functions"),
    (lambda: feeding.small_call_latency(n_features=0), ValueError, r"n_features must be an int >= 1"),
    (lambda: feeding.small_call_latency(repeats={"default": 1.5}), TypeError, r"repeats\['default'\] must be an int"),
    (lambda: feeding.small_call_latency(seed=None), TypeError, r"seed must be an int >= 0"),
    (lambda: feeding.measure_devices([]), ValueError, r"batch_sizes must hold at least one"),
    (lambda: feeding.measure_devices(repeats=0), ValueError, r"repeats must be an int >= 1"),
    (lambda: feeding.plot_timeline(_RECORD, xmax_ms=float("nan")), ValueError, r"xmax_ms must be a finite"),
    (lambda: feeding.plot_timeline(_RECORD, title=42), TypeError, r"title must be a str or None"),
    # backward
    (lambda: benchmark.bench_weight_gradients(None), TypeError, r"cfg must be an LSTMConfig"),
    (lambda: benchmark.bench_weight_gradients(LSTMConfig.article(), repeats=0), ValueError, r"repeats must be an int"),
    (lambda: benchmark.bench_backward({}), TypeError, r"cfg must be an LSTMConfig"),
    (lambda: benchmark.bench_backward(steps="bwd_wavefront"), TypeError, r"steps must be a list of strs"),
    (lambda: benchmark.bench_backward(steps=["nope"]), ValueError, r"steps\[0\] must be one of"),
    (lambda: benchmark.bench_backward(keras="yes"), TypeError, r"keras must be True or False"),
    (lambda: benchmark.bench_backward(warmup=-1), ValueError, r"warmup must be an int >= 0"),
    (lambda: benchmark.bench_backward(each=5), TypeError, r"each must be a function each\(label, call\), got int"),
    (lambda: layer_api.forward(np.zeros((1, 2, 2), np.float32), None, step=42), TypeError, r"step must be a non-empty str"),
    (lambda: layer_api.forward(np.zeros((1, 2, 2), np.float32), None, step="nope"), ValueError, r"step must be one of"),
]


@pytest.mark.parametrize("call, error, message", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_argument_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_backward_saved_must_be_the_forward_triple():
    from fastlstm_lib.params import LayerParams

    H, I = 2, 3
    layer = LayerParams(np.zeros((I, 4 * H), np.float32), np.zeros((H, 4 * H), np.float32), np.zeros(4 * H, np.float32))
    x, dy = np.zeros((1, 2, I), np.float32), np.zeros((1, 2, H), np.float32)
    with pytest.raises(TypeError, match=r"saved must be the Saved"):
        layer_api.backward(x, layer, None, dy)
    with pytest.raises(TypeError, match=r"saved must be the Saved"):
        layer_api.backward(x, layer, (np.zeros((2, 1, H)),), dy)


def test_run_plan_refuses_before_any_training(monkeypatch):
    called = []
    monkeypatch.setattr(measure, "time_layouts", lambda *a, **k: called.append(1) or [])
    monkeypatch.setattr(measure, "environment", lambda: called.append("env") or {})
    with pytest.raises(TypeError, match=r"rounds must be an int >= 1, got float 1.5"):
        measure.run_plan([("cnn10", "float32", False)], {"cnn10": None}, options_for={"cnn10": {}}, batch_size=8,
                         rounds=1.5)
    assert not called


def test_slow_dataset_refuses_before_calibrating(monkeypatch):
    from fastlstm_lib.topics.feeding import dataset

    monkeypatch.setattr(dataset, "calibrate_loops_per_ms", lambda **k: pytest.fail("calibrated"))
    with pytest.raises(TypeError, match=r"n_batches must be an int >= 1, got str 'x'"):
        dataset.slow_dataset("x", kind="compute")


def test_compare_feeders_refuses_before_training(monkeypatch):
    from fastlstm_lib.topics.feeding import feeders

    monkeypatch.setattr(feeders, "calibrate_loops_per_ms", lambda **k: pytest.fail("calibrated"))
    monkeypatch.setattr(feeders, "small_model", lambda *a, **k: pytest.fail("built a model"))
    with pytest.raises(ValueError, match=r"epochs must be an int >= 1, got 0"):
        feeders.compare_feeders(epochs=0)


def test_time_layouts_refuses_unknown_option_before_building(monkeypatch):
    from fastlstm_lib.topics.cnn import training

    data = cnn.ImageData(*cnn.synthetic_images(4, image_size=8), *cnn.synthetic_images(2, image_size=8), "synthetic", "")
    monkeypatch.setattr(training, "build", lambda *a, **k: pytest.fail("built a model"))
    with pytest.raises(TypeError, match=r"no option 'widht'"):
        training.time_layouts("cnn10", data, widht=2)
    with pytest.raises(TypeError, match=r"env must be a dict"):
        training.time_layouts("cnn10", data, env=42)
    with pytest.raises(TypeError, match=r"variant must be a str"):
        training.time_layouts("cnn10", data, variant=None)
    with pytest.raises(TypeError, match=r"strategy must be a tf.distribute strategy"):
        training.time_layouts("cnn10", data, strategy="mirrored")


def test_chart_percent_and_outcome_still_work():
    assert cnn.chart_percent("channels_last", 10.0) == -10.0
    assert "same median" in cnn.outcome(_ROW)
    assert cnn.model_label("cnn10", 32, width=64) == "10-layer CNN"


def test_python_work_zero_loops():
    assert feeding.python_work(0) == 0


def test_profiling_helpers_still_work():
    states = np.arange(6, dtype=np.float32).reshape(3, 2)
    table = feeding.lookup_table(states, np.arange(3), feeding.key_as_bytes)
    batches = list(feeding.lookup_batches(states, table, feeding.key_as_bytes, 2))
    assert [len(rows) for rows, _ in batches] == [2, 1]
    assert "own s" in feeding.format_profile(feeding.top_functions(_stats()))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"units": 4, "kernel_initializer": "nope"}, ValueError, r"kernel_initializer must be a Keras initializer"),
    ({"units": 4, "bias_initializer": None}, TypeError, r"bias_initializer must be a Keras initializer"),
    ({"units": True}, TypeError, r"units must be an int >= 1, got bool True"),
    ({"units": 4, "step": "nope"}, ValueError, r"step must be one of"),
])
def test_fastlstm_constructor_refuses(kwargs, error, message, keras_available):  # FastLSTM is a Keras layer
    from fastlstm_lib.topics.keras_layer import FastLSTM

    with pytest.raises(error, match=message):
        FastLSTM(**kwargs)


@pytest.mark.parametrize("call, error, message", [
    (lambda kl: kl.twin_lstm_models(4, 2, optimizer="nope"), ValueError, r"optimizer must name a Keras optimizer"),
    (lambda kl: kl.twin_lstm_models(4, 2, optimizer=None), TypeError, r"optimizer must be a non-empty str"),
    (lambda kl: kl.twin_lstm_models(4, 2, seed=-1), ValueError, r"seed must be an int >= 0"),
])
def test_twin_lstm_models_refuses(call, error, message, keras_available):
    from fastlstm_lib.topics import keras_layer

    with pytest.raises(error, match=message):
        call(keras_layer)
