"""The baseline step on the simulator at odd sizes, and the GEMM kernel it is built on."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels.gemm import gemm, tiled_gemm
from fastlstm_lib.kernels.gemm.tiles import Blocking
from conftest import ODD, problem


@pytest.fixture(scope="module")
def baseline_output(odd_problem):
    x, params, _ = odd_problem
    return fl.steps.get("baseline").forward(x, params)


def test_baseline_is_first():
    assert fl.steps.names()[0] == "baseline"


def test_baseline_equals_reference(odd_problem, baseline_output):
    _, _, ref = odd_problem
    assert baseline_output.dtype == np.float32 and baseline_output.shape == ref.shape
    assert fl.relative_error(baseline_output, ref) <= 1e-5


def test_baseline_equals_keras(odd_problem, baseline_output, keras_available):
    x, params, _ = odd_problem
    assert fl.relative_error(baseline_output, fl.keras_forward(x, params).astype(np.float64)) <= 1e-5


def test_baseline_single_layer_batch_of_one():
    cfg = fl.LSTMConfig(batch=1, seq_len=3, input_size=5, hidden=6, layers=1)
    x, params = problem(cfg, seed=7)
    y = fl.steps.get("baseline").forward(x, params)
    assert fl.relative_error(y, fl.reference_forward(x, params)) <= 1e-5


SHAPES = [(3, 7, 13), (1, 1, 1), (17, 5, 2), (5, 33, 19)]


def check_gemm(launch, m, k, n, transpose_b=False):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    stored = np.ascontiguousarray(b.T) if transpose_b else b
    c = cuda.to_device(rng.standard_normal((m, n)).astype(np.float32))  # garbage: must be overwritten
    launch(cuda.to_device(a), cuda.to_device(stored), c)
    np.testing.assert_allclose(c.copy_to_host(), a @ b, rtol=1e-5, atol=1e-5)
    launch(cuda.to_device(a), cuda.to_device(stored), c, accumulate=True)
    np.testing.assert_allclose(c.copy_to_host(), 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transpose_b, strided_b", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("blocking", [None, Blocking(bm=16, bn=8, bk=4, tm=4, tn=2)])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_blocked_gemm_any_size(m, k, n, blocking, transpose_b, strided_b):
    def launch(a, b, c, **kw):
        gemm(a, b, c, transpose_b=transpose_b, strided_b=strided_b, blocking=blocking, **kw)

    check_gemm(launch, m, k, n, transpose_b)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_blocked_gemm_gpu_blocking_on_one_block(transpose_b):
    # The GPU's 64 x 64 blocking (256 threads, ~40 ms a launch here): one block, every edge case.
    def launch(a, b, c, **kw):
        gemm(a, b, c, transpose_b=transpose_b, blocking=Blocking(bm=64, bn=64, bk=8, tm=4, tn=4), **kw)

    check_gemm(launch, 5, 11, 19, transpose_b)


@pytest.mark.parametrize("tile", [4, 16])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_tiled_gemm_any_size(tile, m, k, n):
    if tile == 16 and m * n > 100:
        pytest.skip("16x16 blocks cost ~40 ms each on the simulator; the small shapes cover the edges")

    def launch(a, b, c, **kw):
        tiled_gemm(a, b, c, tile=tile, **kw)

    check_gemm(launch, m, k, n)


def test_gemm_reads_strided_views():
    # The baseline's gate weights are column slices of one (in, 4H) matrix.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 7)).astype(np.float32)
    w = rng.standard_normal((7, 4 * 13)).astype(np.float32)
    w_device = cuda.to_device(w)
    c = cuda.device_array((3, 13), np.float32)
    gemm(cuda.to_device(a), w_device[:, 26:39], c)
    np.testing.assert_allclose(c.copy_to_host(), a @ w[:, 26:39], rtol=1e-5, atol=1e-5)
    # ... and one gate's rows of the transposed (4H, in) matrix, read with the 'T' flag.
    gemm(cuda.to_device(a), cuda.to_device(np.ascontiguousarray(w.T))[26:39], c, transpose_b=True)
    np.testing.assert_allclose(c.copy_to_host(), a @ w[:, 26:39], rtol=1e-5, atol=1e-5)


def test_gemm_rejects_shapes_that_do_not_chain():
    a = cuda.device_array((3, 4), np.float32)
    b = cuda.device_array((5, 6), np.float32)
    with pytest.raises(ValueError, match="don't chain"):
        gemm(a, b, cuda.device_array((3, 6), np.float32))
    with pytest.raises(ValueError, match="transposed"):
        gemm(a, b, cuda.device_array((3, 5), np.float32), transpose_b=True)


@pytest.mark.parametrize("blocking_name", ["GPU_LARGE", "GPU_SMALL"])
@pytest.mark.parametrize("store", ["A", "B plain", "B transposed"])
def test_a_warps_shared_tile_stores_hit_32_banks(blocking_name, store):
    """The 32 threads of a warp store one element each into a shared tile: with the tiles' row
    stride of bm (or bn) + SHARED_PADDING words, in 32 different banks (no bank conflict)."""
    from fastlstm_lib.kernels import gemm as g

    blocking = getattr(g, blocking_name)
    for first in range(0, blocking.threads, 32):
        banks = set()
        for e in range(first, first + 32):  # the loaders' index arithmetic for element e
            if store == "A":
                row, column, stride = e % blocking.bk, e // blocking.bk, blocking.bm + g.SHARED_PADDING
            elif store == "B plain":
                row, column, stride = e // blocking.bn, e % blocking.bn, blocking.bn + g.SHARED_PADDING
            else:
                row, column, stride = e % blocking.bk, e // blocking.bk, blocking.bn + g.SHARED_PADDING
            banks.add((row * stride + column) % 32)
        assert len(banks) == 32
