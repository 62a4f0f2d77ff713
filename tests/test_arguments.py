"""Every public function and command-line option checks its arguments before any work: a bad one
gets a TypeError / ValueError (the command line: ``error: ...`` and status 2) naming the argument,
what was expected and what came."""

import json
import math
import os

import pytest

import fastlstm_lib as fl
from conftest import MINI, problem
from fastlstm_lib.kernels import persistent
from fastlstm_lib.__main__ import main


def fake_result(step="baseline", median_ms=10.0):
    cfg = fl.LSTMConfig.article()
    return {"step": step, "config": cfg.as_dict(), "times_meaningful": True, "device": {"name": "NVIDIA H100 80GB HBM3"},
            "time_ms": {"median": median_ms, "min": median_ms, "max": median_ms},
            "gflops": fl.flops(cfg) / (median_ms * 1e-3) / 1e9, "relative_error": {"after": 1e-7}}


SKIPPED = {"step": "persistent", "config": MINI.as_dict(), "skipped": "does not fit"}


# ---- results: the table, files, the comparison with the article ------------------------------------


@pytest.mark.parametrize("results, error, words", [
    (None, TypeError, r"results must be a list of result dicts .*got NoneType"),
    (42, TypeError, "got int 42"),
    ("baseline", TypeError, "got str"),
    (["x"], TypeError, r"results\[0\] must be a result dict"),
    ([{}], ValueError, r"results\[0\] .* lacks 'step'"),
    ([fake_result(), {"step": "wavefront", "time_ms": {"median": 1.0}}], ValueError,
     r"results\[1\] \(step 'wavefront'\) lacks 'config', 'device.name'"),
    ([{"step": "persistent", "skipped": "no"}], ValueError, r"results\[0\] \(step 'persistent'\) lacks 'config'"),
    ([dict(fake_result(), time_ms={"median": 0.0, "min": 0.0, "max": 0.0})], ValueError, r"time_ms.median .* > 0"),
    ([dict(fake_result(), gflops=math.nan)], ValueError, "gflops must be a finite number"),
    ([dict(fake_result(), step=3)], TypeError, r"\['step'\] must be a step name"),
])
def test_format_table_says_which_row_lacks_what(results, error, words):
    with pytest.raises(error, match=words):
        fl.format_table(results)


def test_format_table_still_reads_good_rows():
    assert fl.format_table([]) == "(no results)"
    table = fl.format_table([fake_result(), SKIPPED])
    assert "baseline" in table and "persistent         skipped: does not fit" in table


@pytest.mark.parametrize("results, path, error, words", [
    (42, "r.json", TypeError, "results must be a list of dicts, got int 42"),
    ([1, 2], "r.json", TypeError, "results must be a list of dicts"),
    ([{"x": object()}], "r.json", TypeError, "results must be JSON-able"),
    ([], 42, TypeError, r"path must be a path \(str or os.PathLike\), got int 42"),
    ([], None, TypeError, "path must be a path"),
    ([], "", ValueError, "path must be a path"),
    ([], ".", ValueError, "it is a directory"),
])
def test_save_results_rejects_bad_arguments(tmp_path, monkeypatch, results, path, error, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=words):
        fl.save_results(results, path)
    assert not (tmp_path / "r.json").exists()  # nothing half-written


def test_save_results_refuses_a_file_for_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is not a directory"):
        fl.save_results([], tmp_path / "file" / "sub" / "r.json")
    assert fl.load_results(fl.save_results([{"a": 1}], tmp_path / "new" / "r.json")) == [{"a": 1}]  # folders made


def test_load_results_rejects_bad_arguments(tmp_path):
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(TypeError, match="path must be a path"):
        fl.load_results(None)
    with pytest.raises(ValueError, match="no such file"):
        fl.load_results(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="it is a directory"):
        fl.load_results(tmp_path)
    with pytest.raises(ValueError, match="not JSON"):
        fl.load_results(tmp_path / "text.json")
    with pytest.raises(ValueError, match="without"):
        fl.load_results(tmp_path / "list.json")


def test_ladder_comparison_checks_its_rows():
    with pytest.raises(TypeError, match="results must be a list"):
        fl.ladder_comparison(None)
    with pytest.raises(ValueError, match=r"results\[0\] .* lacks 'config'"):
        fl.ladder_comparison([{"step": "baseline", "times_meaningful": True}])
    assert fl.ladder_comparison([fake_result(), SKIPPED])[0]["step"] == "baseline"


def test_charts_check_their_arguments():
    from fastlstm_lib.course import plots

    with pytest.raises(TypeError, match="results must be a list"):
        plots.ladder_chart(None)
    with pytest.raises(ValueError, match=r"results\[0\] .* lacks 'step'"):
        plots.ladder_chart([{}])
    with pytest.raises(ValueError, match="lacks 'device.name', 'gflops'"):
        plots.ladder_chart([{"step": "baseline", "times_meaningful": True}])
    with pytest.raises(ValueError, match="counts must hold at least one step"):
        plots.launch_chart({}, 1)
    with pytest.raises(ValueError, match="layer_steps must be an int >= 1, got 0"):
        plots.launch_chart({"baseline": {"blocked_gemm": 2}}, 0)
    with pytest.raises(TypeError, match="lanes must be a list"):
        plots.stream_timeline(None, title="t")
    with pytest.raises(TypeError, match=r"lanes\[0\] box 0"):
        plots.stream_timeline([("main", [("a", 1, "x", "red")])], title="t")
    with pytest.raises(TypeError, match="layers must be an int >= 1, got float 1.5"):
        plots.wavefront_grid(1.5, 2)
    with pytest.raises(ValueError, match="chunks must be an int >= 1, got 0"):
        plots.wavefront_grid(2, 0)


# ---- GPUs, the article, launches, the persistent plan, Keras ---------------------------------------


@pytest.mark.parametrize("call, error, words", [
    (lambda: fl.gpu(None), TypeError, "name must be a non-empty str such as 'H100', got NoneType None"),
    (lambda: fl.gpu(42), TypeError, "name must be a non-empty str"),
    (lambda: fl.gpu(""), ValueError, "name must be a non-empty str"),
    (lambda: fl.gpu("GTX 480"), ValueError, "unknown GPU 'GTX 480'"),
    (lambda: fl.fp32_peak_tflops(None), TypeError, "device_name must be a non-empty str"),
    (lambda: fl.fp32_peak_tflops(1.5), TypeError, "device_name must be a non-empty str"),
    (lambda: fl.launch_overhead_us(None), TypeError, "launches must be an int >= 1, got NoneType None"),
    (lambda: fl.launch_overhead_us(1.5), TypeError, "launches must be an int >= 1, got float 1.5"),
    (lambda: fl.launch_overhead_us(True), TypeError, "launches must be an int >= 1, got bool True"),
    (lambda: fl.launch_overhead_us("x"), TypeError, "launches must be an int >= 1, got str"),
    (lambda: fl.launch_overhead_us(0), ValueError, "launches must be an int >= 1, got 0"),
    (lambda: fl.persistent_limits(None, chip="H100"), TypeError, "hidden must be an int >= 1, got NoneType"),
    (lambda: fl.persistent_limits(True, chip="H100"), TypeError, "hidden must be an int >= 1, got bool True"),
    (lambda: fl.persistent_limits(0, chip="H100"), ValueError, "hidden must be an int >= 1, got 0"),
    (lambda: fl.persistent_limits(13, [], chip="H100"), ValueError, "batches must hold at least one int"),
    (lambda: fl.persistent_limits(13, "x", chip="H100"), TypeError, "batches must be a list of ints"),
    (lambda: fl.persistent_limits(13, [1, 0], chip="H100"), ValueError, r"batches\[1\] must be an int >= 1, got 0"),
    (lambda: fl.persistent_limits(13, [1], chip=42), TypeError, "chip must be a non-empty str"),
    (lambda: fl.persistent_limits(13, [1], chip="x"), ValueError, "unknown GPU 'x'"),
    (lambda: persistent.plan(512, 4, chip=5), TypeError, "chip must be a non-empty str such as 'H100', got int 5"),
    (lambda: fl.steps.get("persistent").runner(*problem(MINI), chip=5), TypeError,
     "chip must be a non-empty str such as 'H100', got int 5"),
])
def test_public_functions_name_the_bad_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_article_readers_take_no_arguments():
    assert fl.article_numbers()[0]["step"] == "baseline" and "M40" in fl.article_source()
    assert fl.fp32_peak_tflops("Numba CUDA simulator (CPU)") is None  # an unknown device: no peak, as documented
    with pytest.raises(TypeError):
        fl.article_numbers("M40")


def test_keras_bridge_checks_before_importing_keras(monkeypatch):
    from fastlstm_lib import keras_bridge

    def no_keras():
        raise AssertionError("Keras imported before the arguments were checked")

    monkeypatch.setattr(keras_bridge, "import_keras", no_keras)
    with pytest.raises(TypeError, match="layers must be a list of built keras.layers.LSTM, got NoneType"):
        fl.params_from_keras(None)
    with pytest.raises(ValueError, match="layers must hold at least one"):
        fl.params_from_keras([])
    with pytest.raises(TypeError, match="params must be a list"):
        fl.keras_forward(None, None)
    x, params = fl.random_input(MINI), fl.init_params(MINI)
    with pytest.raises(TypeError, match="use_cudnn must be 'auto', True or False, got int 1"):
        fl.keras_forward(x, params, use_cudnn=1)
    with pytest.raises(ValueError, match="use_cudnn must be 'auto', True or False, got str 'yes'"):
        fl.keras_forward(x, params, use_cudnn="yes")


# ---- profiles and bounds ---------------------------------------------------------------------------


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((None,), {}, TypeError, "step must be a ladder step's name .* got NoneType None"),
    ((42,), {}, TypeError, "step must be a ladder step's name"),
    (("warp_speed",), {}, ValueError, "unknown step 'warp_speed'"),
    (("keras_cudnn",), {}, ValueError, "step must be one of the ladder's steps"),
    (("baseline", 42), {}, TypeError, "cfg must be an LSTMConfig"),
    (("baseline", MINI), {"chip": 42}, TypeError, "chip must be a non-empty str such as 'H100', got int 42"),
    (("baseline", MINI), {"chip": ""}, ValueError, "chip must be a non-empty str"),
    (("baseline", MINI), {"chip": "GTX 480"}, ValueError, "unknown GPU 'GTX 480'"),
])
def test_profile_checks_its_arguments(args, kwargs, error, words):
    with pytest.raises(error, match=words):
        fl.profile(*args, **kwargs)


def test_lower_bound_names_the_bad_argument():
    p = fl.profile("baseline", MINI)
    with pytest.raises(TypeError, match="profile must be a Profile"):
        fl.lower_bound(None, "H100")
    with pytest.raises(TypeError, match="gpu must be a non-empty str such as 'H100', got NoneType"):
        fl.lower_bound(p, None)
    with pytest.raises(ValueError, match="host must be a finite number >= 0, got nan"):
        fl.lower_bound(p, "H100", math.nan)


def test_ladder_bounds_checks_everything_before_recording(monkeypatch):
    from fastlstm_lib.course.profile import ladder

    def no_work(*args, **kwargs):
        raise AssertionError("a step was recorded before the arguments were checked")

    monkeypatch.setattr(ladder, "profile", no_work)
    for kwargs, error, words in [
        (dict(gpus=[]), ValueError, "gpus must hold at least one str"),
        (dict(gpus="H100"), TypeError, "gpus must be a list of strs"),
        (dict(gpus=["H100", "GTX 480"]), ValueError, "unknown GPU 'GTX 480'"),
        (dict(hosts=["fortran"]), ValueError, "host must be one of"),
        (dict(hosts=[]), ValueError, "hosts must be a non-empty list"),
        (dict(steps=["baseline", "warp_speed"]), ValueError, "unknown step 'warp_speed'"),
        (dict(steps=["keras_cudnn"]), ValueError, "ladder's steps"),
        (dict(cfg="article"), TypeError, "cfg must be an LSTMConfig"),
        (dict(chip=None), TypeError, "chip must be a non-empty str"),
    ]:
        with pytest.raises(error, match=words):
            ladder.ladder_bounds(**kwargs)


def test_a_changed_profile_does_not_change_the_next_one():
    cfg = fl.LSTMConfig.tiny()
    first = fl.profile("streams", cfg, chip="T4")
    before = json.dumps(first.to_dict())
    first.config["batch"] = 10**6
    first.options["chunk"] = 99
    first.launches[0].loads.clear()
    first.launches[0].deps[123] = "stream"
    if first.stream_ops:
        first.stream_ops[0]["op"] = "nonsense"
    again = fl.profile("streams", cfg, chip="T4")
    assert again is not first
    assert json.dumps(again.to_dict()) == before


# ---- the command line: every bad argument is refused before any work --------------------------------


@pytest.fixture
def no_work(monkeypatch):
    """Every command's work fails the test if it starts."""
    from fastlstm_lib import harness
    from fastlstm_lib.course.profile import ladder

    def work(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    for owner, name in [(fl, "bench_steps"), (harness, "bench_or_skip"),
                        (ladder, "ladder_bounds"), (fl, "is_simulator")]:
        monkeypatch.setattr(owner, name, work)


def cli_error(capsys, argv) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize("command", [["bench"], ["clocks"], ["profile"]])
def test_cli_refuses_an_output_file_it_cannot_write(no_work, capsys, tmp_path, command):
    (tmp_path / "file").write_text("x")
    for out, words in [(tmp_path / "missing" / "r.json", "directory .* does not exist"),
                       (tmp_path, "it is a directory"),
                       (tmp_path / "file" / "r.json", "is not a directory")]:
        err = cli_error(capsys, command + ["--out", str(out)])
        assert err.startswith("error: --out must be a file path that can be written")
        assert __import__("re").search(words, err), err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_cli_refuses_a_folder_without_write_permission(no_work, capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert "no permission to write" in cli_error(capsys, ["bench", "--out", str(locked / "r.json")])
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("plot, words", [
    ("chart.txt", "--plot must end in an image format matplotlib writes"),
    ("chart", "--plot must end in an image format"),
    ("missing/chart.png", "--plot must be a file path that can be written"),
])
def test_cli_refuses_a_plot_it_cannot_draw(no_work, capsys, tmp_path, plot, words):
    pytest.importorskip("matplotlib")
    assert words in cli_error(capsys, ["bench", "--plot", str(tmp_path / plot)])


@pytest.mark.parametrize("argv, words", [
    (["bench", "--repeats", "0"], "repeats must be an int >= 1, got 0"),
    (["bench", "--repeats", "-2"], "repeats must be an int >= 1, got -2"),
    (["bench", "--repeats", "1.5"], "repeats must be an int >= 1, got '1.5'"),
    (["bench", "--warmup", "-1"], "warmup must be an int >= 0, got -1"),
    (["bench", "--steps", "baseline", "nope"], "unknown step 'nope'"),
    (["clocks", "--steps", "keras_cudnn"], "'keras_cudnn' is not a ladder step"),
    (["profile", "--steps", "keras_cudnn"], "'keras_cudnn' is not a ladder step"),
    (["profile", "--gpus", "H100", "GTX480"], "unknown GPU 'GTX480'"),
    (["profile", "--hosts", "fortran"], "invalid choice: 'fortran'"),
    (["bench", "--config", "huge"], "invalid choice: 'huge'"),
])
def test_cli_refuses_bad_options_before_any_work(no_work, capsys, argv, words):
    err = cli_error(capsys, argv)
    assert "error: " in err and words in err, err


def test_cli_bench_still_writes_its_file(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(fl, "bench_steps", lambda names, cfg, **kwargs: [fake_result()])
    assert main(["bench", "--steps", "baseline", "--out", str(tmp_path / "r.json")]) == 0
    assert fl.load_results(tmp_path / "r.json") == [fake_result()]
    assert "wrote" in capsys.readouterr().out


def test_cli_turns_a_late_bad_argument_into_an_error(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise ValueError("cfg must be an LSTMConfig, got str 'x'")

    monkeypatch.setattr(fl, "bench_steps", refuse)
    assert cli_error(capsys, ["bench"]) == "error: cfg must be an LSTMConfig, got str 'x'\n"
