"""The persistent step (notebook 09): right on the simulator with one block; its multi-block
indexing checked there too; the grid planned, or refused with the limit named."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.gpus import chip
from fastlstm_lib.kernels import persistent
from fastlstm_lib.kernels.persistent.grid import GPU_TARGET_THREADS
from fastlstm_lib.kernels.persistent.layout import STATIC_SHARED_BYTES, lds128_conflicts
from fastlstm_lib.kernels.persistent.v1_layer import LayerPlan
from conftest import ODD, problem


def test_persistent_comes_after_the_wavefront():
    names = fl.steps.names()
    assert names.index("persistent") == names.index("wavefront") + 1


@pytest.mark.parametrize("cfg", [
    ODD,
    fl.LSTMConfig(batch=1, seq_len=4, input_size=3, hidden=37, layers=1),  # hidden > one k-chunk
    fl.LSTMConfig(batch=5, seq_len=3, input_size=2, hidden=3, layers=3),
])
def test_persistent_equals_reference(cfg):
    x, params = problem(cfg, seed=5)
    y = fl.steps.get("persistent").forward(x, params)
    assert fl.relative_error(y, fl.reference_forward(x, params)) <= 1e-5


def test_persistent_equals_keras(odd_problem, keras_available):
    x, params, _ = odd_problem
    y = fl.steps.get("persistent").forward(x, params)
    assert fl.relative_error(y, fl.keras_forward(x, params).astype(np.float64)) <= 1e-5


def test_persistent_is_two_launches_per_layer(odd_problem):
    x, params, _ = odd_problem
    with fl.count_launches() as launches:
        fl.steps.get("persistent").forward(x, params)
    assert dict(launches) == {"blocked_gemm": ODD.layers, "persistent_layer": ODD.layers}


def test_simulator_plans_a_single_block():
    if not fl.is_simulator():
        pytest.skip("simulator only")
    p = persistent.plan(13, 3)  # one thread does all 3 rows of a unit; 2 threads share its k
    assert (p.blocks, p.units, p.rows, p.splits, p.threads) == (1, 13, 3, 2, 26)


@pytest.mark.parametrize("splits, k_chunk, rows", [(1, 4, 1), (2, 8, 2), (1, 4, 3), (4, 16, 4)])
def test_many_blocks_index_the_right_units(splits, k_chunk, rows):
    """Several blocks (the last one partial), h staged in k-chunks with a tail, each pair's dot
    products split between several threads, and a thread doing several batch rows (the last
    group padded with zero rows where 3 is no multiple of ``rows``).

    The simulator runs blocks one after another, so a block can't wait there for the others' h.
    Instead every h_{t-1} is pre-filled with the reference's value, except the last step, which
    is poisoned: each block must then write its own units of every step, and read everybody's.
    """
    hidden, batch, steps = 13, 3, 4
    cfg = fl.LSTMConfig(batch=batch, seq_len=steps, input_size=2, hidden=hidden, layers=1)
    x, params = problem(cfg, seed=9)
    kernel, recurrent, bias = params[0]
    ref = fl.reference_forward(x, params)  # (B, T, H)
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))  # (T, B, 4H), bias added in-kernel
    hs = np.ascontiguousarray(ref.transpose(1, 0, 2)).astype(np.float32)
    hs[-1] = np.nan
    grid = LayerPlan(hidden, batch, units=5, blocks=3, splits=splits, k_chunk=k_chunk, rows=rows)
    hs_device = cuda.to_device(hs)
    grid.launch(cuda.to_device(x_gates), cuda.to_device(recurrent), cuda.to_device(bias), hs_device)
    assert fl.relative_error(hs_device.copy_to_host().transpose(1, 0, 2), ref) <= 1e-5


def test_split_dot_products_in_one_block():
    cfg = fl.LSTMConfig(batch=2, seq_len=3, input_size=3, hidden=7, layers=1)
    x, params = problem(cfg, seed=11)
    kernel, recurrent, bias = params[0]
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))
    hs = cuda.to_device(np.full((3, 2, 7), np.nan, np.float32))
    grid = LayerPlan(7, 2, units=7, blocks=1, splits=2, k_chunk=8, rows=2)
    grid.launch(cuda.to_device(x_gates), cuda.to_device(recurrent), cuda.to_device(bias), hs)
    ref = fl.reference_forward(x, params)
    assert fl.relative_error(hs.copy_to_host().transpose(1, 0, 2), ref) <= 1e-5


def one_block_per_sm(name):
    """A chip like ``name`` that holds one block per SM whatever the block's size: the pessimistic
    planning of a grid barrier, before occupancy is counted."""
    import dataclasses

    return dataclasses.replace(chip(name), max_blocks_per_sm=1)


@pytest.mark.parametrize("batch, units, rows, splits, k_chunk", [
    (1, 4, 1, 32, 512),  # 4 (row, unit) pairs per block: 32 threads share each one's dot products; all of h fits
    (4, 4, 4, 32, 512),  # one thread does the 4 rows of a unit: each weight it loads feeds 4 FMAs
    (16, 4, 4, 16, 512),  # dynamic shared memory: all of h fits where 48 KiB of static memory held 128
    (64, 4, 4, 4, 512),
])
def test_plan_at_hidden_512_one_block_per_sm(batch, units, rows, splits, k_chunk):
    p = persistent.plan(512, batch, chip=one_block_per_sm("H100"), target_threads=256)
    assert (p.units, p.blocks, p.rows, p.splits, p.k_chunk) == (units, 512 // units, rows, splits, k_chunk)
    assert p.threads == -(-batch // rows) * units * splits <= 1024
    assert p.shared_bytes <= chip("H100").shared_bytes_per_block


def test_occupancy_lets_an_h100_hold_several_blocks_per_sm():
    # Batch 4: 4 units per block make 128 blocks, which one block per SM would also fit; with
    # occupancy, 2 units per block (256 blocks, 2 per SM) fit too, and more blocks share the work.
    p = persistent.plan(512, 4, chip="H100", target_threads=256)
    assert p.blocks > 132 and p.blocks <= p.blocks_per_sm * 132


def test_hidden_1024_batch_4_fits_an_h100_but_not_an_m40():
    p = persistent.plan(1024, 4, chip="H100", target_threads=256)
    assert p.shared_bytes > STATIC_SHARED_BYTES  # beyond 48 KiB: dynamic shared memory
    assert p.blocks <= p.blocks_per_sm * 132
    with pytest.raises(persistent.PersistentLimitError, match="M40"):
        persistent.plan(1024, 4, chip="M40", target_threads=256)


def test_batch_1024_needs_more_registers_than_an_sm_has():
    # 4 units x 256 row groups = 1024 threads x 128 registers > 65536: not even one block is resident.
    # (Batch 256, 4 rows per thread, fits: 256 threads.)
    with pytest.raises(persistent.PersistentLimitError, match=r"limited by registers"):
        persistent.plan(512, 1024, chip=one_block_per_sm("H100"), target_threads=256)
    assert persistent.plan(512, 256, chip=one_block_per_sm("H100"), target_threads=256).threads == 256


def test_a_plan_whose_chunk_splits_k_unevenly_is_refused():
    with pytest.raises(ValueError, match=r"k_chunk must be a multiple of 4 x splits = 16"):
        persistent.Plan(13, 3, units=5, blocks=3, splits=4, k_chunk=4)
    with pytest.raises(ValueError, match=r"rows must be a positive int, got 0"):
        persistent.Plan(13, 3, units=5, blocks=3, splits=1, k_chunk=4, rows=0)


def test_plan_names_the_thread_limit():
    with pytest.raises(persistent.PersistentLimitError, match=r"512 row groups x 3 = 1536 threads > 1024"):
        persistent.plan(512, 2048, chip=one_block_per_sm("H100"))


def test_plan_names_the_shared_memory_limit():
    # One unit's U slice at hidden 8192 is 128 KiB: more than a T4's 64 KiB per block.
    with pytest.raises(persistent.PersistentLimitError, match="shared memory"):
        persistent.plan(8192, 1, chip="T4")


M40_HAS_NO_GRID_BARRIER = r"M40 \(compute capability 5\.2\) cannot launch a cooperative grid.*6\.0.*no grid barrier"


@pytest.mark.parametrize("hidden, batch, single_block", [(13, 1, False), (13, 1, True), (512, 64, False)])
def test_an_m40_gets_no_plan_at_any_size(hidden, batch, single_block):
    # Compute capability 5.2: no cooperative launch, so no grid barrier, however small the layer.
    with pytest.raises(persistent.PersistentLimitError, match=M40_HAS_NO_GRID_BARRIER) as raised:
        persistent.plan(hidden, batch, chip="M40", single_block=single_block)
    assert raised.value.reason == "no cooperative launch below compute capability 6.0 (M40: 5.2), so no grid barrier"


def test_an_m40_says_why_in_every_place_that_plans_for_it():
    with pytest.raises(persistent.PersistentLimitError, match=M40_HAS_NO_GRID_BARRIER):
        fl.persistent_limits(13, batches=(1,), chip="M40")
    with pytest.raises(persistent.PersistentLimitError, match=M40_HAS_NO_GRID_BARRIER):
        fl.profile("persistent", fl.LSTMConfig.tiny(), chip="M40")  # the step's own setup plans it
    with pytest.raises(persistent.PersistentLimitError, match=M40_HAS_NO_GRID_BARRIER):
        fl.lower_bound(fl.profile("persistent", fl.LSTMConfig.tiny(), chip="H100"), "M40")
    assert fl.profile("wavefront", fl.LSTMConfig.tiny(), chip="M40").launches  # the steps before it do run


def test_a_gpu_whose_driver_refuses_cooperative_launch_is_named():
    import dataclasses

    refusing = dataclasses.replace(chip("T4"), name="Tesla T4 (WDDM)", cooperative_launch=False)
    with pytest.raises(persistent.PersistentLimitError, match=r"T4 \(WDDM\).*COOPERATIVE_LAUNCH is 0"):
        persistent.plan(13, 1, chip=refusing)


def test_a_step_that_does_not_fit_fails_before_launching():
    if not fl.is_simulator():
        pytest.skip("the single-block limit is the simulator's")
    cfg = fl.LSTMConfig(batch=160, seq_len=2, input_size=2, hidden=30, layers=1)  # 40 row groups x 30 units: 1200 threads
    x, params = problem(cfg)
    with fl.count_launches() as launches, pytest.raises(ValueError, match="does not fit"):
        fl.steps.get("persistent").forward(x, params)
    assert sum(launches.values()) == 0


def test_limits_report_each_batch():
    report = fl.persistent_limits(13, batches=(1, 3), chip="T4")
    assert set(report) == {1, 3} and all(text.startswith(("fits", "does not fit")) for text in report.values())


def test_a_plan_for_a_named_gpu_is_the_same_on_every_machine():
    # The simulator aims for 32 threads per block on itself, but a plan for an H100 is an H100's.
    for batch in (1, 4, 64):
        assert persistent.plan(512, batch, chip="H100") == persistent.plan(
            512, batch, chip="H100", target_threads=GPU_TARGET_THREADS)


@pytest.mark.parametrize("batch", [1, 4, 16, 64, 128])
def test_the_h100_plans_read_u_and_h_without_bank_conflicts(batch):
    """dot_quad's 128-bit shared loads: no quarter-warp reads two different 16-byte words from the
    same four banks, for U or for staged h, in the H100's plans at hidden 512. At batch 64 (4 units x
    4 splits) U's rows, 516 floats apart, put units 0 and 1 of a quarter-warp on the same banks (2
    ways); the padded stride, 528, moves them 4 banks apart."""
    layout = persistent.plan(512, batch, chip="H100", single_block=False, target_threads=GPU_TARGET_THREADS).layout
    found = lds128_conflicts(layout.units, layout.splits, layout.rows, layout.threads, layout.u_stride, layout.h_stride)
    assert found == {"u": 1, "h": 1}, (layout, found)
    if batch == 64:
        assert (layout.units, layout.splits, layout.u_stride) == (4, 4, 528)
        assert lds128_conflicts(4, 4, 4, layout.threads, 516, layout.h_stride)["u"] == 2


def test_the_bank_model_counts_distinct_words_per_bank_quartet():
    # 8 threads, one unit each (splits 1): rows 4 words (16 floats) apart fall on 2 bank quartets, 4 ways each
    assert lds128_conflicts(8, 1, 1, 8, 16, 4)["u"] == 4
    assert lds128_conflicts(8, 1, 1, 8, 4, 4)["u"] == 1  # rows one word apart: 8 quartets
    assert lds128_conflicts(1, 8, 1, 8, 4, 4) == {"u": 1, "h": 1}  # one row, 8 consecutive words
