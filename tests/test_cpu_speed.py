"""The CPU experiments of notebooks 03, 05 and 07 (fastlstm_lib.course.cpu_speed, cpu_cells): at tiny sizes,
their fields, their checks (every variant against float64, wrong or NaN results refused) and their
argument checks. Nothing here asserts a speed: the times depend on the machine."""

import json

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.course import cpu_cells, cpu_speed

FAST = {"repeats": 2, "max_seconds": 0.1, "progress": False}
TINY = {
    "stacked_gemms": (cpu_speed.stacked_gemms, {"batch": 3, "input_size": 7, "hidden": 13, "steps": 2}, 2),
    "fused_pointwise": (cpu_speed.fused_pointwise, {"batch": 3, "hidden": 13, "steps": 2}, 3),
    "combined_inputs": (cpu_speed.combined_inputs, {"batch": 3, "seq_len": 5, "input_size": 7, "hidden": 13}, 2),
}


@pytest.fixture(scope="module")
def results():
    return {name: function(**sizes, **FAST) for name, (function, sizes, _) in TINY.items()}


@pytest.mark.parametrize("name", TINY)
def test_an_experiment_returns_the_documented_fields(results, name):
    result, (_, sizes, variants) = results[name], TINY[name]
    assert result["experiment"] == name and result["sizes"] == sizes and result["hardware_dependent"] is True
    assert result["unit"].startswith("ms per ")
    assert len(result["variants"]) == variants and 1 <= result["rounds"] <= FAST["repeats"]
    for row in result["variants"]:
        assert {"name", "median", "min", "max", "times_ms", "relative_error"} <= row.keys()
        assert len(row["times_ms"]) == result["rounds"] and row["min"] <= row["median"] <= row["max"]
        assert 0 <= row["relative_error"] <= fl.RTOL  # both variants agree with float64 NumPy
    first, last = result["variants"][0], result["variants"][-1]
    assert result["ratio"] == pytest.approx(first["median"] / last["median"])
    assert {"cpu", "logical_cpus", "numpy", "blas", "numba"} <= result["machine"].keys()
    assert result["busy_elsewhere"] is None or 0 <= result["busy_elsewhere"] <= 1
    assert (result["flop"] is None) == (name == "fused_pointwise")
    json.dumps(result)  # JSON-able as it is


@pytest.mark.parametrize("name", TINY)
def test_summary_and_chart_say_what_was_measured(results, name):
    text = cpu_speed.summary(results[name])
    assert all(row["name"] in text for row in results[name]["variants"]) and "here: " in text
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = cpu_speed.chart(results[name], title="a title")
    ax = fig.axes[0]
    assert "ms per" in ax.get_xlabel() and ax.get_title() == "a title" and len(ax.patches) == len(results[name]["variants"])
    plt.close(fig)


@pytest.mark.parametrize("cell", [cpu_cells.numpy_cell, cpu_cells.fused_cell_libm, cpu_cells.fused_cell_rational])
def test_every_cell_matches_float64_and_lets_nan_through(cell):
    rng = np.random.default_rng(3)
    B, H = 3, 13  # odd: no multiple of the SIMD width
    x_gates, h_gates = (3 * rng.standard_normal((2, B, 4 * H))).astype(np.float32)
    bias, c0 = rng.standard_normal(4 * H).astype(np.float32), rng.standard_normal((B, H)).astype(np.float32)
    z = x_gates.astype(np.float64) + h_gates + bias
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c_want = sig(z[:, H:2 * H]) * c0 + sig(z[:, :H]) * np.tanh(z[:, 2 * H:3 * H])
    h_want = sig(z[:, 3 * H:]) * np.tanh(c_want)
    c, h = c0.copy(), np.full_like(c0, np.nan)
    cell(x_gates, h_gates, bias, c, h)
    assert fl.matches(h, h_want) and fl.matches(c, c_want)
    x_gates[1, 2 * H + 4] = np.nan  # one pre-activation of g: its element's c and h must show it
    c, h = c0.copy(), np.zeros_like(c0)
    cell(x_gates, h_gates, bias, c, h)
    assert np.isnan(h[1, 4]) and np.isnan(c[1, 4]) and np.isfinite(np.delete(h.ravel(), 1 * H + 4)).all()


def test_the_rational_tanh_is_within_a_few_roundings_of_tanh():
    import numba

    @numba.njit
    def apply(values, out):
        for k in range(values.size):
            out[k] = cpu_cells.tanh_rational(values[k])

    x = np.linspace(-20, 20, 100_001).astype(np.float32)
    out = np.empty_like(x)
    apply(x, out)
    assert np.abs(out - np.tanh(x.astype(np.float64))).max() < 1e-6


def test_a_wrong_variant_is_refused_before_it_is_timed(monkeypatch):
    def no_bias(x_gates, h_gates, bias, c, h):
        cpu_cells.numpy_cell(x_gates, h_gates, np.zeros_like(bias), c, h)

    monkeypatch.setattr(cpu_speed, "numpy_cell", no_bias)
    with pytest.raises(fl.WrongResultError, match="NumPy: 26 passes.*before timing"):
        cpu_speed.fused_pointwise(batch=3, hidden=13, steps=1, **FAST)


def test_an_output_left_unwritten_is_refused(monkeypatch):
    monkeypatch.setattr(cpu_speed, "fused_cell_libm", lambda x_gates, h_gates, bias, c, h: None)  # h stays NaN
    with pytest.raises(fl.WrongResultError, match="C library"):
        cpu_speed.fused_pointwise(batch=3, hidden=13, steps=1, **FAST)


@pytest.mark.parametrize("name, kwargs, error, word", [
    ("stacked_gemms", {"batch": 0}, ValueError, "batch"),
    ("stacked_gemms", {"hidden": 1.5}, TypeError, "hidden"),
    ("stacked_gemms", {"steps": True}, TypeError, "steps"),
    ("fused_pointwise", {"repeats": 0}, ValueError, "repeats"),
    ("fused_pointwise", {"max_seconds": 0}, ValueError, "max_seconds"),
    ("fused_pointwise", {"progress": "yes"}, TypeError, "progress"),
    ("combined_inputs", {"seq_len": -1}, ValueError, "seq_len"),
    ("combined_inputs", {"input_size": "7"}, TypeError, "input_size"),
    ("combined_inputs", {"seed": -1}, ValueError, "seed"),
])
def test_bad_arguments_are_refused_by_name(name, kwargs, error, word):
    function, sizes, _ = TINY[name]
    with pytest.raises(error, match=word):
        function(**{**sizes, **FAST, **kwargs})


@pytest.mark.parametrize("bad, error", [([], TypeError), ({"experiment": "x"}, ValueError)])
def test_summary_and_chart_refuse_what_is_not_a_result(bad, error):
    with pytest.raises(error, match="result"):
        cpu_speed.summary(bad)
    with pytest.raises(error, match="result"):
        cpu_speed.chart(bad)


def test_summary_says_when_it_cannot_tell_how_busy_the_cpus_were(results):
    text = cpu_speed.summary({**results["combined_inputs"], "busy_elsewhere": None})
    assert "cannot be read here" in text
    assert "disturbed" in cpu_speed.summary({**results["combined_inputs"], "busy_elsewhere": 0.5})


def test_thread_pools_are_held_at_the_stated_count():
    result = cpu_speed.combined_inputs(batch=3, seq_len=5, input_size=7, hidden=13, repeats=3, max_seconds=0.1,
                                       progress=False)
    assert result["threads"] == 1
    assert "held at 1 thread each (threadpoolctl)" in cpu_speed.summary(result)
    with pytest.raises(ValueError, match="threads"):
        cpu_speed.stacked_gemms(batch=3, input_size=7, hidden=13, threads=0)
