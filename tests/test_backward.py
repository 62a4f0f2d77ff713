"""The backward ladder (notebook 41): every step's gradients equal the float64 reference at odd
sizes, NaN-poisoned outputs show anything unwritten, and each step makes the launches it promises."""

import json

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib import backward as bw
from fastlstm_lib.backward.bwd04_combined_weights import BackwardCombinedWeights
from fastlstm_lib.kernels.gemm import gemm
from fastlstm_lib.steps.resources import scratch
from conftest import MINI, problem

LADDER = ["bwd_op_by_op", "bwd_fused_pointwise", "bwd_combined_gemms", "bwd_combined_weights", "bwd_wavefront"]

#: Odd everywhere (no multiple of any tile or block), 2 layers, and 3 steps, so that the
#: wavefront's default chunk (1 step) gives 3 chunks. The op-by-op step makes ~200 launches.
SMALL = fl.LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2)


@pytest.fixture(scope="module")
def ladder_runs():
    """Each step's TrainingResult and launch Counter on SMALL, computed once."""
    x, params = problem(SMALL)
    runs = {}
    for name in LADDER:
        with fl.count_launches() as launches:
            result = bw.get(name).train(x, params, bw.output_gradient(SMALL))
        runs[name] = (result, launches)
    return runs


@pytest.fixture(scope="module")
def small_reference():
    x, params = problem(SMALL)
    return bw.reference_training(x, params, bw.output_gradient(SMALL))


def test_ladder_order():
    assert bw.names() == LADDER
    assert bw.reference_backward is fl.reference_backward
    assert [bw.previous(name) for name in LADDER[1:]] == [bw.get(name) for name in LADDER[:-1]]


@pytest.mark.parametrize("name", LADDER)
def test_step_equals_reference(name, ladder_runs, small_reference):
    result, _ = ladder_runs[name]
    assert result.dx.shape == (3, 3, 5) and result.dx.dtype == np.float32
    assert [g.bias.shape for g in result.grads] == [(28,), (28,)]
    errors = bw.gradient_errors(result, small_reference)
    assert max(errors.values()) <= bw.BACKWARD_RTOL, errors


def per_layer_launches(name, T, L, K):
    """Launches of one forward + backward pass: the formula each module's docstring gives."""
    forward = L + 1 + (L - 1) * K + 2 * L * T  # fills, input GEMMs (per chunk above layer 0), GEMM + cell
    backward = {
        "bwd_op_by_op": L * (5 + 34 * T - 8),  # 5 fills; 14 element-wise + 20 GEMMs; step 0: no dh_rec, dU
        "bwd_fused_pointwise": L * (5 + 21 * T - 8),
        "bwd_combined_gemms": L * (5 + 6 * T - 2),
        "bwd_combined_weights": L * (2 + 2 * T - 1 + 4),  # 2 fills; cell + dh_rec GEMM; dW, dU, db (a column sum), dx
        "bwd_wavefront": L * (2 + 2 * T - 1 + 3) + 1 + (L - 1) * K,  # dx per chunk above layer 0
    }[name]
    return forward + backward


@pytest.mark.parametrize("name", LADDER)
def test_launch_counts(name, ladder_runs):
    _, launches = ladder_runs[name]
    chunk = fl.steps.get("wavefront").default_chunk(3)  # the article's 2 steps: chunks [0, 2) and [2, 3)
    assert sum(launches.values()) == per_layer_launches(name, T=3, L=2, K=-(-3 // chunk))


def test_fused_steps_launch_one_cell_kernel_per_layer_step(ladder_runs):
    for name in LADDER[1:]:
        assert ladder_runs[name][1]["_lstm_cell_backward"] == SMALL.layers * SMALL.seq_len


def test_db_is_a_column_sum_from_step_4_on(ladder_runs):
    """Steps 1-3 sum dz's rows with a GEMM of a row of ones (per step); steps 4-5 with one column sum per layer."""
    assert [ladder_runs[name][1]["column_sum"] for name in LADDER] == [0, 0, 0, SMALL.layers, SMALL.layers]


def test_wavefront_with_three_layers_and_uneven_chunks():
    cfg = fl.LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=3)
    x, params = problem(cfg, seed=6)
    dy = bw.output_gradient(cfg)
    result = bw.get("bwd_wavefront").train(x, params, dy, chunk=2)  # chunks of 2 and 1 steps
    errors = bw.gradient_errors(result, bw.reference_training(x, params, dy))
    assert max(errors.values()) <= bw.BACKWARD_RTOL, errors


def test_backward_api_matches_reference_backward():
    cfg = fl.LSTMConfig(batch=1, seq_len=1, input_size=3, hidden=5, layers=1)  # one step: dU = 0
    x, params = problem(cfg)
    dy = np.random.default_rng(3).standard_normal((1, 1, 5)).astype(np.float32)
    dx, grads = bw.get("bwd_combined_weights").backward(x, params, dy)
    ref_dx, ref_grads = fl.reference_backward(x, params, dy)
    assert fl.relative_error(dx, ref_dx) <= bw.BACKWARD_RTOL
    assert not grads[0].recurrent_kernel.any()
    assert all(fl.relative_error(a, b) <= bw.BACKWARD_RTOL for a, b in zip(grads[0], ref_grads[0]))


@pytest.mark.parametrize("timed", ["forward+backward", "backward"])
def test_bench_checks_and_times_a_backward_step(timed):
    result = fl.bench(bw.get("bwd_wavefront"), MINI, warmup=1, repeats=2, timed=timed)
    assert result["step"] == "bwd_wavefront" and result["options"] == {"timed": timed}
    assert result["relative_error"]["rtol"] == bw.BACKWARD_RTOL
    assert result["relative_error"]["after"] <= bw.BACKWARD_RTOL
    forward = fl.flops(MINI)
    assert result["flop"] == bw.base.backward_flops(MINI) + (forward if timed == "forward+backward" else 0)
    json.dumps(result)


class ForgetsTheBias(BackwardCombinedWeights):
    """Writes the bias gradient somewhere else: the NaN poison left in the real one must show."""

    name = "forgets_the_bias"

    def weight_products(self, state, layer, xs, hs, stream):
        grads = state.grads[layer]
        real, grads.bias = grads.bias, scratch(grads.bias.shape)
        super().weight_products(state, layer, xs, hs, stream)
        grads.bias = real


def test_bench_refuses_unwritten_gradients():
    with pytest.raises(fl.WrongResultError, match="wrong before timing"):
        fl.bench(ForgetsTheBias(), MINI)


def test_changes_show_what_each_step_overrides():
    assert "def cell_backward" in bw.changes("bwd_fused_pointwise")
    assert "def step_products" in bw.changes("bwd_combined_gemms")
    assert "def weight_products" in bw.changes("bwd_combined_weights")
    assert "def run_backward" in bw.changes("bwd_wavefront")
    assert "def run_chunk" not in bw.changes("bwd_wavefront")


@pytest.mark.parametrize("kwargs, error, words", [
    ({"timed": "forward"}, ValueError, "timed must be one of"),
    ({"dy": np.zeros((1, 2, 4), np.float32)}, ValueError, "dy must have the forward output's shape"),
    ({"dy": np.zeros((1, 2, 5), np.float64)}, TypeError, r"dy must have dtype float32, got float64"),
    ({"dy": None}, TypeError, r"dy is required: the gradient of the loss .* got None"),
])
def test_bad_options_and_dy(kwargs, error, words):
    x, params = problem(MINI)
    kwargs = {"dy": bw.output_gradient(MINI), **kwargs}
    with pytest.raises(error, match=words):
        bw.get("bwd_wavefront").train(x, params, **kwargs)


@pytest.mark.parametrize("call", [
    lambda x, params: fl.reference_backward(x, params, None),
    lambda x, params: bw.reference_training(x, params, None),
    lambda x, params: bw.get("bwd_op_by_op").runner(x, params),
    lambda x, params: bw.get("bwd_op_by_op").backward(x, params, None),
])
def test_a_missing_gradient_is_a_type_error_not_a_random_one(call):
    x, params = problem(MINI)
    with pytest.raises(TypeError, match="dy is required"):
        call(x, params)


def test_bad_x_gets_validate_input_words():
    x, params = problem(MINI)
    with pytest.raises(TypeError, match=r"x must have dtype float32, got float64"):
        bw.get("bwd_fused_pointwise").train(x.astype(np.float64), params, bw.output_gradient(MINI))
    with pytest.raises(ValueError, match="unknown backward step 'nope'"):
        bw.get("nope")


@pytest.mark.parametrize("transpose_b", [False, True])
def test_gemm_reads_a_transposed_a(transpose_b):
    from numba import cuda

    rng = np.random.default_rng(0)
    m, n, k = 5, 11, 7  # odd: every tile has an edge
    a = rng.standard_normal((k, m)).astype(np.float32)  # stored (K, M)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = cuda.to_device(c0)
    gemm(cuda.to_device(a), cuda.to_device(b), c, transpose_a=True, transpose_b=transpose_b, accumulate=True)
    expected = c0 + a.T.astype(np.float64) @ (b.T if transpose_b else b)
    assert np.allclose(c.copy_to_host(), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"A \(7, 5\) transposed @ B"):
        gemm(cuda.to_device(a), cuda.to_device(a), c, transpose_a=True)


def test_gpu_benchmark_refuses_the_simulator_and_checks_its_gemms():
    from fastlstm_lib.backward import benchmark

    if fl.is_simulator():
        with pytest.raises(RuntimeError, match="needs a GPU"):
            benchmark.bench_backward()
    result = benchmark.bench_weight_gradients(MINI, warmup=0, repeats=1)  # checked against NumPy inside
    assert result["per_step_launches"] == MINI.seq_len and result["all_steps_relative_error"] <= 1e-4


def test_backward_steps_hold_their_forward_step_rather_than_inherit_it():
    """A backward step is an LSTMStep that holds ``TrainingForward`` (``forward_step``), not a
    subclass of the forward ladder: changing the wavefront's internals cannot reach the backward
    ladder except through that step's ``setup`` and ``run``."""
    from fastlstm_lib.backward.training_forward import TrainingForward
    from fastlstm_lib.steps.step02_baseline import Baseline

    for name in fl.backward.names():
        step = fl.backward.get(name)
        assert not isinstance(step, Baseline) and isinstance(step.forward_step, TrainingForward), name
        assert len(type(step).__mro__) <= 8, [cls.__name__ for cls in type(step).__mro__]
