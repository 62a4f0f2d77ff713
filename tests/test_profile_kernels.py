"""Each kernel's traffic formula against what it really loads and stores, counted element by
element on the simulator, for the variants the ladder does not exercise (accumulate, strided
and transposed operands, edge tiles, several persistent blocks); and coalescing, measured as
32-byte sectors per warp-wide load."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels import gemm, pointwise as pw, reduce
from fastlstm_lib.kernels.persistent.v1_layer import LayerPlan
from fastlstm_lib.course.profile import charts, sectors
from fastlstm_lib.course.profile.dryrun import dry_run
from fastlstm_lib.course.profile.formulas import traffic
from fastlstm_lib.kernels.views import distinct_bytes

pytestmark = pytest.mark.skipif(not fl.is_simulator(), reason="instrumented arrays need the simulator")

FIELDS = ("loads", "stores", "footprint_read", "footprint_written", "footprint", "footprint_in")


def formula_and_measurement(launch, fields=FIELDS):
    """What the formula says of the single launch ``launch()`` makes, and what it really touched."""
    from instrumented import instrumented

    with dry_run() as recording:
        launch()
    (call,) = recording.launches
    t, _ = traffic(call.kernel, call.grid, call.block, call.args)
    formula = {"loads": t.loads, "stores": t.stores, "footprint_read": distinct_bytes(t.reads),
               "footprint_written": distinct_bytes(t.writes), "footprint": distinct_bytes(t.reads + t.writes),
               "footprint_in": distinct_bytes(t.inputs)}
    with instrumented() as measured:
        launch()
    (m,) = measured
    return {f: formula[f] for f in fields}, {f: getattr(m, f) for f in fields}, t


def device(shape, seed=0):
    return cuda.to_device(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("transpose_b, strided_b", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_gemm_on_strided_views_with_edge_tiles(transpose_b, strided_b, accumulate):
    m, n, k = 5, 11, 9  # no multiple of the simulator's 8 x 8 x 4 tiles
    a = device((m, 3 + k))[:, 3:]  # a strided view: rows of a wider matrix
    b = device((n, k) if transpose_b else (k, n), seed=1)
    c = device((m, 2 * n), seed=2)[:, n:]  # one "gate's" columns
    formula, measured, t = formula_and_measurement(
        lambda: gemm.gemm(a, b, c, accumulate=accumulate, transpose_b=transpose_b, strided_b=strided_b))
    assert formula == measured
    assert t.flop == 2 * m * n * k + (m * n if accumulate else 0)


def test_gemm_at_a_gpus_blocking():
    m, n, k = 67, 5, 9  # two 64-row blocks of 256 threads, the second nearly empty
    a, b, c = device((m, k)), device((k, n), seed=1), cuda.device_array((m, n), dtype=np.float32)
    formula, measured, _ = formula_and_measurement(lambda: gemm.gemm(a, b, c, blocking=gemm.GPU_LARGE))
    assert formula == measured


def test_tiled_gemm():
    a, b, c = device((6, 7)), device((7, 9), seed=1), device((6, 9), seed=2)
    formula, measured, _ = formula_and_measurement(lambda: gemm.tiled_gemm(a, b, c, accumulate=True))
    assert formula == measured


@pytest.mark.parametrize("kernel", ["fill", "add", "add_bias", "mul", "sigmoid", "tanh"])
def test_elementwise_on_gate_views(kernel):
    stacked, other = device((3, 4 * 7)), device((3, 4 * 7), seed=1)
    gate = slice(7, 14)
    x, y, out = stacked[:, gate], other[:, gate], device((3, 7), seed=2)
    calls = {"fill": lambda: pw.fill(out, 0.0), "add": lambda: pw.add(x, y, out),
             "add_bias": lambda: pw.add_bias(x, device(28, seed=3)[7:14], x), "mul": lambda: pw.mul(x, x, out),
             "sigmoid": lambda: pw.sigmoid(x, out), "tanh": lambda: pw.tanh(x, out)}
    formula, measured, _ = formula_and_measurement(calls[kernel])
    assert formula == measured


@pytest.mark.parametrize("accumulate", [False, True])
def test_column_sum_on_a_strided_view_with_a_ragged_edge(accumulate):
    """Each element of a loaded once, out stored once (and loaded once to accumulate); the
    block's tree adds on every column of the last tile, the 27 past the edge included."""
    rows, cols = 2 * reduce.ROW_THREADS + 3, reduce.COLUMNS + 5  # no multiple of either
    a = device((rows + 2, cols + 7))[1:rows + 1, 4:cols + 4]  # rows of a wider matrix
    out = device(2 * cols, seed=1)[cols:]
    formula, measured, t = formula_and_measurement(lambda: reduce.column_sum(a, out, accumulate=accumulate))
    assert formula == measured
    assert t.loads["a"] == rows * cols and t.stores == {"out": cols}
    assert t.flop == rows * cols + 2 * reduce.COLUMNS * (reduce.ROW_THREADS - 1) + (cols if accumulate else 0)


def test_column_sum_loads_are_coalesced():
    """At a GPU's geometry (32 columns x 8 threads down them), a warp reads 32 neighbouring floats
    of one row: 4 sectors per warp-wide load, like the GEMM's operands."""
    from fastlstm_lib.course.profile.instrument import run_instrumented

    a = device((19, 2 * reduce.COLUMNS))  # 256-byte rows: every row starts a sector
    out = cuda.device_array(2 * reduce.COLUMNS, dtype=np.float32)
    kernel = reduce.column_sum_kernel(reduce.GPU_ROW_THREADS)
    measured = run_instrumented(kernel, (2, (reduce.COLUMNS, reduce.GPU_ROW_THREADS)), (a, out, False))
    counts = sectors.sectors_per_warp_load(measured, "a")
    assert len(counts) == 2 * 19 and set(counts) == {4}
    assert np.allclose(out.copy_to_host(), a.copy_to_host().sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("units, blocks, splits, k_chunk, rows", [(5, 3, 2, 8, 2), (5, 3, 1, 16, 3), (13, 1, 2, 8, 1)])
def test_persistent_kernel(units, blocks, splits, k_chunk, rows):
    """U is loaded once per launch, h_{t-1} by every block at every step but the first. With
    several blocks the simulator runs them one after another, so a block reads h that others have
    not written yet there: what is read before being written is compared for one block only."""
    hidden, batch, steps = 13, 3, 4
    plan = LayerPlan(hidden, batch, units=units, blocks=blocks, splits=splits, k_chunk=k_chunk, rows=rows)
    x_gates, recurrent = device((steps, batch, 4 * hidden)), device((hidden, 4 * hidden), seed=1)
    bias, hs = device(4 * hidden, seed=2), device((steps, batch, hidden), seed=3)
    fields = FIELDS if blocks == 1 else FIELDS[:-1]
    formula, measured, t = formula_and_measurement(
        lambda: plan.launch(x_gates, recurrent, bias, hs), fields)
    assert formula == measured
    assert t.loads["recurrent"] == hidden * 4 * hidden  # once per launch, not once per step


@pytest.fixture(scope="module")
def sector_rows():
    return sectors.measure()


def test_sectors_per_warp_load(sector_rows):
    measured = {(row["load"], row["layout"]): (row["min"], row["max"]) for row in sector_rows}
    assert measured == {
        ("GEMM operand B, stored (K, N)", "plain"): (4, 4),
        ("GEMM operand A, stored (M, K)", "row-major, loaded along k"): (4, 4),
        ("GEMM operand B, stored (N, K), transpose_b", "transposed, loaded along k (default)"): (4, 4),
        ("GEMM operand B, stored (N, K), transpose_b", "transposed, strided_b=True (naive)"): (32, 32),
        ("element-wise add (baseline)", "one gate's columns of a (B, 4H) matrix"): (4, 4),
        ("fused LSTM cell (x_gates)", "(B, 4H), 4 gates per thread"): (4, 4),
    }


def test_sectors_chart_draws(sector_rows):
    matplotlib = pytest.importorskip("matplotlib", reason="drawing the chart needs matplotlib (pip install matplotlib)")

    matplotlib.use("Agg")
    fig = charts.sectors_chart(sector_rows)
    assert "sectors" in fig.axes[0].get_xlabel()
    matplotlib.pyplot.close(fig)


def test_distinct_bytes_equals_the_bytes_touched_counted_one_by_one():
    """Apart (the fast path: no two spans meet), interleaved (one gate's columns and the next's)
    and overlapping views, each against the set of byte addresses its elements cover."""
    from fastlstm_lib.kernels.views import view_of

    base = np.zeros((6, 20), np.float32)
    other = np.zeros((3, 5), np.float32)
    cases = [[base[:, :5], other], [base[:, :5], base[:, 5:10]], [base[1:4, 2:9], base[2:6, 5:12], base[0]],
             [base[::2, ::3], base[1::2, ::3]], [base, base[2:3]], [base[:0], other]]
    for arrays in cases:
        views = [view_of(a) for a in arrays]
        touched = {int(start) + byte for v in views if v.elements for start in np.atleast_1d(v.runs()[0])
                   for byte in range(v.runs()[1])}
        assert distinct_bytes(views) == len(touched), [a.shape for a in arrays]
