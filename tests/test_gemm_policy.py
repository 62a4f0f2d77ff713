"""The ladder's GEMM policy (fastlstm_lib/steps/gemm_policy.py): one policy for a whole pass, the
same in every step; the default "2016" launches what cuBLAS-era code launched (exact-tile version
3, K whole), "fast" the 128-bit and split-K versions where the layouts allow (the recurrent GEMM's
version 8 where it fits, else 7, else 6); bad names refused."""

import dataclasses

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels.gemm import launch, v7_recurrent as v7, v8_warptiled as v8
from fastlstm_lib.kernels.gemm.tiles import GPU_LARGE, SIMULATOR_BLOCKING, Blocking
from fastlstm_lib.kernels.versions import every
from fastlstm_lib.steps.gemm_policy import DEFAULT, POLICIES, checked_policy


def gemm_versions(step, cfg=None, **options):
    profile = fl.profile(step, cfg, chip="H100", **options)
    numbers = {spec.name: spec.number for spec in every() if spec.family == "gemm"}
    return sorted({numbers[launch.kernel] for launch in profile.launches if launch.kernel in numbers})


def test_the_default_policy_launches_one_version_in_every_step():
    assert DEFAULT == "2016" and checked_policy(None) is POLICIES["2016"]
    for step in fl.steps.names():
        assert gemm_versions(step) == [3], step


def test_the_fast_policy_changes_only_what_the_layouts_allow():
    assert gemm_versions("combined_gemms", gemms="fast") == [3]  # weights read with the 'T' flag: nothing to vectorize
    assert gemm_versions("pretransposed", gemms="fast") == [3, 8]  # the recurrent GEMM split; the input GEMM 32 x 32
    # at the article's chunk (2 steps, 128 rows) the input GEMM is 32 x 32 on the H100, as in step 06; one
    # input GEMM for the whole sequence (6400 rows) runs 128 x 128 with 128-bit loads
    assert gemm_versions("combined_inputs", gemms="fast") == [3, 8]
    assert gemm_versions("combined_inputs", gemms="fast", chunk=100) == [5, 8]
    assert gemm_versions("wavefront", gemms="fast", splits=1) == [3, 5]  # asked for whole, the recurrent GEMM stays 3


def test_the_fast_policys_recurrent_gemm_is_version_8_where_it_fits_else_7_else_6():
    """``gemm_split``'s choice (``launch.recurrent_kernel``): version 8 on the 64 x 64 patch at the
    article's recurrent GEMM (K in 8 parts) and on the simulator's tile (one part-warp of 4 x 4
    threads); version 7 on a tile of no whole 8 x 4 warps (version 8's one condition beyond 7's);
    neither (version 6) where a part of K is an odd number of slabs. Under "fast" on an H100: batch
    64 runs version 8; batch 32, which no 64-row patch divides, version 6."""
    no_warps = Blocking(bm=8, bn=16, bk=4, tm=2, tn=2)  # 4 x 8 threads
    assert launch.recurrent_kernel(GPU_LARGE, 64, 2048, 512, 8) is v8.warptiled_gemm_kernel
    assert launch.recurrent_kernel(SIMULATOR_BLOCKING, 8, 64, 16, 2) is v8.warptiled_gemm_kernel
    assert not v8.warp_tiled(no_warps) and launch.recurrent_kernel(no_warps, 8, 16, 16, 2) is v7.recurrent_gemm_kernel
    assert launch.recurrent_kernel(GPU_LARGE, 64, 2048, 3 * 2 * 8, 2) is None  # 3 slabs a part
    assert gemm_versions("pretransposed", gemms="fast") == [3, 8]
    assert gemm_versions("pretransposed", dataclasses.replace(fl.LSTMConfig.article(), batch=32), gemms="fast") == [3, 6]


def test_gemm_split_launches_version_7_where_only_it_fits(monkeypatch):
    """With a recurrent tile version 8 cannot lay out in warps, ``gemm_split`` launches version 7,
    each part its share of the product."""
    no_warps = Blocking(bm=8, bn=16, bk=4, tm=2, tn=2)
    monkeypatch.setattr(launch, "recurrent_blocking", lambda: no_warps)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    parts = cuda.to_device(np.full((2, 8, 16), np.nan, np.float32))
    with fl.count_launches() as launches:
        launch.gemm_split(cuda.to_device(a), cuda.to_device(b), parts)
    assert dict(launches) == {"recurrent_gemm": 1}
    for s, got in enumerate(parts.copy_to_host()):
        assert fl.relative_error(got, a[:, 8 * s:8 * (s + 1)].astype(np.float64) @ b[8 * s:8 * (s + 1)]) <= 1e-5


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
