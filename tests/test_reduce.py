"""The column sum (kernels/reduce/, notebook 41's db): equal to NumPy's float64 sum at odd sizes,
on strided views, with and without accumulate, the output poisoned first; bad arguments named
before any launch."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels import reduce


@pytest.mark.parametrize("rows, cols", [(1, 1), (reduce.ROW_THREADS - 1, 5), (37, 2 * reduce.COLUMNS + 3)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_column_sum_equals_numpy_on_strided_views(rows, cols, accumulate):
    rng = np.random.default_rng(rows * cols)
    whole = rng.standard_normal((rows + 3, cols + 5)).astype(np.float32)
    before = rng.standard_normal(cols).astype(np.float32) if accumulate else np.full(cols, np.nan, np.float32)
    a = cuda.to_device(whole)[2:rows + 2, 1:cols + 1]  # a view inside a larger matrix
    out_whole = cuda.to_device(np.concatenate([before, np.full(3, np.nan, np.float32)]))
    with fl.count_launches() as launches:
        reduce.column_sum(a, out_whole[:cols], accumulate=accumulate)
    result = out_whole.copy_to_host()
    expected = whole[2:rows + 2, 1:cols + 1].astype(np.float64).sum(axis=0) + (before if accumulate else 0)
    assert np.allclose(result[:cols], expected, rtol=1e-5, atol=1e-5) and np.isnan(result[cols:]).all()
    assert launches == {"column_sum": 1}


def test_column_sum_is_the_same_on_every_run():
    a = cuda.to_device(np.random.default_rng(1).standard_normal((29, 7)).astype(np.float32))
    results = []
    for _ in range(2):
        out = cuda.device_array(7, dtype=np.float32)
        reduce.column_sum(a, out)
        results.append(out.copy_to_host())
    assert np.array_equal(*results)  # no atomics: the same additions in the same order


@pytest.mark.parametrize("call, error, words", [
    (lambda a, out: reduce.column_sum(np.zeros((3, 4), np.float32), out), TypeError, "a must be a device array"),
    (lambda a, out: reduce.column_sum(a[0], out), ValueError, "a must be 2-D, got shape (4,)"),
    (lambda a, out: reduce.column_sum(a, cuda.device_array((1, 4), np.float32)), ValueError, "out must be 1-D"),
    (lambda a, out: reduce.column_sum(a, cuda.device_array(3, np.float32)), ValueError,
     "out must hold one value per column of a (4), got shape (3,)"),
    (lambda a, out: reduce.column_sum(cuda.device_array((3, 4), np.float64), out), TypeError,
     "a must have dtype float32, got float64"),
    (lambda a, out: reduce.column_sum(a, out, accumulate=1), TypeError, "accumulate must be True or False"),
])
def test_bad_arguments_are_named_before_any_launch(call, error, words):
    a, out = cuda.device_array((3, 4), np.float32), cuda.device_array(4, np.float32)
    with fl.count_launches() as launches, pytest.raises(error) as raised:
        call(a, out)
    assert words in str(raised.value) and not launches


def test_row_threads_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="row_threads must be a power of two, got 6"):
        reduce.column_sum_kernel(6)
