"""Persistent version 2 (U in registers, issue 57): right on the simulator at odd sizes, with one
block and with several (the last partial, rows in chunks, h staged a float or 128 bits at a time);
its plans for named GPUs; bad input refused."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels.persistent import PersistentLimitError, v2_registers as v2
from conftest import persistent_layer_case, persistent_layer_error


@pytest.mark.parametrize("hidden, batch", [(7, 3), (37, 5), (40, 9), (20, 2)])
def test_registers_equals_reference(hidden, batch):
    """One thread per unit (hidden 7), three (37: k padded to 48, a ragged last chunk of rows), h
    staged 128 bits at a time (40 and 20) or a float at a time (7 and 37)."""
    assert persistent_layer_error(v2.plan(hidden, batch), hidden, batch, steps=4) <= 1e-5


def test_registers_equals_keras(keras_available):
    assert persistent_layer_error(v2.plan(37, 5), 37, 5, steps=4, against="keras") <= 1e-5


def test_registers_many_blocks_index_the_right_units():
    """Three blocks of 5 units (the last partial), rows in chunks of 2 with a padded last chunk.
    The simulator runs blocks in turn, so every h_{t-1} is pre-filled with the reference's and the
    last step poisoned (as for version 1): each block must write its own units and read everyone's."""
    hidden, batch, steps = 13, 3, 4
    x, params, arrays = persistent_layer_case(hidden, batch, steps, seed=9)
    ref = fl.reference_forward(x, params)
    hs = np.ascontiguousarray(ref.transpose(1, 0, 2)).astype(np.float32)
    hs[-1] = np.nan
    grid = v2.RegisterPlan(hidden, batch, units=5, blocks=3, row_chunk=1, rows=1)
    hs_device = cuda.to_device(hs)
    grid.launch(*arrays, hs_device)
    assert fl.relative_error(hs_device.copy_to_host().transpose(1, 0, 2), ref) <= 1e-5


@pytest.mark.parametrize("batch, row_chunk", [(1, 1), (4, 4), (64, 32)])
def test_the_h100_plans_one_block_per_sm_of_four_warps(batch, row_chunk):
    """Hidden 512: 32 threads per unit (16 k each), 4 units a block, 128 blocks on 132 SMs."""
    p = v2.plan(512, batch, chip="H100", single_block=False)
    assert (p.units, p.blocks, p.threads, p.row_chunk, p.rows, p.vector_h) == (4, 128, 128, row_chunk, min(2, batch), True)
    assert p.shared_bytes <= fl.gpus.chip("H100").shared_bytes_per_block


def test_a_gpu_without_cooperative_launch_gets_no_plan():
    with pytest.raises(PersistentLimitError, match="cooperative"):
        v2.plan(512, 4, chip="M40", single_block=False)


def test_a_layer_whose_weights_do_not_fit_the_registers_is_refused():
    with pytest.raises(PersistentLimitError, match="register"):
        v2.plan(4096, 4, chip="T4", single_block=False)


@pytest.mark.parametrize("args, kind, word", [((0, 4), ValueError, "hidden"), ((512, "4"), TypeError, "batch"),
                                              ((512, 4, "Z99"), ValueError, "Z99")])
def test_plan_names_a_bad_argument(args, kind, word):
    hidden, batch, *gpu = args
    with pytest.raises(kind, match=word):
        v2.plan(hidden, batch, chip=gpu[0] if gpu else None)


def test_a_strided_array_is_refused_naming_it():
    _, _, arrays = persistent_layer_case(7, 3, steps=2)
    hs = cuda.to_device(np.zeros((2, 3, 14), np.float32))[:, :, ::2]
    with pytest.raises(ValueError, match="hs"):
        v2.plan(7, 3).launch(*arrays, hs)


def test_the_fast_policy_launches_version_2_in_step_09(odd_problem):
    x, params, _ = odd_problem
    step = fl.steps.get("persistent")
    with fl.count_launches() as launches:
        y = step.forward(x, params, gemms="fast")
    assert dict(launches) == {"blocked_gemm": len(params), "persistent_registers": len(params)}
    assert fl.relative_error(y, fl.reference_forward(x, params)) <= 1e-5


def test_the_model_prices_version_2_as_an_h100_plans_it():
    """Recorded without running at the article's size: its compiled rows (persistent_registers_b64)
    priced, an estimate (not a measurement) in milliseconds."""
    from fastlstm_lib.course.timeline.api import estimate

    recorded = fl.profile("persistent", chip="H100", gemms="fast")
    assert "persistent_registers" in recorded.kernels()
    assert 0 < estimate(recorded, "H100").total_ms < float("inf")
