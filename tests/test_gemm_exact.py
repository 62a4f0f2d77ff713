"""The exact-tile GEMM (kernels/gemm/v3_exact.py): launched only where the tile divides the shape,
and then equal to the checked kernel's result, for every blocking and layout, on strided views."""

import numpy as np
import pytest
from numba import cuda

from fastlstm_lib.kernels import gemm as g
from fastlstm_lib.kernels.gemm import divides
from fastlstm_lib.kernels.gemm.v4_prefetch import prefetch_gemm_kernel
from fastlstm_lib.kernels.gemm.v5_vector import vector_gemm_kernel

LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]  # (transpose_a, transpose_b)


def launched_kernels(monkeypatch):
    """Which factory built each kernel ``gemm()`` launched: 'exact' or 'checked'."""
    seen = []
    exact, checked = g.exact_gemm_kernel, g.blocked_gemm_kernel
    monkeypatch.setattr(g.launch, "exact_gemm_kernel", lambda *a: seen.append("exact") or exact(*a))
    monkeypatch.setattr(g.launch, "blocked_gemm_kernel", lambda *a: seen.append("checked") or checked(*a))
    return seen


def run(m, k, n, transpose_a, transpose_b, blocking=None, strided=False, seed=0, strided_b=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    stored_a = np.ascontiguousarray(a.T) if transpose_a else a
    stored_b = np.ascontiguousarray(b.T) if transpose_b else b
    if strided:  # every other column of a wider matrix, as one gate's columns are
        def widen(x):
            wide = np.full((x.shape[0], 2 * x.shape[1]), np.nan, np.float32)
            wide[:, ::2] = x
            return cuda.to_device(wide)[:, ::2]
        da, db = widen(stored_a), widen(stored_b)
    else:
        da, db = cuda.to_device(stored_a), cuda.to_device(stored_b)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))  # poisoned: every element must be written
    g.gemm(da, db, c, transpose_a=transpose_a, transpose_b=transpose_b, blocking=blocking, strided_b=strided_b)
    np.testing.assert_allclose(c.copy_to_host(), a @ b, rtol=1e-5, atol=1e-5)
    g.gemm(da, db, c, accumulate=True, transpose_a=transpose_a, transpose_b=transpose_b, blocking=blocking,
           strided_b=strided_b)
    np.testing.assert_allclose(c.copy_to_host(), 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_exact_equals_the_product_on_the_simulators_blocking(monkeypatch, transpose_a, transpose_b):
    seen = launched_kernels(monkeypatch)
    run(16, 12, 24, transpose_a, transpose_b, blocking=g.SIMULATOR_BLOCKING, strided=True)
    assert seen == ["exact", "exact"]


def test_exact_loads_a_transposed_b_in_the_naive_order_too(monkeypatch):
    # Notebook 06 compares the two loaders of a transposed B: at the same instruction overhead.
    seen = launched_kernels(monkeypatch)
    run(16, 12, 24, False, True, blocking=g.SIMULATOR_BLOCKING, strided_b=True)
    assert seen == ["exact", "exact"]


@pytest.mark.parametrize("blocking", [g.GPU_SMALL, g.GPU_LARGE, g.GPU_WIDE], ids=["small", "large", "wide"])
def test_exact_equals_the_product_on_a_gpus_blockings(monkeypatch, blocking):
    # One block of 256 threads each (~40 ms a launch here), two slabs of K, B transposed.
    seen = launched_kernels(monkeypatch)
    run(blocking.bm, 2 * blocking.bk, blocking.bn, False, True, blocking=blocking, seed=1)
    assert seen == ["exact", "exact"]


@pytest.mark.parametrize("m, k, n", [(16, 12, 23), (15, 12, 24), (16, 13, 24)])
def test_a_shape_the_tile_does_not_divide_runs_the_checked_kernel(monkeypatch, m, k, n):
    seen = launched_kernels(monkeypatch)
    run(m, k, n, False, False, blocking=g.SIMULATOR_BLOCKING)
    assert seen == ["checked", "checked"]


def test_the_wide_blocking_is_chosen_only_where_it_divides_and_fills_the_gpu():
    assert g.gpu_blocking(6400, 2048, 512, 132) == g.GPU_WIDE  # the article's input GEMM on an H100
    assert g.gpu_blocking(6400, 2048, 516, 132) == g.GPU_LARGE  # K not a multiple of 8
    assert g.gpu_blocking(6400, 2040, 512, 132) == g.GPU_LARGE  # N not a multiple of 128
    assert g.gpu_blocking(512, 512, 512, 40) == g.GPU_LARGE  # 16 wide blocks would leave a T4's SMs idle
    assert g.gpu_blocking(64, 2048, 512, 132) == g.GPU_SMALL  # the recurrent GEMM
    assert divides(g.GPU_WIDE, 128, 128, 8) and not divides(g.GPU_WIDE, 128, 128, 4)


@pytest.mark.parametrize("accumulate", [False, True])
def test_the_prefetching_and_vector_versions_equal_the_exact_tile_one_bit_for_bit(accumulate):
    """Versions 4 and 5 add every k in version 3's order: the same result to the bit, over several slabs."""
    blocking = g.choose_blocking(16, 24, 20)
    m, n, k = 2 * blocking.bm, 3 * blocking.bn, 5 * blocking.bk
    rng = np.random.default_rng(4)
    a, b, c0 = (rng.standard_normal(shape).astype(np.float32) for shape in ((m, k), (k, n), (m, n)))
    out = {}
    for name, kernel in (("exact", g.exact_gemm_kernel(blocking, False, False, g.SHARED_PADDING)),
                         ("prefetch", prefetch_gemm_kernel(blocking, g.SHARED_PADDING)),
                         ("vector", vector_gemm_kernel(blocking, g.SHARED_PADDING))):
        c = cuda.to_device(c0 if accumulate else np.full((m, n), np.nan, np.float32))
        kernel[(n // blocking.bn, m // blocking.bm), blocking.threads](cuda.to_device(a), cuda.to_device(b), c, accumulate)
        out[name] = c.copy_to_host()
    assert np.array_equal(out["exact"], out["prefetch"]) and np.array_equal(out["exact"], out["vector"])
    want = a.astype(np.float64) @ b + (c0 if accumulate else 0)
    from fastlstm_lib.numerics import relative_error

    assert relative_error(out["prefetch"], want) <= 1e-5
