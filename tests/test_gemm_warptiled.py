"""Version 8 of the GEMM (kernels/gemm/v8_warptiled.py): version 7's split-K contract with a warp
tiled thread layout, the next slab loaded a slab earlier and 128-bit epilogue stores.

On the simulator (its 8 x 8 x 4 tile, 2 x 2 per thread, 16 threads): each part of K equals its
product in float64 at shapes of odd numbers of tiles and parts, outputs poisoned first; it adds to C
when asked; rows of C that are not aligned for a vector store take the scalar stores. Without a GPU
(plain Python on the kernel's own ``warp_row``/``warp_col``): the layout covers every thread once,
and its shared-memory wavefronts per FFMA, against version 7's:

    per quarter-warp LDS.128     distinct 16-byte words (A, B)   wavefronts per warp per k   per FFMA
    version 7 (tid // 16, tid % 16)        1, 8                        2 + 4 = 6             0.375
    version 8 (warp tiles)                 2, 4                        2 + 2 = 4             0.25

The same figures measured from the addresses the kernels read on the simulator: tests/test_wavefronts.py
(the compile matrix's loop_shared_wavefronts_per_ffma).
"""

import inspect

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels import gemm as g
from fastlstm_lib.kernels.gemm import pipeline, v8_warptiled as v8
from fastlstm_lib.kernels.gemm.tiles import GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING, Blocking
from fastlstm_lib.numerics import relative_error

SIM = g.SIMULATOR_BLOCKING


def _address(row) -> int:
    """A device array's data pointer (the simulator's: its NumPy array's)."""
    return (getattr(row, "__cuda_array_interface__", None) or row.__array_interface__)["data"][0]


def _run(m_tiles, n_tiles, splits, slabs, seed, accumulate=False, misaligned=False):
    """Version 8 on (m_tiles x n_tiles) simulator tiles over K in ``splits`` parts of ``slabs`` slabs:
    (parts as computed, the float64 parts, what parts held before)."""
    m, n, k = m_tiles * SIM.bm, n_tiles * SIM.bn, splits * slabs * SIM.bk
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    before = (rng.standard_normal((splits, m, n)).astype(np.float32) if accumulate
              else np.full((splits, m, n), np.nan, np.float32))
    if misaligned:  # rows one float off a 16-byte boundary, every other row off an 8-byte one
        held = np.full((splits, m, n + 1), np.nan, np.float32)
        held[:, :, 1:] = before
        parts = cuda.to_device(held)[:, :, 1:]
        rows = {_address(parts[0, r, :]) % 8 == 0 for r in range(m)}
        assert rows == {True, False}  # some rows take the 2-wide store, others the scalar ones
    else:
        parts = cuda.to_device(before)
    kernel = v8.warptiled_gemm_kernel(SIM, SHARED_PADDING)
    kernel[(n // SIM.bn, m // SIM.bm, splits), SIM.threads](cuda.to_device(a), cuda.to_device(b), parts, accumulate)
    share = k // splits
    want = np.stack([a[:, s * share:(s + 1) * share].astype(np.float64) @ b[s * share:(s + 1) * share]
                     for s in range(splits)])
    got = parts.copy_to_host()
    return got, want, before


def test_each_part_is_its_share_of_k_at_odd_numbers_of_tiles_and_parts():
    """3 x 5 tiles, K in 3 parts of 2 slabs: every output written (poisoned with NaN first) and equal
    to its part's float64 product."""
    got, want, _ = _run(3, 5, 3, 2, seed=8)
    assert not np.isnan(got).any() and relative_error(got, want) <= 1e-5


def test_longer_parts_take_several_trips_of_the_double_buffer():
    """One part of 6 slabs: three trips of two slabs, the loads a slab ahead clamped at the last."""
    got, want, _ = _run(1, 1, 1, 6, seed=9)
    assert not np.isnan(got).any() and relative_error(got, want) <= 1e-5


def test_it_adds_to_c_when_asked():
    got, want, before = _run(1, 3, 2, 2, seed=10, accumulate=True)
    assert relative_error(got, want + before) <= 1e-5


def test_rows_not_aligned_for_a_vector_store_take_scalar_stores():
    """C a view one float into each row of stride N + 1: no row 16-byte aligned, every other one 8-byte
    aligned (the simulator's 2-wide stores): both epilogue paths in one launch, the same results."""
    got, want, _ = _run(1, 3, 2, 2, seed=11, misaligned=True)
    assert not np.isnan(got).any() and relative_error(got, want) <= 1e-5


def test_it_refuses_a_shape_its_tile_does_not_divide_before_launching():
    a = cuda.to_device(np.zeros((SIM.bm, 3 * SIM.bk), np.float32))
    b = cuda.to_device(np.zeros((3 * SIM.bk, SIM.bn), np.float32))
    with fl.count_launches() as launches, pytest.raises(ValueError, match="does not divide"):
        v8.launch(a, b, cuda.to_device(np.zeros((2, SIM.bm, SIM.bn), np.float32)), SIM)  # 3 slabs in 2 parts
    assert not launches
    with pytest.raises(ValueError, match="no whole number of 8 x 4 warps"):
        v8.warptiled_gemm_kernel(Blocking(bm=8, bn=16, bk=4, tm=2, tn=2), SHARED_PADDING)


def test_it_fits_where_version_7_fits():
    """The same contract as version 7's, so that it can take its place: at the article's recurrent
    GEMM on an H100 (K in 8 parts) and wherever version 7 runs the simulator's tile."""
    assert v8.warptiled_fits(GPU_LARGE, 64, 2048, 512, g.recurrent_splits(64, 2048, 512, 132))
    for shape in [(8, 16, 16, 2), (8, 16, 24, 2), (16, 8, 8, 1), (8, 8, 16, 4)]:
        assert v8.warptiled_fits(SIM, *shape) == g.v7_recurrent.recurrent_fits(SIM, *shape), shape


@pytest.mark.parametrize("blocking", [GPU_LARGE, GPU_SMALL, GPU_WIDE, SIM])
def test_the_warp_tiles_cover_every_thread_once(blocking):
    threads_m, threads_n = blocking.bm // blocking.tm, blocking.bn // blocking.tn
    assert v8.warp_tiled(blocking)
    cells = {(v8.warp_row(tid, threads_n), v8.warp_col(tid, threads_n)) for tid in range(blocking.threads)}
    assert cells == {(r, c) for r in range(threads_m) for c in range(threads_n)}


# --- shared-memory wavefronts, from the thread layouts -------------------------------------------------

def v7_thread(tid, blocking):
    """Version 7's layout, as ``pipeline.prologue`` computes it (asserted below): row by row."""
    threads_n = blocking.bn // blocking.tn
    return tid // threads_n, tid % threads_n


def v8_thread(tid, blocking):
    threads_n = blocking.bn // blocking.tn
    return v8.warp_row(tid, threads_n), v8.warp_col(tid, threads_n)


def kernel10_thread(tid, blocking):
    """SGEMM_CUDA kernel 10's plain order in the same 8 x 4 warps: lane % 4 across, lane / 4 down."""
    lane, warp = tid % 32, tid // 32
    warps_n = blocking.bn // blocking.tn // 4
    return (warp // warps_n) * 8 + lane // 4, (warp % warps_n) * 4 + lane % 4


def test_version_7s_layout_is_the_prologues():
    source = inspect.getsource(pipeline.prologue)
    assert "threads_n = bn // tn" in source
    assert "thread_m = tid // uint32(threads_n)" in source and "thread_n = tid % uint32(threads_n)" in source


def lds128_words(layout, blocking, warp, operand, k=0):
    """The 16-byte word (its byte offset / 16 in the tile) each of ``warp``'s 32 lanes reads in the
    slab's LDS.128 of A or B at row k of the padded tile: its run of tm (tn) neighbours."""
    bm, bn, bk, tm, tn = blocking
    words = []
    for lane in range(32):
        thread_m, thread_n = layout(warp * 32 + lane, blocking)
        if operand == "a":
            words.append((k * (bm + SHARED_PADDING) + thread_m * tm) * 4 // 16)
        else:
            words.append((k * (bn + SHARED_PADDING) + thread_n * tn) * 4 // 16)
    return words


def quarter_words(words):
    """Distinct 16-byte words each quarter-warp reads."""
    return [len(set(words[q * 8:(q + 1) * 8])) for q in range(4)]


def lds128_wavefronts(words):
    """Wavefronts of one warp's LDS.128 (the SM's shared memory returns 128 bytes a cycle): a pass per
    quarter-warp, as many as its most-used bank quad (4 banks, a 16-byte word) has distinct words; the
    passes halved where every lane pair (l, l^1), or every (l, l^2), reads one address: NVIDIA's
    packing rule for uniform LDS (developer forum, "Unexpected shared memory bank conflict", CC 7.x),
    and the measured 2 wavefronts of lanes 0-15 on one word and 16-31 on another on CC 8.6 and 9.0
    (forum, "Discrepancy in LDS.128 wavefronts")."""
    passes = 0
    for q in range(4):
        quads = {}
        for word in set(words[q * 8:(q + 1) * 8]):
            quads[word % 8] = quads.get(word % 8, 0) + 1
        passes += max(quads.values())
    packed = any(all(words[lane] == words[lane ^ pair] for lane in range(32)) for pair in (1, 2))
    return passes / 2 if packed else passes


def wavefronts_per_ffma(layout, blocking=GPU_LARGE):
    """Over every warp of the block and two rows of k: (distinct words per quarter-warp of A, of B;
    wavefronts per warp per k of A, of B; wavefronts per FFMA), the FFMAs a warp's tm x tn per k."""
    warps = blocking.threads // 32
    found = set()
    for warp in range(warps):
        for k in (0, 1):
            a, b = (lds128_words(layout, blocking, warp, operand, k) for operand in ("a", "b"))
            found.add((max(quarter_words(a)), max(quarter_words(b)), lds128_wavefronts(a), lds128_wavefronts(b)))
    assert len(found) == 1, found  # every warp, every k alike
    a_words, b_words, a_waves, b_waves = found.pop()
    return a_words, b_words, a_waves, b_waves, (a_waves + b_waves) / (blocking.tm * blocking.tn)


def test_version_8_needs_at_most_one_shared_wavefront_per_4_ffma_where_version_7_needs_more():
    """Issue 67's target for the recurrent GEMM's main loop (GPU_LARGE: 4 x 4 per thread, one LDS.128
    of A and one of B per k): version 7, 1 word of A and 8 of B per quarter-warp, 2 + 4 wavefronts per
    16 FFMA; version 8, 2 and 4 words, 2 + 2 wavefronts; kernel 10's plain lane order 2 + 4."""
    assert (GPU_LARGE.tm, GPU_LARGE.tn) == (4, 4)  # one 128-bit load each
    v7 = wavefronts_per_ffma(v7_thread)
    here = wavefronts_per_ffma(v8_thread)
    assert v7 == (1, 8, 2, 4, 0.375), v7
    assert here == (2, 4, 2, 2, 0.25), here
    assert here[-1] <= 1 / 4 < v7[-1]
    assert wavefronts_per_ffma(kernel10_thread)[2:4] == (2, 4)
