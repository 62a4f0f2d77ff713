"""The "tf32" GEMM policy (fastlstm_lib/steps/gemm_policy.py, issue 68): the "fast" policy's kernels
with the products on TF32 tensor cores (GEMM version 9) where its patch divides the shape; every
step equal to the float64 reference and to Keras' layer within ``TOLERANCES["tf32"]``; refused,
naming why, on a GPU older than compute capability 8.0. On the simulator version 9 runs its
stand-ins (``kernels/mma``): one warp of 32 x 32 outputs, so 32 divides every size of ``FITS``."""

import dataclasses

import pytest

import fastlstm_lib as fl
from fastlstm_lib.numerics import TOLERANCES
from fastlstm_lib.steps.gemm_policy import POLICIES, checked_policy, offered_policy

from conftest import ODD, problem

#: Sizes version 9's simulator patch (32 x 32, slabs of 16) divides: batch, 4H, H and the input.
FITS = fl.LSTMConfig(batch=32, seq_len=3, input_size=32, hidden=32, layers=2)
TF32 = TOLERANCES["tf32"]


def test_the_policy_is_fast_with_tensor_cores_and_the_tf32_tolerance():
    fast, tf32 = POLICIES["fast"], POLICIES["tf32"]
    assert tf32.tf32 and not fast.tf32 and not POLICIES["2016"].tf32
    assert (tf32.vector, tf32.split, tf32.registers) == (fast.vector, fast.split, fast.registers)
    assert tf32.rtol == TF32 and fast.rtol == POLICIES["2016"].rtol == fl.RTOL
    assert "FP32" in tf32.what and "input GEMM" in tf32.what
    step = fl.steps.get("wavefront")
    assert step.tolerance(gemms="tf32") == TF32 and step.tolerance(gemms="fast") == step.tolerance() == fl.RTOL
    backward = fl.backward.get(fl.backward.names()[0])
    assert backward.tolerance() == backward.rtol  # a wider tolerance of its own is kept


@pytest.mark.parametrize("name", fl.steps.names())
def test_every_step_at_odd_sizes_runs_fast_kernels_within_the_tf32_tolerance(name, odd_problem, keras_available):
    """At odd sizes version 9's patch divides nothing: the "fast" policy's FP32 kernels run."""
    x, params, ref = odd_problem
    with fl.count_launches() as launches:
        y = fl.steps.get(name).forward(x, params, gemms="tf32")
    assert "tf32_gemm" not in launches
    assert fl.relative_error(y, ref) <= TF32
    assert fl.relative_error(y, fl.keras_forward(x, params)) <= TF32


@pytest.fixture(scope="module")
def fits_problem():
    x, params = problem(FITS)
    return x, params, fl.reference_forward(x, params)


@pytest.mark.parametrize("name, launched", [("pretransposed", 2 * 3 + 2 * 3), ("combined_inputs", 2 * 2 + 2 * 3),
                                            ("wavefront", 1 + 2 + 2 * 3), ("persistent", 2)])
def test_where_version_9_fits_it_computes_the_products(name, launched, fits_problem, keras_available):
    """Steps 06-08: every recurrent GEMM (one a layer-step) and every input GEMM (one a step in 06,
    one a chunk of 2 steps in 07-08, all of layer 0's at once in 08) on tensor cores; step 09: its
    input GEMMs (one a layer)."""
    x, params, ref = fits_problem
    with fl.count_launches() as launches:
        y = fl.steps.get(name).forward(x, params, gemms="tf32")
    assert launches["tf32_gemm"] == launched, dict(launches)
    assert fl.relative_error(y, ref) <= TF32
    assert fl.relative_error(y, fl.keras_forward(x, params)) <= TF32


def test_steps_02_to_05_read_the_weights_transposed_so_stay_fp32():
    x, params = problem(dataclasses.replace(FITS, seq_len=2, layers=1))
    ref = fl.reference_forward(x, params)
    with fl.count_launches() as launches:
        y = fl.steps.get("fused_pointwise").forward(x, params, gemms="tf32")
    assert "tf32_gemm" not in launches and fl.relative_error(y, ref) <= fl.RTOL


def test_the_harness_checks_and_reports_the_policy_s_tolerance():
    cfg = fl.LSTMConfig(batch=32, seq_len=2, input_size=32, hidden=32, layers=1)
    result = fl.bench("pretransposed", cfg, warmup=0, repeats=1, gemms="tf32")
    assert result["relative_error"]["rtol"] == TF32
    assert fl.RTOL < result["relative_error"]["before"] <= TF32  # TF32 products: beyond float32's tolerance
    assert fl.bench("baseline", ODD, warmup=0, repeats=1, gemms="tf32")["relative_error"]["rtol"] == TF32


@pytest.mark.parametrize("chip, cc", [("M40", "5.2"), ("T4", "7.5")])
@pytest.mark.parametrize("step", ["baseline", "wavefront", "persistent"])
def test_a_gpu_older_than_ampere_is_refused_naming_why(chip, cc, step):
    with pytest.raises(ValueError) as refused:
        fl.profile(step, chip=chip, gemms="tf32")
    message = str(refused.value)
    for words in ("gemms='tf32'", f"the {chip}", f"compute capability {cc}", "8.0"):
        assert words in message, (words, message)


@pytest.mark.parametrize("chip", ["A100", "H100"])
def test_ampere_and_newer_lay_version_9_out(chip):
    profile = fl.profile("wavefront", chip=chip, gemms="tf32")
    assert profile.kernels()["tf32_gemm"] > 0 and "recurrent_gemm" not in profile.kernels()
    assert profile.options == {"gemms": "tf32"}


def test_the_simulator_offers_every_policy_and_bad_names_are_still_refused():
    """(tests/test_gemm_policy.py refuses other bad names through ``checked_policy``.)"""
    assert all(offered_policy(name) is checked_policy(name) for name in POLICIES)
    for bad, error in (("TF32", ValueError), (32, TypeError)):
        with pytest.raises(error, match="gemms must be one of"):
            fl.profile("wavefront", chip="H100", gemms=bad)
