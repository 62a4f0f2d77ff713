"""Keras' own LSTM through the harness (notebook 10): same weights, same check, its own clock."""

import json

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.runtime import keras_backend
from fastlstm_lib.steps import keras_lstm
from conftest import MINI, ODD, problem


@pytest.fixture(autouse=True)
def _keras(keras_available):
    # TF32 off around each test, as fl.keras_forward does: a GPU's cuDNN LSTM would otherwise round its
    # matrix products to TF32 (~1e-3), and these compare Keras with the float64 reference at 1e-5.
    with keras_backend.strict_float32():
        yield keras_available


def test_keras_steps_are_not_ladder_steps():
    assert fl.steps.keras_names() == ["keras_cudnn", "keras_generic", "keras_recurrent_dropout"]
    assert not set(fl.steps.keras_names()) & set(fl.steps.names())


@pytest.mark.parametrize("name", ["keras_cudnn", "keras_generic", "keras_recurrent_dropout"])
def test_keras_step_equals_reference(name, odd_problem):
    x, params, ref = odd_problem
    assert fl.relative_error(fl.steps.get(name).forward(x, params), ref) <= 1e-5


def test_bench_times_keras_with_a_wall_clock_and_names_its_device():
    result = fl.bench("keras_generic", MINI, warmup=1, repeats=2)
    assert result["timing"] == "wall clock around a synchronised call"
    assert result["times_meaningful"]  # Keras really runs where it says, even beside the simulator
    assert result["device"]["keras_backend"] == keras_backend.backend_name()
    assert result["device"]["name"] == keras_backend.backend_device()["name"]
    assert result["relative_error"]["after"] <= 1e-5
    json.dumps(result)


def test_keras_step_rejects_options():
    x, params = problem(MINI)
    with pytest.raises(TypeError, match="takes no options"):
        fl.steps.get("keras_cudnn").forward(x, params, chunk=2)


def test_keras_step_validates_input():
    x, params = problem(MINI)
    with pytest.raises(TypeError, match="float32"):
        fl.steps.get("keras_cudnn").forward(x.astype(np.float64), params)


def test_training_step_is_the_same_math_either_way():
    x, params = problem(ODD)
    auto = keras_lstm.train_step_times(params, x, use_cudnn="auto", warmup=0, repeats=1)
    generic = keras_lstm.train_step_times(params, x, use_cudnn=False, warmup=0, repeats=1)
    assert np.isfinite(auto["first_loss"]) and abs(auto["first_loss"] - generic["first_loss"]) <= 1e-5
    for a, b in zip(auto["weights_after_one_step"], generic["weights_after_one_step"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_tf32_switch_round_trips():
    before = keras_backend.tf32_enabled()
    try:
        keras_backend.set_tf32(False)
        assert keras_backend.tf32_enabled() is False
    finally:
        keras_backend.set_tf32(bool(before))
