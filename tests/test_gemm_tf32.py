"""Version 9 of the GEMM (kernels/gemm/v9_tf32.py): version 7's split-K contract with each warp's
32 x 32 block from TF32 ``mma.sync.m16n8k8`` (kernels/mma; on the simulator its stand-in).

On the simulator (its 32 x 32 x 16 tile: one warp of 2 x 4 mma tiles): every part of K, its outputs
poisoned with NaN first, at odd numbers of tiles and of parts, equals float64 of the TF32-rounded
inputs within float32 accumulation (tight), and float64 of the unrounded inputs within TF32's
tolerance (``numerics.TOLERANCES["tf32"]``), which float32's 1e-5 is not: TF32's rounding shows.
Without running a kernel: the shared tiles' paddings put a warp's fragment loads and its slab
stores in 32 different banks, and the launch refuses what it cannot run, a GPU older than sm_80
included, before launching. The machine code (HMMA in the main loop, no FFMA) is checked by
tests/test_compile_matrix.py on the committed rows.
"""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels import mma
from fastlstm_lib.kernels.gemm import v9_tf32 as v9
from fastlstm_lib.kernels.gemm.tiles import Blocking
from fastlstm_lib.numerics import TOLERANCES, relative_error

SIM = v9.TF32_SIMULATOR


def _run(m_tiles, n_tiles, splits, slabs, seed, accumulate=False):
    """Version 9 on (m_tiles x n_tiles) simulator tiles over K in ``splits`` parts of ``slabs`` slabs:
    (parts as computed, what parts held before, A, B, K per part)."""
    m, n, k = m_tiles * SIM.bm, n_tiles * SIM.bn, splits * slabs * SIM.bk
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    before = (rng.standard_normal((splits, m, n)).astype(np.float32) if accumulate
              else np.full((splits, m, n), np.nan, np.float32))
    parts = cuda.to_device(before)
    if accumulate:  # the kernel's own flag (launch always writes): version 7's contract
        v9.tf32_gemm_kernel(SIM)[(n // SIM.bn, m // SIM.bm, splits), SIM.threads](
            cuda.to_device(a), cuda.to_device(b), parts, True)
    else:
        v9.launch(cuda.to_device(a), cuda.to_device(b), parts, SIM)
    return parts.copy_to_host(), before, a, b, k // splits


def _shares(a, b, share):
    return [(a[:, s * share:(s + 1) * share], b[s * share:(s + 1) * share]) for s in range(a.shape[1] // share)]


def _tight(got, a, b, share, extra=None):
    """Each part equals float64 of its TF32-rounded inputs within float32 accumulation: the products
    of TF32 values are exact, and adding K of them in float32 (in the tensor core's order) is off by at
    most about K float32 ulps of sum |a| |b| (tests/test_mma.py's bound, (K + 1) 2**-23 of it)."""
    for s, (a_s, b_s) in enumerate(_shares(a, b, share)):
        want = v9.rounded_product(a_s, b_s) + (0 if extra is None else extra[s])
        scale = np.abs(mma.round_tf32(a_s)).astype(np.float64) @ np.abs(mma.round_tf32(b_s)) + (
            0 if extra is None else np.abs(extra[s]))
        assert (np.abs(got[s] - want) <= (share + 1) * 2.0**-23 * scale).all(), np.abs(got[s] - want).max()


def _raw(a, b, share):
    return np.stack([a_s.astype(np.float64) @ b_s for a_s, b_s in _shares(a, b, share)])


def test_each_part_at_odd_numbers_of_tiles_and_parts_is_float64_of_the_tf32_inputs():
    """1 x 3 tiles, K in 3 parts of 2 slabs (4 k-steps of 8 per part): every output written (poisoned
    first), each part float64 of its TF32-rounded inputs within float32 accumulation; against float64
    of the unrounded inputs, within the TF32 tolerance but not float32's: TF32's rounding shows."""
    got, _, a, b, share = _run(1, 3, 3, 2, seed=1)
    assert not np.isnan(got).any()
    _tight(got, a, b, share)
    error = relative_error(got, _raw(a, b, share))
    assert error <= TOLERANCES["tf32"] == v9.RTOL
    assert error > 10 * TOLERANCES["forward"]  # 3e-4 to 6e-4: 30x and more float32's tolerance


def test_three_tile_rows_and_longer_parts_take_several_trips_of_the_double_buffer():
    """3 x 1 tiles, one part of 6 slabs: three trips of two slabs, the last slab's loads clamped."""
    got, _, a, b, share = _run(3, 1, 1, 6, seed=2)
    assert not np.isnan(got).any()
    _tight(got, a, b, share)
    assert TOLERANCES["forward"] < relative_error(got, _raw(a, b, share)) <= v9.RTOL


def test_it_adds_to_c_when_asked():
    got, before, a, b, share = _run(1, 1, 2, 2, seed=3, accumulate=True)
    _tight(got, a, b, share, extra=before)


def test_a_warp_per_32_x_32_block_in_a_block_of_several_warps():
    """A 64 x 32 patch of 2 warps (the GPU's 2 x 2 warps, one column of them): each warp its own
    block, in rows 0-31 and 32-63, within the same tolerances."""
    blocking = Blocking(bm=64, bn=32, bk=16, tm=4, tn=8)
    assert v9.tf32_tiled(blocking) and blocking.threads == 64
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    parts = cuda.to_device(np.full((1, 64, 32), np.nan, np.float32))
    v9.launch(cuda.to_device(a), cuda.to_device(b), parts, blocking)
    got = parts.copy_to_host()
    assert not np.isnan(got).any()
    _tight(got, a, b, 32)


def test_the_runner_checks_it_against_float64_within_the_tf32_tolerance():
    """The runner's case: the odd shape's one patch, K in 3 parts, against float64 of the unrounded
    inputs, its tolerance the TF32 one (keyed "tf32" in the one table)."""
    (case,) = v9.case("odd", np.random.default_rng(5))
    assert case.rtol == TOLERANCES["tf32"] and "3 parts" in case.shape
    case.launch()
    assert TOLERANCES["forward"] < case.error() <= case.rtol


# --- the shared tiles' banks, without a kernel ---------------------------------------------------

def _banks_of_fragment_loads(blocking):
    """For every fragment load of one k-step (A's a0..a3 of each tile row, B's b0, b1 of each tile
    column), the banks (word index mod 32) the 32 lanes of warp 0 read, from the kernel's own
    indices: A row-major with ``bk + A_PADDING`` words a row, B k-major with ``bn + B_PADDING``."""
    lda, ldb = blocking.bk + v9.A_PADDING, blocking.bn + v9.B_PADDING
    lanes = np.arange(32)
    group, tig = lanes >> 2, lanes % 4
    loads = []
    for i in range(v9.TILES_M):
        r = 16 * i + group
        for dr, dk in ((0, 0), (8, 0), (0, 4), (8, 4)):
            loads.append(((r + dr) * lda + tig + dk) % 32)
    for j in range(v9.TILES_N):
        for dk in (0, 4):
            loads.append(((tig + dk) * ldb + 8 * j + group) % 32)
    return loads


def _ways(words) -> int:
    """How many wavefronts a warp's 32-bit load of these word indices takes: the most distinct
    words that fall in one bank (index mod 32)."""
    words = set(int(word) for word in words)
    return max(sum(word % 32 == bank for word in words) for bank in range(32))


@pytest.mark.parametrize("blocking", [v9.TF32_GPU, v9.TF32_SIMULATOR], ids=["gpu", "simulator"])
def test_the_paddings_put_a_warps_fragment_loads_in_32_banks(blocking):
    """16 loads a k-step, each of 32 different banks (a 32-bit load of a warp is one wavefront).
    Unpadded, A's loads fall 4 (bk 16) or 8 (bk 32) to a bank and B's 4; B padded by 4 words, as
    versions 3-8 pad their tiles, 2."""
    for banks in _banks_of_fragment_loads(blocking):
        assert len(set(banks)) == 32
    lanes = np.arange(32)
    group, tig = lanes >> 2, lanes % 4
    assert _ways(group * blocking.bk + tig) == blocking.bk // 4
    assert _ways(tig * blocking.bn + group) == 4
    assert _ways(tig * (blocking.bn + 4) + group) == 2


@pytest.mark.parametrize("blocking", [v9.TF32_GPU, v9.TF32_SIMULATOR], ids=["gpu", "simulator"])
def test_a_quarter_warps_128_bit_slab_stores_hit_32_banks(blocking):
    """Each quarter-warp (8 lanes, 128 bytes) of ``store_slab``'s 128-bit stores covers 32 different
    banks: consecutive lanes store consecutive 16-byte words of a row, and a row of the slab is 8
    (A: 32 / 4) or 16 (B: 64 / 4) of them on the GPU (4 and 8 on the simulator's tile)."""
    lda, ldb = blocking.bk + v9.A_PADDING, blocking.bn + v9.B_PADDING
    a_row, b_row = blocking.bk // 4, blocking.bn // 4
    for rep in range(blocking.bm * blocking.bk // 4 // blocking.threads):
        for quarter in range(0, 32, 8):
            e = np.arange(quarter, quarter + 8) + rep * blocking.threads
            words = (e // a_row) * lda + (e % a_row) * 4
            banks = (words[:, None] + np.arange(4)) % 32
            if a_row >= 8:  # a quarter-warp within one row: 32 consecutive words
                assert len(set(banks.ravel())) == 32
    for rep in range(blocking.bk * blocking.bn // 4 // blocking.threads):
        for quarter in range(0, 32, 8):
            e = np.arange(quarter, quarter + 8) + rep * blocking.threads
            words = (e // b_row) * ldb + (e % b_row) * 4
            assert len(set(((words[:, None] + np.arange(4)) % 32).ravel())) == 32


# --- what it refuses --------------------------------------------------------------------------

def test_it_refuses_what_it_cannot_run_before_launching():
    a = cuda.to_device(np.zeros((SIM.bm, 3 * SIM.bk), np.float32))
    b = cuda.to_device(np.zeros((3 * SIM.bk, SIM.bn), np.float32))
    with fl.count_launches() as launches:
        with pytest.raises(ValueError, match="does not divide"):  # 3 slabs in 2 parts
            v9.launch(a, b, cuda.to_device(np.zeros((2, SIM.bm, SIM.bn), np.float32)), SIM)
        with pytest.raises(ValueError, match=r"parts must be \(splits, M, N\)"):
            v9.launch(a, b, cuda.to_device(np.zeros((SIM.bm, SIM.bn), np.float32)), SIM)
        with pytest.raises(ValueError, match="shapes don't chain"):
            v9.launch(a, a, cuda.to_device(np.zeros((1, SIM.bm, SIM.bn), np.float32)), SIM)
        held = cuda.to_device(np.zeros((SIM.bm, 4 * SIM.bk + 1), np.float32))[:, 1:]  # rows 4 bytes off 16
        with pytest.raises(ValueError, match="aligned to 16 bytes"):
            v9.launch(held, cuda.to_device(np.zeros((4 * SIM.bk, SIM.bn), np.float32)),
                      cuda.to_device(np.zeros((1, SIM.bm, SIM.bn), np.float32)), SIM)
    assert not launches
    with pytest.raises(ValueError, match="no whole number of warps of 32 x 32 outputs"):
        v9.tf32_gemm_kernel(Blocking(bm=32, bn=32, bk=8, tm=4, tn=8))  # half a slab is no k-step
    with pytest.raises(ValueError, match="no whole number of warps"):
        v9.tf32_gemm_kernel(Blocking(bm=64, bn=64, bk=8, tm=4, tn=4))  # 16 outputs a lane, not 32


def test_a_gpu_older_than_sm_80_is_refused_naming_its_compute_capability(monkeypatch):
    for cc in [(7, 5), (5, 2), (7, 0)]:
        with pytest.raises(RuntimeError, match=rf"compute capability 8.0 \(sm_80, Ampere\) on; this GPU is compute "
                                               rf"capability {cc[0]}.{cc[1]} \(sm_{cc[0]}{cc[1]}\)"):
            mma.require_tf32("tf32_gemm", cc)
    for cc in [(8, 0), (8, 6), (8, 9), (9, 0)]:
        mma.require_tf32("tf32_gemm", cc)
    if not fl.DEVICE.compiled:
        assert mma.compute_capability() is None  # the simulator's stand-ins run anywhere
    # the launch asks: on a T4 it stops before launching
    monkeypatch.setattr(mma, "compute_capability", lambda: (7, 5))
    a = cuda.to_device(np.zeros((SIM.bm, 2 * SIM.bk), np.float32))
    b = cuda.to_device(np.zeros((2 * SIM.bk, SIM.bn), np.float32))
    with fl.count_launches() as launches, pytest.raises(RuntimeError, match=r"this GPU is compute capability 7.5"):
        v9.launch(a, b, cuda.to_device(np.zeros((1, SIM.bm, SIM.bn), np.float32)), SIM)
    assert not launches


def test_it_fits_where_version_7_fits_at_the_articles_shapes():
    """The contract is version 7's, so that a policy can put it in version 7's place: the recurrent
    GEMM of the article on an H100 (64 x 2048 x 512) in 8 parts of 2 slabs (256 blocks of 4 warps),
    as version 7 takes it; the other shapes of a step in parts of whole slabs too."""
    from fastlstm_lib.kernels.gemm import recurrent_splits

    assert v9.tf32_splits(64, 2048, 512, 132) == recurrent_splits(64, 2048, 512, 132) == 8
    assert v9.tf32_fits(v9.TF32_GPU, 64, 2048, 512, 8)
    assert not v9.tf32_fits(v9.TF32_GPU, 64, 2048, 512, 16)  # parts of 32: one slab, not two
    assert v9.tf32_splits(6400, 2048, 512, 132) == 1 and v9.tf32_splits(7, 13, 11, 132) == 0
