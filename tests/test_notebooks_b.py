"""What notebook 06 adds to the library: the GEMM with B in each layout, as cases of the kernel
runner's versions 2 and 3 (kernels/runner.py), and the runner's one tolerance table."""

import numpy as np

import fastlstm_lib as fl
from fastlstm_lib.kernels import gemm, runner
from fastlstm_lib.kernels.case import Unavailable
from fastlstm_lib.kernels.gemm.tiles import B_LAYOUTS


def test_every_layout_of_b_is_a_checked_case_of_versions_2_and_3():
    for number in (2, 3):
        rows = runner.measure(runner.select("gemm", number)[0], sizes=("odd",))
        first = [row for row in rows if row["shape"] == rows[0]["shape"]]
        # the plain run is B stored (K, N); the others name their layout
        assert [row["variant"] for row in first] == ["", *(label for label, _, _ in B_LAYOUTS[1:])], number
        assert all(row["relative_error"] <= row["rtol"] == fl.RTOL for row in first)


def test_the_weight_gradient_is_checked_to_the_backward_tolerance():
    cases = gemm.weight_gradient_cases((3, 5, 7), np.random.default_rng(0))
    assert set(cases) == {"per_step", "all_steps"}
    for case in cases.values():
        assert case.rtol == fl.numerics.TOLERANCES["backward"] == fl.backward.reference.BACKWARD_RTOL
        assert runner.checked(case) <= case.rtol


def test_cublas_is_the_gemm_familys_version_0_and_says_why_it_cannot_run():
    (version,) = runner.select("gemm", 0)
    assert version.kernel == "cublas" and version.specs == (gemm.v0_cublas.SPEC,)
    if fl.is_simulator():
        import pytest

        with pytest.raises(Unavailable, match="cuBLAS needs a real GPU"):
            runner.measure(version, sizes=("odd",))
