"""The ladder's GEMM policy (fastlstm_lib/steps/gemm_policy.py): one policy for a whole pass, the
same in every step; the default "2016" launches what cuBLAS-era code launched (exact-tile version
3, K whole), "fast" the 128-bit and split-K versions where the layouts allow; bad names refused."""

import pytest

import fastlstm_lib as fl
from fastlstm_lib.kernels.versions import every
from fastlstm_lib.steps.gemm_policy import DEFAULT, POLICIES, checked_policy


def gemm_versions(step, **options):
    profile = fl.profile(step, chip="H100", **options)
    numbers = {spec.name: spec.number for spec in every() if spec.family == "gemm"}
    return sorted({numbers[launch.kernel] for launch in profile.launches if launch.kernel in numbers})


def test_the_default_policy_launches_one_version_in_every_step():
    assert DEFAULT == "2016" and checked_policy(None) is POLICIES["2016"]
    for step in fl.steps.names():
        assert gemm_versions(step) == [3], step


def test_the_fast_policy_changes_only_what_the_layouts_allow():
    assert gemm_versions("combined_gemms", gemms="fast") == [3]  # weights read with the 'T' flag: nothing to vectorize
    assert gemm_versions("pretransposed", gemms="fast") == [3, 7]  # the recurrent GEMM split; the input GEMM 32 x 32
    # at the article's chunk (2 steps, 128 rows) the input GEMM is 32 x 32 on the H100, as in step 06; one
    # input GEMM for the whole sequence (6400 rows) runs 128 x 128 with 128-bit loads
    assert gemm_versions("combined_inputs", gemms="fast") == [3, 7]
    assert gemm_versions("combined_inputs", gemms="fast", chunk=100) == [5, 7]
    assert gemm_versions("wavefront", gemms="fast", splits=1) == [3, 5]  # asked for whole, the recurrent GEMM stays 3


def test_steps_compute_the_same_with_either_policy():
    cfg = fl.LSTMConfig(batch=3, seq_len=4, input_size=5, hidden=7, layers=2)
    x, params = fl.random_input(cfg, seed=1), fl.init_params(cfg, seed=0)
    ref = fl.reference_forward(x, params)
    for policy in POLICIES:
        y = fl.steps.get("wavefront").forward(x, params, gemms=policy)
        assert fl.relative_error(y, ref) <= fl.RTOL, policy


def test_bad_policies_are_named():
    with pytest.raises(ValueError, match="gemms must be one of"):
        checked_policy("2017")
    with pytest.raises(TypeError, match="gemms must be one of"):
        checked_policy(2016)
    with pytest.raises(ValueError, match="gemms must be one of"):
        fl.profile("baseline", chip="H100", gemms="cublas")
