"""Version 5 of the GEMM (kernels/gemm/v5_vector.py) and its vector loads (kernels/vector.py): the same sums
as version 3 to the bit, for each vector width and output split; launched only on aligned rows."""

import numpy as np
import pytest
from numba import cuda

from fastlstm_lib.kernels import gemm as g, vector
from fastlstm_lib.kernels.gemm.tiles import Blocking, vector_fits, vector_width
from fastlstm_lib.kernels.gemm.v5_vector import vector_gemm_kernel
from fastlstm_lib.numerics import relative_error
from fastlstm_lib.kernels.versions import every, spec_of

#: (blocking, its vector width): 4 floats and runs of 2 outputs; 2 floats and runs of 1 (the simulator's
#: own blocking); 4 floats and runs of 4, the 128 x 128 patch's split at a size the simulator runs.
BLOCKINGS = [(Blocking(16, 16, 8, 4, 4), 4), (g.SIMULATOR_BLOCKING, 2), (Blocking(16, 16, 4, 8, 8), 4)]


@pytest.mark.parametrize("blocking, width", BLOCKINGS)
def test_the_vector_version_equals_the_exact_tile_one_bit_for_bit(blocking, width):
    assert vector_width(blocking) == width
    m, n, k = 2 * blocking.bm, 3 * blocking.bn, 4 * blocking.bk
    assert vector_fits(blocking, m, n, k)
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a_d, b_d = cuda.to_device(a), cuda.to_device(b)
    assert vector.aligned(a_d, width) and vector.aligned(b_d, width)
    out = {}
    for name, kernel in (("exact", g.exact_gemm_kernel(blocking, False, False, g.SHARED_PADDING)),
                         ("vector", vector_gemm_kernel(blocking, g.SHARED_PADDING))):
        c = cuda.to_device(np.full((m, n), np.nan, np.float32))  # poisoned: every output is written
        kernel[(n // blocking.bn, m // blocking.bm), blocking.threads](a_d, b_d, c, False)
        out[name] = c.copy_to_host()
    assert np.array_equal(out["exact"], out["vector"])
    assert relative_error(out["vector"], a.astype(np.float64) @ b) <= 1e-5


def test_the_vector_loads_return_a_rows_neighbours():
    a = cuda.to_device(np.arange(4 * 8, dtype=np.float32).reshape(4, 8))
    out = cuda.to_device(np.full(4, np.nan, np.float32))
    load = vector.load_vector(4)

    @cuda.jit
    def kernel(a, out):
        values = load(a, 2, 4)
        for v in range(4):
            out[v] = values[v]

    kernel[1, 1](a, out)
    assert out.copy_to_host().tolist() == [20.0, 21.0, 22.0, 23.0]


def test_aligned_rows_are_contiguous_and_start_on_a_vector_boundary():
    a = cuda.to_device(np.zeros((6, 16), np.float32))
    assert vector.aligned(a, 4) and vector.aligned(a[:, 4:12], 4) and vector.aligned(a[1:], 4)
    assert not vector.aligned(a[:, 1:], 4) and vector.aligned(a[:, 1:], 1)  # a column offset of 4 bytes
    assert not vector.aligned(a[:, 2:], 4) and vector.aligned(a[:, 2:], 2)
    assert not vector.aligned(a[:, ::2], 1)  # rows not contiguous: no vector at all
    odd = cuda.to_device(np.zeros((3, 5), np.float32))
    assert not vector.aligned(odd, 4)  # rows 20 bytes apart: the second row starts off a boundary


@pytest.mark.parametrize("width", [0, 3, 8, "4"])
def test_a_vector_width_other_than_1_2_4_is_refused(width):
    with pytest.raises(ValueError, match=r"width must be one of \(1, 2, 4\), got"):
        vector.load_vector(width)
    with pytest.raises(ValueError, match=r"width must be one of \(1, 2, 4\), got"):
        vector.aligned(cuda.to_device(np.zeros((2, 4), np.float32)), width)


def launched_versions(monkeypatch):
    """The versions of the kernels ``gemm()`` launches, in order."""
    seen = []
    real = g.gemm.__globals__  # gemm() looks its factories up here at each call
    for name in ("blocked_gemm_kernel", "exact_gemm_kernel", "vector_gemm_kernel"):
        factory = real[name]
        monkeypatch.setitem(real, name, lambda *a, _f=factory: (lambda k: seen.append(spec_of(k).number) or k)(_f(*a)))
    return seen


def test_gemm_launches_the_vector_version_where_layouts_allow(monkeypatch):
    """Asked for vector loads (the "fast" GEMM policy), version 5 where the tile divides the shape, A
    and B are read as stored and their rows are aligned; version 3 with a 'T' flag or a row that
    starts off a vector boundary, or where not asked (the "2016" policy); the same bits."""
    seen = launched_versions(monkeypatch)
    blocking = g.choose_blocking(16, 16, 8)
    m, n, k = 2 * blocking.bm, 2 * blocking.bn, 3 * blocking.bk
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k + 4)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a_d, b_d, b_t = cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.ascontiguousarray(b.T))
    out = []
    for a_view, b_view, transposed in ((a_d[:, :k], b_d, False), (a_d[:, :k], b_t, True), (a_d[:, 1:k + 1], b_d, False)):
        c = cuda.to_device(np.full((m, n), np.nan, np.float32))
        g.gemm(a_view, b_view, c, transpose_b=transposed, vector=True)
        out.append(c.copy_to_host())
    assert seen == [5, 3, 3]
    g.gemm(a_d[:, :k], b_d, cuda.to_device(np.zeros((m, n), np.float32)))
    assert seen[-1] == 3
    assert np.array_equal(out[0], out[1])
    assert relative_error(out[2], a[:, 1:k + 1].astype(np.float64) @ b) <= 1e-5


def test_a_profile_records_each_gemms_version_and_the_timeline_its_compiled_row():
    """At the article's size on an H100, under the "fast" GEMM policy, step 07's tall input GEMM (one
    per layer, chunk 100) runs version 5 (128 x 128), its recurrent GEMMs version 8 (64 x 64, K in 8
    parts; unsplit, version 3: nothing to vectorize); at the default chunk of 2 steps the input GEMM
    is 128 rows, version 3 in 32 x 32 patches; step 03's, read with the 'T' flag, 3; under the default
    "2016" policy, every GEMM version 3."""
    import fastlstm_lib as fl
    from fastlstm_lib.course.timeline.blocks import table_name

    def rows(step, **options):
        recorded = fl.profile(step, chip="H100", **options)
        numbers = {spec.name: spec.number for spec in every() if spec.family == "gemm"}
        return {(numbers[launch.kernel], table_name(launch, 64)) for launch in recorded.launches if launch.kernel in numbers}

    assert rows("combined_inputs", gemms="fast", chunk=100) == {(5, "vector_gemm_wide"), (8, "warptiled_gemm")}
    assert rows("combined_inputs", gemms="fast", splits=1, chunk=100) == {(5, "vector_gemm_wide"),
                                                                          (3, "exact_gemm_t")}
    assert rows("combined_inputs", chunk=100) == {(3, "exact_gemm_wide"), (3, "exact_gemm_t")}
    assert rows("combined_inputs", gemms="fast") == {(3, "exact_gemm_t"), (8, "warptiled_gemm")}
    assert rows("combined_gemms") == {(3, "exact_gemm_t")}
