"""The harness measures only steps that are right, before and after timing."""

import json
import subprocess
import sys

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.kernels import pointwise as pw
from fastlstm_lib.steps.step02_baseline import Baseline
from conftest import MINI


class OffByALittle(Baseline):
    """Adds 1e-3 to the last step's h: plausible-looking, but wrong."""

    name = "off_by_a_little"

    def run(self, state, x, out):
        super().run(state, x, out)
        last = out[out.shape[0] - 1]
        pw.add_bias(last, state.bias_error, last)

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        from numba import cuda

        state.bias_error = cuda.to_device(np.full(cfg.hidden, 1e-3, np.float32))
        return state


class ForgetsTheLastStep(Baseline):
    """Never writes the last time step: the NaN poison must show."""

    name = "forgets_the_last_step"

    def run_layer(self, state, weights, xs, hs):
        super().run_layer(state, weights, xs[: xs.shape[0] - 1], hs)


class WrongAfterTiming(Baseline):
    """Right the first time, wrong from the third run on (state leaking between runs)."""

    name = "wrong_after_timing"
    replayable = False  # its Python changes from pass to pass: a replay would repeat the first

    def setup(self, params, cfg, **options):
        self.calls = 0
        return super().setup(params, cfg, **options)

    def run(self, state, x, out):
        self.calls += 1
        super().run(state, x, out)
        if self.calls >= 3:
            pw.fill(out[0], 0.5)


def test_bench_reports_a_right_step():
    result = fl.bench("baseline", MINI)
    assert result["step"] == "baseline"
    assert result["config"] == MINI.as_dict()
    assert result["flop"] == fl.flops(MINI)
    assert result["relative_error"]["before"] <= 1e-5 and result["relative_error"]["after"] <= 1e-5
    assert result["time_ms"]["min"] <= result["time_ms"]["median"] <= result["time_ms"]["max"]
    assert result["device"]["name"] == fl.device_info()["name"]
    assert result["times_meaningful"] == (not fl.is_simulator())
    json.dumps(result)  # JSON-able


@pytest.mark.parametrize("step, when", [(OffByALittle(), "before"), (ForgetsTheLastStep(), "before")])
def test_bench_refuses_a_wrong_step(step, when):
    with pytest.raises(fl.WrongResultError, match=f"wrong {when} timing"):
        fl.bench(step, MINI)


def test_bench_refuses_a_step_that_goes_wrong_while_timed():
    with pytest.raises(fl.WrongResultError, match="wrong after timing"):
        fl.bench(WrongAfterTiming(), MINI, warmup=1, repeats=1)


class ForgetsToResetC(Baseline):
    """Never clears c after the first run: the next runs start from the last one's cell state.
    Every pass queues the same launches, so the runner replays the first; the harness must still
    see the replayed passes go wrong."""

    name = "forgets_to_reset_c"

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        pw.fill(state.c, 0.0)
        return state

    def run_layer(self, state, weights, xs, hs):
        h_prev = state.h_zero
        for t in range(xs.shape[0]):
            self.gate_products(state, weights, xs[t], h_prev)
            self.cell_update(state, weights, state.x_gates, state.h_gates, hs[t])
            h_prev = hs[t]


def test_bench_refuses_a_replayed_pass_that_goes_wrong():
    with pytest.raises(fl.WrongResultError, match="wrong after timing"):
        fl.bench(ForgetsToResetC(), MINI, warmup=1, repeats=1)


def test_results_round_trip(tmp_path):
    results = [fl.bench("baseline", MINI, repeats=1)]
    path = fl.save_results(results, tmp_path / "out" / "r.json")
    assert fl.load_results(path) == results
    table = fl.format_table(results)
    assert "baseline" in table and "GFLOP/s" in table


def test_cli_bench_writes_json(tmp_path):
    import importlib.util

    out = tmp_path / "bench.json"
    # The chart too where matplotlib is installed (a lent GPU machine may have none: the JSON is still checked).
    plot = importlib.util.find_spec("matplotlib") is not None
    done = subprocess.run(
        # the persistent step: the fewest launches, so the quickest on the simulator (the CLI is what is tested)
        [sys.executable, "-m", "fastlstm_lib", "bench", "--steps", "persistent", "--config", "tiny",
         "--repeats", "1", "--out", str(out)] + (["--plot", str(tmp_path / "ladder.png")] if plot else []),
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "persistent" in done.stdout and "GFLOP/s" in done.stdout
    assert fl.load_results(out)[0]["config"] == fl.LSTMConfig.tiny().as_dict()
    if plot:
        assert (tmp_path / "ladder.png").stat().st_size > 1000


def test_changes_show_the_methods_a_step_defines():
    text = fl.steps.changes("baseline")
    assert text.startswith("class Baseline(LSTMStep):  # fastlstm_lib/steps/step02_baseline.py")
    assert "def cell_update" in text and "def gate_products" in text
    assert fl.steps.previous("baseline") is None


def test_cli_rejects_an_unknown_step():
    done = subprocess.run(
        [sys.executable, "-m", "fastlstm_lib", "bench", "--steps", "nope"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "unknown step 'nope'" in done.stderr


def fake_result(step, median_ms, device="NVIDIA H100 80GB HBM3", meaningful=True):
    cfg = fl.LSTMConfig.article()
    return {"step": step, "config": cfg.as_dict(), "times_meaningful": meaningful, "device": {"name": device},
            "time_ms": {"median": median_ms}, "gflops": fl.flops(cfg) / (median_ms * 1e-3) / 1e9}


def test_ladder_comparison_sets_each_device_beside_the_article():
    results = [fake_result("baseline", 100.0), fake_result("wavefront", 10.0),
               fake_result("baseline", 1.0, device="Numba CUDA simulator (CPU)", meaningful=False)]
    rows = {row["step"]: row for row in fl.ladder_comparison(results)}
    assert list(rows) == [r["step"] for r in fl.article_numbers()]
    assert rows["wavefront"]["M40 speedup"] == 11.1
    assert rows["wavefront"]["NVIDIA H100 80GB HBM3 speedup"] == 10.0
    gflops = fl.flops(fl.LSTMConfig.article()) / 10e-3 / 1e9
    assert abs(rows["wavefront"]["NVIDIA H100 80GB HBM3 % of FP32 peak"] - 100 * gflops / 66.9e3) < 1e-9
    assert rows["streams"]["NVIDIA H100 80GB HBM3 GFLOP/s"] is None  # not measured: no invented number
    assert not any("simulator" in column for column in rows["baseline"])  # meaningless times left out


def test_ladder_comparison_adds_measured_steps_the_article_did_not_have():
    rows = fl.ladder_comparison([fake_result("baseline", 100.0), fake_result("keras_cudnn", 5.0)])
    assert rows[-1]["step"] == "keras_cudnn" and rows[-1]["M40 GFLOP/s"] is None
    assert rows[-1]["NVIDIA H100 80GB HBM3 speedup"] == 20.0


def test_fp32_peak_is_none_for_an_unknown_gpu():
    assert fl.fp32_peak_tflops("NVIDIA H100 PCIe") == 51.2
    assert fl.fp32_peak_tflops("Numba CUDA simulator (CPU)") is None


def test_benchmarks_run_without_tqdm():
    # The lent GPU machine's Python has numba and torch but maybe no tqdm: no bar, same results.
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['tqdm'] = sys.modules['tqdm.auto'] = None\n"
         "import fastlstm_lib as fl\n"
         "print([r['step'] for r in fl.bench_steps(['persistent'], fl.LSTMConfig.tiny(), repeats=1)])"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "['persistent']" in done.stdout


def test_host_and_device_times_check_and_report_three_clocks():
    result = fl.host_and_device_times("fused_pointwise", MINI, warmup=0, repeats=2)
    assert result["relative_error"]["after"] <= 1e-5
    assert result["issue_ms"]["median"] <= result["wall_ms"]["median"]
    if fl.is_simulator():
        assert result["device_ms"] is None and not result["times_meaningful"]
    json.dumps(result)


def test_host_and_device_times_refuse_keras():
    pytest.importorskip("keras")
    with pytest.raises(TypeError, match="only a wall clock"):
        fl.host_and_device_times("keras_generic", MINI)


def test_cli_clocks_refuses_the_simulator():
    if not fl.is_simulator():
        pytest.skip("on a GPU this is a real measurement")
    done = subprocess.run([sys.executable, "-m", "fastlstm_lib", "clocks"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "mean nothing" in done.stderr


# ---- a step that cannot run at a size on this GPU is skipped, with its reason (issue 19) ----------

T4_REFUSES = ("persistent LSTM: hidden 5, batch 1 does not fit Tesla T4 as one cooperative grid (8 units per "
              "block need 69768 bytes of shared memory > 65536)")


@pytest.fixture
def persistent_refused(monkeypatch):
    """The persistent step on a GPU that cannot hold it (a T4 at the article's size): its setup refuses."""
    from fastlstm_lib.kernels.persistent import PersistentLimitError

    def refuse(params, cfg, **options):
        raise PersistentLimitError(T4_REFUSES)

    monkeypatch.setattr(fl.steps.get("persistent"), "setup", refuse)


def test_bench_steps_skips_a_step_that_cannot_run_here_and_says_why(persistent_refused):
    results = fl.bench_steps(["fused_pointwise", "persistent"], MINI, progress=False, warmup=0, repeats=1)
    assert [r["step"] for r in results] == ["fused_pointwise", "persistent"]
    assert results[0]["time_ms"]["median"] > 0
    assert results[1] == {"step": "persistent", "config": MINI.as_dict(), "skipped": T4_REFUSES}
    table = fl.format_table(results)
    assert f"persistent         skipped: {T4_REFUSES}" in table and "fused_pointwise" in table
    assert fl.format_table(results[::-1]).splitlines()[1].startswith("persistent         skipped")
    json.dumps(results)


def test_a_wrong_argument_is_an_error_not_a_skip():
    with pytest.raises(ValueError, match="chunk must be a positive int"):
        fl.bench_steps(["combined_inputs"], MINI, progress=False, repeats=1, chunk=0)
