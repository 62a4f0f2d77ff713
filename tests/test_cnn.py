"""fastlstm_lib.topics.cnn: both layouts build the same model and compute the same function; the article's
models have the article's structure; one definition of "faster" everywhere; results files round
trip; the data loader never needs the network; bad arguments say what was expected. No timing
assertions."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import fastlstm_lib.topics.cnn as cnn
from fastlstm_lib.results import RESULTS

pytest.importorskip("keras")

TINY_CNN10 = dict(image_size=8, width=2)
TINY_EXAMPLE = dict(image_size=8, width=4, dense_units=8)
TINY_WRN = dict(depth=10, width_factor=1, image_size=8)
OFFLINE = dict(download=False, cache_dir="/nonexistent-fastlstm-cache")


def layer_types(model):
    return [type(layer).__name__ for layer in model.layers]


# ---------------------------------------------------------------------------- the models


@pytest.mark.parametrize("builder, options", [(cnn.cnn10, TINY_CNN10), (cnn.keras_example_cnn, TINY_EXAMPLE),
                                              (cnn.keras_example_cnn, dict(image_size=16, blocks=3, width=4)),
                                              (cnn.wide_resnet, TINY_WRN)])
def test_both_layouts_have_equal_parameter_counts(builder, options):
    last, first = (builder(f, **options) for f in cnn.DATA_FORMATS)
    assert last.count_params() == first.count_params() > 0
    assert cnn.model_data_format(last) == "channels_last"
    assert cnn.model_data_format(first) == "channels_first"


@pytest.mark.parametrize("builder, options, told", [
    (cnn.cnn10, TINY_CNN10, ("Conv2D", "MaxPooling2D", "GlobalAveragePooling2D", "BatchNormalization")),
    (cnn.wide_resnet, TINY_WRN, ("Conv2D", "GlobalAveragePooling2D", "BatchNormalization")),
    (cnn.keras_example_cnn, TINY_EXAMPLE, ("Conv2D", "MaxPooling2D", "Flatten")),
])
def test_channels_first_model_is_told_everywhere(builder, options, told):
    keras = cnn.import_keras()
    model = builder("channels_first", **options)
    assert set(told) <= set(layer_types(model))  # so that the checks below are not vacuous
    spatial = (keras.layers.Conv2D, keras.layers.MaxPooling2D, keras.layers.GlobalAveragePooling2D)
    assert all(layer.data_format == "channels_first" for layer in model.layers if isinstance(layer, spatial))
    assert all(layer.axis in (1, [1]) for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization))
    # Flatten is told too: memory order in both layouts, whatever keras.json says (copy_weights relies on it)
    assert all(layer.data_format == "channels_last" for layer in model.layers if isinstance(layer, keras.layers.Flatten))
    assert tuple(model.input.shape[1:]) == (3, 8, 8)


def test_cnn10_is_ten_conv_bn_relu_layers_with_global_average_pooling():
    model = cnn.cnn10("channels_last")  # full size, built, not trained
    types = layer_types(model)
    convs = [layer for layer in model.layers if type(layer).__name__ == "Conv2D"]
    dense = [layer for layer in model.layers if type(layer).__name__ == "Dense"]
    assert len(convs) + len(dense) == 10  # the 10 layers with weights
    assert [c.filters for c in convs] == [64] * 3 + [128] * 3 + [256] * 3
    assert all(c.kernel_size == (3, 3) and c.padding == "same" and not c.use_bias for c in convs)
    assert [d.units for d in dense] == [cnn.NUM_CLASSES]
    for conv in convs:  # every conv is followed by BatchNormalization and ReLU
        at = model.layers.index(conv)
        assert types[at + 1:at + 3] == ["BatchNormalization", "Activation"]
        assert model.layers[at + 2].activation.__name__ == "relu"
    assert types.count("MaxPooling2D") == 2 and "Flatten" not in types and "Dropout" not in types
    assert types[-2:] == ["GlobalAveragePooling2D", "Dense"]
    assert model.count_params() == 1_926_602 and cnn.trainable_count(model) == 1_923_914  # as its docstring says


def test_wrn_28_10_has_36_5_million_parameters():
    model = cnn.wide_resnet("channels_last")  # built, not trained
    assert abs(cnn.trainable_count(model) - 36.5e6) < 0.05e6
    assert model.layers[-1].units == cnn.NUM_CLASSES
    assert layer_types(model)[-2] == "GlobalAveragePooling2D"
    kernels = [layer.kernel_size for layer in model.layers if type(layer).__name__ == "Conv2D"]
    assert kernels.count((3, 3)) == 1 + 2 * 4 * 3 and kernels.count((1, 1)) == 3  # stem, 2 per block; 3 shortcuts


def test_keras_example_structure():
    model = cnn.keras_example_cnn("channels_last")
    convs = [layer.filters for layer in model.layers if type(layer).__name__ == "Conv2D"]
    dense = [layer.units for layer in model.layers if type(layer).__name__ == "Dense"]
    assert convs == [32, 32, 64, 64] and dense == [512, 10]


def test_labels_name_stand_ins_as_such():
    assert cnn.model_label("cnn10") == "10-layer CNN" and cnn.model_label("wide_resnet") == "WRN-28-10"
    assert cnn.model_label("cnn10", 16, width=8) == "10-layer CNN (stand-in: width 8, 16x16 images)"
    assert cnn.model_label("cnn10", 16) == "10-layer CNN (stand-in: width 64, 16x16 images)"
    assert cnn.model_label("wide_resnet", 16, depth=10, width_factor=2) == "WRN-10-2 (stand-in for WRN-28-10, 16x16 images)"
    assert "not the article's" in cnn.model_label("keras_example_cnn")


def test_numpy_numbers_are_numbers():
    model = cnn.wide_resnet("channels_last", dropout=np.float32(0.3), **TINY_WRN)
    assert model.get_layer("group1_block1_dropout").rate == pytest.approx(0.3)


# ---------------------------------------------------------------------------- the same function


def test_tensorflow_runs_a_channels_first_convolution_on_any_cpu():
    # TensorFlow's own CPU Conv2D is NHWC only; its oneDNN kernels, on by default only on CPUs with
    # AVX-512 VNNI/BF16 or AMX, run NCHW too. import_keras turns them on on every CPU.
    keras = cnn.import_keras()
    if keras.backend.backend() != "tensorflow":
        pytest.skip("a TensorFlow CPU kernel question; Keras runs on " + keras.backend.backend())
    from fastlstm_lib.runtime.keras_backend import onednn_enabled

    assert onednn_enabled() is not False, "TF_ENABLE_ONEDNN_OPTS=1 should have been set before TensorFlow loaded"
    images = np.zeros((1, 3, 4, 4), np.float32)
    conv = keras.layers.Conv2D(2, 3, padding="same", data_format="channels_first")
    assert tuple(conv(images).shape) == (1, 2, 4, 4)


@pytest.mark.parametrize("model, options", [("cnn10", TINY_CNN10), ("wide_resnet", TINY_WRN), ("keras_example_cnn", TINY_EXAMPLE)])
def test_copied_weights_compute_the_same_function(model, options):
    images = cnn.synthetic_images(16, image_size=8, seed=3)[0]
    last, first = cnn.twin_models(model, **options)
    assert cnn.max_output_difference(last, first, images) <= 1e-5


def test_copy_without_permutation_computes_something_else():
    images = cnn.synthetic_images(16, image_size=8, seed=3)[0]
    last, _ = cnn.twin_models("keras_example_cnn", **TINY_EXAMPLE)
    naive = cnn.keras_example_cnn("channels_first", **TINY_EXAMPLE)
    naive.set_weights(last.get_weights())
    assert cnn.max_output_difference(last, naive, images) > 1e-4


def test_layouts_stay_equivalent_when_keras_json_says_channels_first():
    keras = cnn.import_keras()
    images = cnn.synthetic_images(8, image_size=8, seed=3)[0]
    previous = keras.config.image_data_format()
    keras.config.set_image_data_format("channels_first")  # what "image_data_format" in keras.json does
    try:
        last, first = cnn.twin_models("keras_example_cnn", **TINY_EXAMPLE)
    finally:
        keras.config.set_image_data_format(previous)
    assert {layer.data_format for layer in (last.get_layer("flatten"), first.get_layer("flatten"))} == {"channels_last"}
    assert cnn.max_output_difference(last, first, images) <= 1e-5


def _flatten_model(data_format, flatten_format):
    keras = cnn.import_keras()
    inputs = keras.Input(cnn.input_shape(data_format, 4), name="images")
    x = keras.layers.Conv2D(2, 3, padding="same", data_format=data_format, name="conv")(inputs)
    x = keras.layers.Flatten(data_format=flatten_format, name="flatten")(x)
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax", name="dense")(x))


def test_copy_weights_knows_a_flatten_that_transposes_itself():
    cnn.import_keras().utils.set_random_seed(0)
    images = cnn.synthetic_images(8, image_size=4, seed=1)[0]
    source = _flatten_model("channels_last", "channels_last")
    for flatten_format, expected in (("channels_last", ["dense"]), ("channels_first", [])):
        target = _flatten_model("channels_first", flatten_format)  # channels_first: Keras transposes to NHWC first
        assert cnn.copy_weights(source, target) == expected
        assert cnn.max_output_difference(source, target, images) <= 1e-5
    with pytest.raises(ValueError, match="memory order"):
        cnn.copy_weights(_flatten_model("channels_last", "channels_first"), _flatten_model("channels_first", "channels_last"))


def test_flatten_row_permutation_matches_the_transposed_features():
    rng = np.random.default_rng(0)
    h, w, c, units = 3, 5, 4, 7
    features = rng.standard_normal((h, w, c))
    kernel = rng.standard_normal((h * w * c, units))
    permuted = cnn.flatten_rows_to_channels_first(kernel, h, w, c)
    expected = features.reshape(-1) @ kernel
    np.testing.assert_allclose(features.transpose(2, 0, 1).reshape(-1) @ permuted, expected, rtol=1e-12)
    assert not np.allclose(features.transpose(2, 0, 1).reshape(-1) @ kernel, expected)


def test_to_layout_transposes_and_scales():
    images = cnn.synthetic_images(2, image_size=8, seed=0)[0]
    first = cnn.to_layout(images, "channels_first")
    assert first.shape == (2, 3, 8, 8) and first.dtype == np.float32 and first.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(first, np.transpose(images, [0, 3, 1, 2]) / np.float32(255))


# ---------------------------------------------------------------------------- the data


def test_loader_falls_back_offline_and_labels_itself(tmp_path, monkeypatch):
    monkeypatch.delenv(cnn.DOWNLOAD_ENV, raising=False)
    data = cnn.load_images(40, 10, cache_dir=tmp_path)
    assert data.source == "synthetic" and not data.real
    assert "OFFLINE SUBSTITUTE" in data.description and "not CIFAR-10" in data.description
    assert data.x_train.shape == (40, 32, 32, 3) and data.x_train.dtype == np.uint8
    assert data.x_test.shape == (10, 32, 32, 3)
    assert set(np.unique(data.y_train)) <= set(range(cnn.NUM_CLASSES))
    again = cnn.load_images(40, 10, cache_dir=tmp_path)
    np.testing.assert_array_equal(data.x_train, again.x_train)  # seeded
    small = cnn.load_images(8, 4, image_size=16, cache_dir=tmp_path)
    assert small.x_train.shape == (8, 16, 16, 3) and small.image_size == 16
    head = small.head(3)
    assert head.x_train.shape == (3, 16, 16, 3) and head.x_test is small.x_test and head.source == small.source


def test_failed_download_falls_back_and_says_why(tmp_path, monkeypatch):
    def no_network(found):
        raise OSError("no route to host")

    monkeypatch.setattr(cnn.images, "_load_cifar10", no_network)  # never touch the real network in a test
    data = cnn.load_images(8, 4, cache_dir=tmp_path, download=True)
    assert data.source == "synthetic" and "download failed" in data.description


def test_loader_reads_cached_cifar_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {b"data": rng.integers(0, 256, (2, 3072), dtype=np.uint8), b"labels": [1, 7]}
        (folder / name).write_bytes(pickle.dumps(entry))
    assert cnn.find_cached_cifar10(tmp_path) == ("folder", folder)
    data = cnn.load_images(cache_dir=tmp_path, download=False)
    assert data.real and data.x_train.shape == (10, 32, 32, 3) and data.x_test.shape == (2, 32, 32, 3)
    assert list(data.y_test) == [1, 7]
    first_image = np.frombuffer(pickle.loads((folder / "data_batch_1").read_bytes())[b"data"][0].tobytes(), np.uint8)
    np.testing.assert_array_equal(data.x_train[0], first_image.reshape(3, 32, 32).transpose(1, 2, 0))


# ---------------------------------------------------------------------------- timing and comparing


def test_time_layouts_reports_compile_epoch_apart_for_both_layouts():
    # The Keras example: its training step traces in a third of the 10-layer CNN's time (no BatchNormalization).
    data = cnn.load_images(32, 8, image_size=8, **OFFLINE)
    results = cnn.time_layouts("keras_example_cnn", data, batch_size=16, rounds=2, width=2, dense_units=4)
    assert [r["data_format"] for r in results] == list(cnn.DATA_FORMATS)
    for result in results:
        assert result["error"] is None and len(result["epoch_ms"]) == 2 and result["kind"] == "cnn-layouts"
        t = result["time_ms"]
        assert result["first_epoch_ms"] > 0 and t["min"] <= t["median"] <= t["max"]
        assert result["images_per_s"] == pytest.approx(32 / (t["median"] / 1e3))
        assert result["env"]["keras"] and result["env"]["device"]
        assert result["label"].startswith("Keras example CNN (width 2, 8x8 images")
    (row,) = cnn.compare_layouts(results)
    assert row["rounds"] == 2 and row["speedup"] >= 1 and row["origin"] == "this run"


def _result(data_format, times, error=None, **changes):
    base = {"kind": "cnn-layouts", "model": "cnn10", "label": "10-layer CNN (stand-in: width 8, 16x16 images)",
            "precision": "float32", "jit_compile": False, "batch_size": 64, "replicas": 1, "images": 512,
            "image_size": 16, "variant": "", "data_format": data_format, "error": error, "data": "synthetic",
            "env": {"device": "CPU", "gpus": 0, "backend": "tensorflow", "tensorflow": "2.21.0", "keras": "3.15.1"}}
    if error is None:
        base.update(epoch_ms=times, time_ms={"median": float(np.median(times)), "min": min(times), "max": max(times)})
    return dict(base, **changes)


def test_one_definition_of_faster():
    assert cnn.faster(110.0, 100.0) == {"winner": "channels_first", "speedup": pytest.approx(1.1), "percent_faster": pytest.approx(10)}
    assert cnn.faster(100.0, 110.0) == {"winner": "channels_last", "speedup": pytest.approx(1.1), "percent_faster": pytest.approx(10)}
    assert cnn.faster(1.0, 1.0)["winner"] is None
    # The old bug: channels_first took 1/0.27 as long. The text said "277% faster", the chart -73%.
    row = cnn.compare_layouts([_result("channels_last", [27.0] * 3), _result("channels_first", [100.0] * 3)])[0]
    assert row["winner"] == "channels_last" and row["percent_faster"] == pytest.approx(270.37, abs=0.01)
    assert "channels_last is 270% faster (speedup 3.70x" in cnn.verdict(row)
    assert cnn.chart_percent(row["winner"], row["percent_faster"]) == pytest.approx(-270.37, abs=0.01)
    assert cnn.chart_percent("channels_first", 10.0) == 10.0 and cnn.chart_percent(None, 0.0) == 0.0
    with pytest.raises(ValueError):
        cnn.faster(0.0, 1.0)
    with pytest.raises(ValueError):
        cnn.faster(float("nan"), 1.0)


def test_the_chart_draws_the_numbers_the_text_prints():
    matplotlib = pytest.importorskip("matplotlib", reason="drawing the chart needs matplotlib (pip install matplotlib)")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = cnn.compare_layouts([_result("channels_last", [27.0] * 3), _result("channels_first", [100.0] * 3),
                                _result("channels_last", [110.0] * 3, jit_compile=True),
                                _result("channels_first", [100.0] * 3, jit_compile=True)])
    fig = cnn.speedup_chart(rows)
    widths = [patch.get_width() for patch in fig.axes[1].patches]  # axes[0]: the post's numbers
    plt.close(fig)
    assert widths == pytest.approx([cnn.chart_percent(r["winner"], r["percent_faster"]) for r in rows])
    assert widths == pytest.approx([-270.37, 10.0], abs=0.01)
    assert [f"{abs(w):.0f}% faster" in cnn.verdict(r) for w, r in zip(widths, rows)] == [True, True]


def test_compare_layouts_noise_and_failures():
    rows = cnn.compare_layouts([_result("channels_last", [1.0, 1.1, 1.2]), _result("channels_first", [0.5, 0.6, 0.7])])
    assert rows[0]["speedup"] == pytest.approx(1.1 / 0.6) and rows[0]["winner"] == "channels_first" and rows[0]["clear"]
    assert "channels_first is 83% faster" in cnn.verdict(rows[0])
    # channels_first wins the median but loses round 2 (a noisy round): no clear winner
    rows = cnn.compare_layouts([_result("channels_last", [1.0, 1.0, 1.2]), _result("channels_first", [0.9, 1.1, 0.8])])
    assert rows[0]["winner"] == "channels_first" and not rows[0]["clear"] and "no clear winner" in cnn.verdict(rows[0])
    rows = cnn.compare_layouts([_result("channels_last", [1.0]), _result("channels_first", [], error="only supports NHWC")])
    assert rows[0]["winner"] == "channels_last" and "only channels_last runs" in cnn.verdict(rows[0])
    assert "FAILS: only supports NHWC" in cnn.format_results([_result("channels_first", [], error="only supports NHWC")])


def test_then_and_now_puts_measured_rows_beside_the_article():
    wrn = "WRN-10-2 (stand-in for WRN-28-10, 16x16 images)"
    results = [_result("channels_last", [1.0, 1.0]), _result("channels_first", [1.2, 1.3]),
               _result("channels_last", [1.0], model="wide_resnet", label=wrn),
               _result("channels_first", [0.9], model="wide_resnet", label=wrn),
               _result("channels_last", [1.0], jit_compile=True), _result("channels_first", [], error="boom", jit_compile=True)]
    committed = [_result(f, t, file="cnn-layouts-20990101.json", env={"device": "NVIDIA H100", "gpus": 1, "backend": "torch",
                                                                      "torch": "2.13.0", "keras": "3.15.1"})
                 for f, t in (("channels_last", [2.0]), ("channels_first", [1.0]))]
    text = cnn.format_then_and_now(cnn.compare_layouts(committed + results))
    lines = text.splitlines()
    assert "(t_slower / t_faster - 1) * 100" in lines[0]
    assert lines[1].startswith("10-layer CNN, 1 GPU") and "just under 10%" in lines[2] and "RTX 2080 Ti" in lines[2]
    assert lines[3].startswith("  cnn-layouts-20990101.json") and "NVIDIA H100 · torch 2.13.0" in lines[3]
    assert "channels_first is 100% faster" in lines[3]
    assert lines[4].startswith("  this run") and "stand-in: width 8" in lines[4] and "channels_last is" in lines[4]
    assert "TF 1.13" in text and "tensorflow 2.21.0" in text and "Keras 3.15.1" in text
    at = lines.index(next(line for line in lines if line.startswith("WRN-28-10")))
    assert "WRN-10-2 (stand-in" in lines[at + 2] and "channels_first is" in lines[at + 2]
    assert "nothing (needs 2 GPUs)" in text
    assert "no counterpart" in text and "only channels_last runs (channels_first: boom)" in text
    with pytest.raises(TypeError):
        cnn.format_then_and_now("rows")
    with pytest.raises(ValueError, match="lacks"):
        cnn.format_then_and_now([{"model": "cnn10"}])


def test_article_numbers_have_their_source():
    rows = cnn.article_channels_first()
    assert [r["gpus"] for r in rows] == [1, 1, 2]
    assert all(0 < r["cf_faster_pct"] <= 10 for r in rows)
    source = cnn.article_channels_first_source()
    assert "TensorFlow 1.13" in source and "2080 Ti" in source and "cuDNN 7.5" in source


# ---------------------------------------------------------------------------- results files


def test_measure_command_writes_results_that_read_back(tmp_path, capsys):
    out = tmp_path / "cnn-layouts-test.json"
    code = cnn.measure.main(["--size", "tiny", "--models", "cnn10", "--precisions", "float32", "--xla", "off",
                             "--out", str(out)])
    assert code == 0 and f"wrote {out}" in capsys.readouterr().out
    entries = json.loads(out.read_text())["results"]
    assert [e["data_format"] for e in entries] == list(cnn.DATA_FORMATS)
    for entry in entries:  # device and versions inside every entry
        assert entry["env"]["device"] and entry["env"]["keras"] and entry["env"]["backend"] and entry["timing"]
    back = cnn.committed_layout_results(tmp_path)
    assert [r["file"] for r in back] == [out.name] * 2
    (row,) = cnn.compare_layouts(back)
    assert row["origin"] == out.name and row["label"] == "10-layer CNN (stand-in: width 2, 8x8 images)"
    assert out.name in cnn.format_then_and_now([row])


def test_cpu_results_stay_out_of_data_results(tmp_path):
    target = RESULTS / "cnn-layouts-should-not-exist.json"
    assert cnn.measure.main(["--size", "tiny", "--out", str(target)]) == 2 and not target.exists()


def test_variant_plan_leaves_xla_out_on_other_backends():
    plan, skipped = cnn.variant_plan(("cnn10",), ("float32",), (False, True), backend="torch")
    assert plan == [("cnn10", "float32", False)] and "TensorFlow backend only" in skipped[0]
    plan, skipped = cnn.variant_plan(backend="tensorflow")
    assert len(plan) == 8 and not skipped
    assert "KERAS_BACKEND=torch python -m fastlstm_lib.topics.cnn --out data/results/cnn-layouts-" in cnn.MEASURE_COMMAND


# ---------------------------------------------------------------------------- TensorFlow


def test_layout_op_census_shows_keras_transposes_around_pooling():
    if cnn.import_keras().backend.backend() != "tensorflow":
        pytest.skip("TensorFlow graphs only")
    assert cnn.layout_op_census(cnn.keras_example_cnn("channels_last", **TINY_EXAMPLE)) == {"Conv2D NHWC": 4, "MaxPool NHWC": 2}
    first = cnn.layout_op_census(cnn.keras_example_cnn("channels_first", **TINY_EXAMPLE))
    assert first["Conv2D NCHW"] == 4 and first["Transpose"] == 4
    ten = cnn.layout_op_census(cnn.cnn10("channels_first", **TINY_CNN10))
    assert ten["Conv2D NCHW"] == 9 and ten["MaxPool NHWC"] == 2 and ten["Transpose"] == 4


def test_layout_optimizer_restores_the_previous_state():
    if cnn.import_keras().backend.backend() != "tensorflow":
        pytest.skip("Grappler's layout optimizer is TensorFlow's")
    import tensorflow as tf

    def state():
        return tf.config.optimizer.get_experimental_options().get("layout_optimizer")

    before = state()
    with cnn.layout_optimizer(False):
        assert state() is False
        with cnn.layout_optimizer(True):
            assert state() is True
        assert state() is False  # the outer setting, not a forced True
    assert state() == (True if before is None else before)  # unset comes back as TensorFlow's default, on
    with pytest.raises(RuntimeError, match="boom"):
        with cnn.layout_optimizer(False):
            raise RuntimeError("boom")
    assert state() == (True if before is None else before)


def test_gpu_settings_say_why_they_did_nothing_without_a_gpu():
    if cnn.environment()["gpus"]:
        pytest.skip("a GPU is present")
    assert cnn.enable_memory_growth().startswith("skipped")
    strategy, why = cnn.mirrored_strategy()
    assert strategy is None and ("at least 2" in why or "Keras runs on" in why)


def test_import_stays_light():
    code = ("import sys, fastlstm_lib.topics.cnn; "
            "bad = [m for m in ('keras', 'tensorflow', 'torch', 'matplotlib', 'tqdm') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "simulator" not in out.stdout + out.stderr  # no banner: importing does no Numba work


# ---------------------------------------------------------------------------- bad input


def _unstarted_probes():
    """CPU conv probes whose children were never started: ``result`` checks its timeout first."""
    return cnn.tf_settings.CpuConvProbes.__new__(cnn.tf_settings.CpuConvProbes)


@pytest.mark.parametrize("call, error", [
    (lambda: cnn.cnn10("NCHW"), ValueError),
    (lambda: cnn.cnn10("channels_last", width=0), ValueError),
    (lambda: cnn.cnn10("channels_last", width=2.0), TypeError),
    (lambda: cnn.cnn10("channels_last", image_size=10), ValueError),
    (lambda: cnn.cnn10("channels_last", bn_momentum=1.0), ValueError),
    (lambda: cnn.wide_resnet("channels_last", bn_momentum=-0.1), ValueError),
    (lambda: cnn.keras_example_cnn("channels_last", width=1.5), TypeError),
    (lambda: cnn.keras_example_cnn("channels_last", image_size=10), ValueError),
    (lambda: cnn.wide_resnet("channels_last", dropout=1.0), ValueError),
    (lambda: cnn.wide_resnet("channels_last", dropout=float("nan")), ValueError),
    (lambda: cnn.wide_resnet("channels_last", depth=27), ValueError),
    (lambda: cnn.wide_resnet("channels_last", width_factor=True), TypeError),
    (lambda: cnn.build("resnet50", "channels_last"), ValueError),
    (lambda: cnn.model_label("vgg"), ValueError),
    (lambda: cnn.load_images(image_size=12), ValueError),
    (lambda: cnn.load_images(n_train=0), ValueError),
    (lambda: cnn.load_images(download="yes"), TypeError),
    (lambda: cnn.layer_table("a model"), TypeError),
    (lambda: cnn.layer_table(None), TypeError),
    (lambda: cnn.model_data_format([1, 2]), TypeError),
    (lambda: cnn.compare_layouts("results"), TypeError),
    (lambda: cnn.compare_layouts(["a result"]), TypeError),
    (lambda: cnn.compare_layouts([{"data_format": "channels_last"}]), ValueError),
    (lambda: _unstarted_probes().result(timeout=0), ValueError),
    (lambda: _unstarted_probes().result(timeout=-5.0), ValueError),
    (lambda: _unstarted_probes().result(timeout=float("inf")), ValueError),
    (lambda: _unstarted_probes().result(timeout="60"), TypeError),
    (lambda: cnn.memory_grab_demo(timeout=float("nan")), ValueError),
    (lambda: cnn.memory_grab_demo(timeout=None), TypeError),
    (lambda: cnn.to_layout(np.zeros((2, 8, 8, 1), np.uint8), "channels_first"), ValueError),
    (lambda: cnn.to_layout(np.zeros((2, 8, 8, 3), np.float32), "channels_first"), TypeError),
    (lambda: cnn.to_layout([[1, 2]], "channels_last"), TypeError),
    (lambda: cnn.to_layout(np.zeros((2, 8, 8, 3), np.uint8), "NHWC"), ValueError),
    (lambda: cnn.flatten_rows_to_channels_first(np.zeros((10, 2)), 2, 2, 2), ValueError),
    (lambda: cnn.flatten_rows_to_channels_first(np.zeros(8), 2, 2, 2), TypeError),
    (lambda: cnn.layout_optimizer(1).__enter__(), TypeError),
    (lambda: cnn.variant_plan(("vgg",)), ValueError),
    (lambda: cnn.variant_plan(precisions=("float16",)), ValueError),
    (lambda: cnn.faster("1", 1.0), TypeError),
])
def test_bad_arguments_say_what_was_expected(call, error):
    with pytest.raises(error):
        call()


def test_time_layouts_checks_its_arguments():
    data = cnn.load_images(8, 4, image_size=8, **OFFLINE)
    with pytest.raises(ValueError, match="precision"):
        cnn.time_layouts("cnn10", data, precision="float16")
    with pytest.raises(ValueError, match="model"):
        cnn.time_layouts("vgg", data)
    with pytest.raises(TypeError, match="ImageData"):
        cnn.time_layouts("cnn10", data.x_train)
    with pytest.raises(ValueError, match="on_error"):
        cnn.time_layouts("cnn10", data, on_error="ignore")
    with pytest.raises(TypeError, match="jit_compile"):
        cnn.time_layouts("cnn10", data, jit_compile="yes")
    with pytest.raises(ValueError, match="rounds"):
        cnn.time_layouts("cnn10", data, rounds=0)
    with pytest.raises(TypeError, match="model must be a keras.Model"):
        cnn.layer_table("cnn10")
    with pytest.raises(TypeError, match="model must be a keras.Model"):
        cnn.layer_table(data)
    with pytest.raises(ValueError, match="data_format"):
        cnn.compare_layouts([dict(_result("channels_last", [1.0]), data_format="NCHW")])
    with pytest.raises(ValueError, match="neither an error nor its times"):
        cnn.compare_layouts([{k: v for k, v in _result("channels_last", [1.0]).items() if k not in ("time_ms", "epoch_ms")}])
    last = cnn.keras_example_cnn("channels_last", **TINY_EXAMPLE)
    with pytest.raises(ValueError, match="channels_last source"):
        cnn.copy_weights(last, last)
