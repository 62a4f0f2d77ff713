"""Versions 6 and 7 of the GEMM (split-K, kernels/gemm/v6_split.py, v7_recurrent.py; ``gemm_split``
launches version 8, v8_warptiled.py, in 7's place where it fits) and version 3 of the
fused cell that adds their parts (kernels/pointwise/v3_cell_split.py): each part equals its product, the
cell the unsplit cell's result;
``split_plan`` fills an H100 at the article's batch; steps 06-08 run them there and equal the
reference and Keras when made to split here; bad arguments are refused before any launch."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from conftest import problem
from fastlstm_lib.gpus import gpu
from fastlstm_lib.kernels import gemm as g, pointwise as pw
from fastlstm_lib.kernels.gemm.tiles import split_plan
from fastlstm_lib.numerics import relative_error

#: The split path runs exact tiles only, so no odd size can take it: batch 8 and 4H = 64 are
#: multiples of the simulator's 8 x 8 tile, and hidden 16 in 2 parts of K two slabs each. The
#: input size (5) and the sequence (5 steps, chunks of 2 leave a partial one) stay odd.
SPLIT = fl.LSTMConfig(batch=8, seq_len=5, input_size=5, hidden=16, layers=3)


def test_each_part_is_its_share_of_k_and_the_parts_add_up_to_the_product():
    blocking, splits = g.SIMULATOR_BLOCKING, 3
    m, n, k = 2 * blocking.bm, 3 * blocking.bn, splits * 2 * blocking.bk
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    parts = cuda.to_device(np.full((splits, m, n), np.nan, np.float32))  # poisoned: every part is written
    g.gemm_split(cuda.to_device(a), cuda.to_device(b), parts, blocking=blocking)
    got = parts.copy_to_host()
    share = k // splits
    for s in range(splits):
        want = a[:, s * share:(s + 1) * share].astype(np.float64) @ b[s * share:(s + 1) * share]
        assert relative_error(got[s], want) <= 1e-5
    assert relative_error(got.astype(np.float64).sum(axis=0), a.astype(np.float64) @ b) <= 1e-5


@pytest.mark.parametrize("slabs, kernel", [(2, "warptiled_gemm"), (4, "warptiled_gemm"), (1, "split_gemm"),
                                           (3, "split_gemm")])
def test_gemm_split_runs_version_8_where_each_part_is_pairs_of_slabs_else_version_6(slabs, kernel):
    """Versions 8 and 7 take two slabs per trip of their double buffer: parts of K an even number of
    slabs run version 8 (the simulator's tile is one part-warp of 4 x 4 threads), others version 6;
    either way each part is its share of the product."""
    blocking, splits = g.SIMULATOR_BLOCKING, 2
    m, n, k = blocking.bm, 2 * blocking.bn, splits * slabs * blocking.bk
    rng = np.random.default_rng(slabs)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    parts = cuda.to_device(np.full((splits, m, n), np.nan, np.float32))
    with fl.count_launches() as launches:
        g.gemm_split(cuda.to_device(a), cuda.to_device(b), parts)
    assert dict(launches) == {kernel: 1}
    share = k // splits
    for s, got in enumerate(parts.copy_to_host()):
        assert relative_error(got, a[:, s * share:(s + 1) * share].astype(np.float64) @ b[s * share:(s + 1) * share]) <= 1e-5


def test_the_split_cell_equals_the_cell_on_the_summed_product():
    """gemm_split + lstm_cell_split against gemm + lstm_cell: the same c and h to FP32 rounding."""
    blocking = g.SIMULATOR_BLOCKING
    batch, hidden = blocking.bm, 2 * blocking.bn  # 4H a multiple of the tile
    rng = np.random.default_rng(6)
    h_prev = rng.standard_normal((batch, hidden)).astype(np.float32) * 0.5
    u = rng.standard_normal((hidden, 4 * hidden)).astype(np.float32) * 0.2
    x_gates = rng.standard_normal((batch, 4 * hidden)).astype(np.float32) * 0.5
    bias, c0 = rng.standard_normal(4 * hidden).astype(np.float32) * 0.1, rng.standard_normal((batch, hidden)).astype(np.float32)
    h_d, u_d, xg, b_d = (cuda.to_device(x) for x in (h_prev, u, x_gates, bias))
    outs = {}
    for name in ("whole", "split"):
        c, h = cuda.to_device(c0), cuda.to_device(np.full((batch, hidden), np.nan, np.float32))
        if name == "whole":
            gates = cuda.to_device(np.full((batch, 4 * hidden), np.nan, np.float32))
            g.gemm(h_d, u_d, gates)
            pw.lstm_cell(xg, gates, b_d, c, h)
        else:
            parts = cuda.to_device(np.full((2, batch, 4 * hidden), np.nan, np.float32))
            g.gemm_split(h_d, u_d, parts, blocking=blocking)
            pw.lstm_cell_split(xg, parts, b_d, c, h)
        outs[name] = (c.copy_to_host(), h.copy_to_host())
    for whole, split in zip(outs["whole"], outs["split"]):
        assert not np.isnan(split).any() and relative_error(split, whole) <= 1e-5


def test_the_plan_fills_an_h100_at_the_articles_batch():
    """The recurrent GEMM at batch 64, hidden 512: 128 blocks of 32 x 32 for 132 SMs unsplit (one
    block of 8 warps per SM); split in 4, 512 blocks, 3.9 per SM (31 warps). Batch 4 does not divide
    the patch: no split. The tall input GEMM fills the GPU already."""
    blocking, splits = split_plan(64, 2048, 512, 132)
    blocks = (64 // blocking.bm) * (2048 // blocking.bn)
    assert (blocking, splits, blocks) == (g.GPU_SMALL, 4, 128)
    assert blocks * splits / 132 >= 3.5 and blocks * splits * blocking.threads // 32 / 132 >= 28
    assert split_plan(4, 2048, 512, 132)[1] == 1
    assert split_plan(6400, 2048, 512, 132) == (g.GPU_WIDE, 1)


@pytest.mark.parametrize("bad", [dict(m=0), dict(k=-8), dict(sms=1.5), dict(n=True)])
def test_the_plan_refuses_what_is_not_a_positive_int(bad):
    args = dict(m=64, n=2048, k=512, sms=132) | bad
    name, value = next(iter(bad.items()))
    with pytest.raises(ValueError, match=f"{name} must be a positive int, got {value!r}"):
        split_plan(**args)


def test_gemm_split_refuses_parts_that_do_not_fit_before_launching():
    blocking = g.SIMULATOR_BLOCKING
    a = cuda.to_device(np.zeros((blocking.bm, 3 * blocking.bk), np.float32))
    b = cuda.to_device(np.zeros((3 * blocking.bk, blocking.bn), np.float32))
    with pytest.raises(ValueError, match=r"parts must be \(splits, M, N\)"):
        g.gemm_split(a, b, cuda.to_device(np.zeros((blocking.bm, blocking.bn), np.float32)))
    with pytest.raises(ValueError, match="does not divide"):  # K = 3 slabs in 2 parts
        g.gemm_split(a, b, cuda.to_device(np.zeros((2, blocking.bm, blocking.bn), np.float32)), blocking=blocking)
    with pytest.raises(ValueError, match=r"h_parts must be \(splits, 2, 8\)"):
        pw.lstm_cell_split(cuda.to_device(np.zeros((2, 8), np.float32)), cuda.to_device(np.zeros((2, 3, 8), np.float32)),
                           cuda.to_device(np.zeros(8, np.float32)), cuda.to_device(np.zeros((2, 2), np.float32)),
                           cuda.to_device(np.zeros((2, 2), np.float32)))


@pytest.fixture(scope="module")
def split_problem():
    x, params = problem(SPLIT, seed=7)
    return x, params, fl.reference_forward(x, params)


@pytest.mark.parametrize("name, options", [("pretransposed", {}), ("combined_inputs", {"chunk": 2}),
                                           ("wavefront", {"chunk": 2}), ("wavefront", {"chunk": 2, "gemms": "fast"})])
def test_steps_split_the_recurrent_gemm_and_equal_the_reference_and_keras(name, options, split_problem,
                                                                          keras_available):
    """Made to split here, each step's recurrent GEMM is version 8 (``gemm_split``'s choice, the
    "fast" policy's on a GPU), its parts added by the split cell: the reference's and Keras' result."""
    x, params, ref = split_problem
    with fl.count_launches() as launches:
        y = fl.steps.get(name).forward(x, params, splits=2, **options)
    assert launches["_lstm_cell_split"] == SPLIT.layers * SPLIT.seq_len and launches["_lstm_cell"] == 0
    assert launches["warptiled_gemm"] == SPLIT.layers * SPLIT.seq_len and launches["recurrent_gemm"] == 0
    assert y.dtype == np.float32 and relative_error(y, ref) <= 1e-5
    assert relative_error(y, fl.keras_forward(x, params).astype(np.float64)) <= 1e-5


def test_the_simulator_does_not_split_and_step_08_keeps_the_layout_of_step_06():
    """On the simulator its blocks run one at a time: nothing to fill, one part. Asked for 2, every
    wavefront lane holds the recurrent product in 2 parts."""
    x, params = problem(SPLIT)
    step = fl.steps.get("wavefront")
    assert step.setup(params, SPLIT).splits == 1
    state = step.setup(params, SPLIT, splits=2)
    assert all(lane.h_gates.shape == (2, SPLIT.batch, 4 * SPLIT.hidden) for lane in state.lanes)


def test_on_an_h100_step_06_launches_version_8_in_8_parts():
    """From the dry run with an H100's geometry at the article's size, under the "fast" GEMM
    policy: the recurrent GEMM at batch 64, hidden 512 is version 8 in 8 parts of K, every SM a
    block and 8+ warps (the kernel issue's floor), and the step still launches 3 kernels per
    layer-step. Under the default "2016" policy step 06 launches what step 05 does: the same
    grids, blocks and versions."""
    launched = {name: [(launch.kernel, launch.grid, launch.block)
                       for launch in fl.profile(name, chip=chip).launches]
                for name in ("fused_pointwise", "pretransposed") for chip in ("H100", "M40")}
    assert launched["fused_pointwise"] == launched["pretransposed"]
    profile = fl.profile("pretransposed", chip="H100", gemms="fast")
    sms = gpu("H100")["sms"]
    recurrent = [launch for launch in profile.launches if launch.kernel == "warptiled_gemm"]
    cells = [launch for launch in profile.launches if launch.kernel == "_lstm_cell_split"]
    cfg = fl.LSTMConfig.article()
    assert len(recurrent) == len(cells) == cfg.layers * cfg.seq_len
    assert len(profile.launches) == 3 * cfg.layers * cfg.seq_len + cfg.layers
    blocks = recurrent[0].grid[0] * recurrent[0].grid[1] * recurrent[0].grid[2]
    assert recurrent[0].grid[2] == 8 and blocks >= sms and blocks * recurrent[0].block[0] // 32 / sms >= 8
    assert g.recurrent_splits(64, 2048, 512, sms) == 8 and g.recurrent_splits(4, 2048, 512, sms) == 0


@pytest.mark.parametrize("splits, error, match", [
    (3, ValueError, r"splits=3: no GEMM tile here divides 8 x 64 and K = 16 in 3 parts"),
    (0, ValueError, "splits must be a positive int"),
    (True, ValueError, "splits must be a positive int"),
    (1.5, ValueError, "splits must be a positive int"),
])
def test_a_split_that_does_not_fit_is_refused_before_any_launch(splits, error, match):
    x, params = problem(SPLIT)
    with fl.count_launches() as launches, pytest.raises(error, match=match):
        fl.steps.get("pretransposed").setup(params, SPLIT, splits=splits)
    assert not launches


def test_steps_that_read_one_product_take_no_splits():
    x, params = problem(SPLIT)
    with pytest.raises(TypeError, match=r"takes no options, got \['splits'\]"):
        fl.steps.get("persistent").setup(params, SPLIT, splits=2)
