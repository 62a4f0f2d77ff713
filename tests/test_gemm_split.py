"""Version 6 of the GEMM (split-K, kernels/gemm.py) and version 3 of the fused cell that adds its
parts (kernels/pointwise.py): each part equals its product, the cell the unsplit cell's result;
``split_plan`` fills an H100 at the article's batch; bad arguments are refused before any launch."""

import numpy as np
import pytest
from numba import cuda

from fastlstm_lib.kernels import gemm as g, pointwise as pw
from fastlstm_lib.reference import relative_error


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
    blocking, splits = g.split_plan(64, 2048, 512, 132)
    blocks = (64 // blocking.bm) * (2048 // blocking.bn)
    assert (blocking, splits, blocks) == (g.GPU_SMALL, 4, 128)
    assert blocks * splits / 132 >= 3.5 and blocks * splits * blocking.threads // 32 / 132 >= 28
    assert g.split_plan(4, 2048, 512, 132)[1] == 1
    assert g.split_plan(6400, 2048, 512, 132) == (g.GPU_WIDE, 1)


@pytest.mark.parametrize("bad", [dict(m=0), dict(k=-8), dict(sms=1.5), dict(n=True)])
def test_the_plan_refuses_what_is_not_a_positive_int(bad):
    args = dict(m=64, n=2048, k=512, sms=132) | bad
    name, value = next(iter(bad.items()))
    with pytest.raises(ValueError, match=f"{name} must be a positive int, got {value!r}"):
        g.split_plan(**args)


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
