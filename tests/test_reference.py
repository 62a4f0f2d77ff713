"""The float64 reference: the yardstick every GPU step is measured against."""

import numpy as np
import pytest

import fastlstm_lib as fl
from conftest import ODD, problem


def test_article_flops_match_the_blog():
    # SOURCES.md: 16 * H^2 * B per layer-step when I = H; 1.07e11 for the whole run.
    cfg = fl.LSTMConfig.article()
    assert (cfg.batch, cfg.seq_len, cfg.input_size, cfg.hidden, cfg.layers) == (64, 100, 512, 512, 4)
    assert fl.flops(cfg) == 16 * 512**2 * 64 * 4 * 100 == 107_374_182_400


def test_flops_count_the_first_layers_input_size():
    cfg = fl.LSTMConfig(batch=2, seq_len=3, input_size=5, hidden=7, layers=2)
    expected = 2 * 4 * 7 * (5 + 7) * 2 * 3 + 2 * 4 * 7 * (7 + 7) * 2 * 3
    assert fl.flops(cfg) == expected


def test_params_follow_the_keras_layout():
    params = fl.init_params(ODD, seed=0)
    assert len(params) == ODD.layers
    assert params[0].kernel.shape == (5, 28)
    assert params[1].kernel.shape == (7, 28)
    for layer in params:
        assert layer.recurrent_kernel.shape == (7, 28) and layer.bias.shape == (28,)
        assert all(a.dtype == np.float32 for a in layer)
    x = fl.random_input(ODD, seed=1)
    assert x.shape == (3, 5, 5) and x.dtype == np.float32


def test_seeds_make_runs_repeatable():
    a = fl.init_params(ODD, seed=3)
    b = fl.init_params(ODD, seed=3)
    assert all(np.array_equal(p, q) for la, lb in zip(a, b) for p, q in zip(la, lb))
    assert not np.array_equal(fl.random_input(ODD, 1), fl.random_input(ODD, 2))


def test_gates_do_not_saturate():
    # With the article's sizes, pre-activations of layer 0 stay in the steep part of the sigmoid.
    cfg = fl.LSTMConfig(batch=16, seq_len=1, input_size=512, hidden=512, layers=1)
    x, params = problem(cfg)
    z = x[:, 0] @ params[0].kernel + params[0].bias
    assert 0.2 < z.std() < 1.0
    assert np.mean(np.abs(z) > 3) < 0.01
    h = fl.reference_forward(x, params)
    assert 0.02 < h.std() and np.abs(h).max() < 0.9


def test_reference_by_hand_for_one_unit():
    # One unit, one step, input 1: every gate computed by hand.
    kernel = np.array([[0.1, 0.2, 0.3, 0.4]], np.float32)
    recurrent = np.zeros((1, 4), np.float32)
    bias = np.array([0.0, 0.1, -0.1, 0.2], np.float32)
    x = np.array([[[2.0]]], np.float32)
    z = 2.0 * kernel[0].astype(np.float64) + bias
    sig = lambda v: 1 / (1 + np.exp(-v))
    c = sig(z[0]) * np.tanh(z[2])  # f * c_prev is 0
    h = sig(z[3]) * np.tanh(c)
    out = fl.reference_forward(x, [(kernel, recurrent, bias)])
    assert out.dtype == np.float64 and out.shape == (1, 1, 1)
    assert out[0, 0, 0] == pytest.approx(h, rel=1e-12)


def test_relative_error_never_passes_nan():
    ref = np.ones((2, 3, 4))
    y = ref.astype(np.float32).copy()
    assert fl.relative_error(y, ref) == 0.0
    y[1, 2, 3] = np.nan
    assert fl.relative_error(y, ref) == float("inf")
    assert not fl.matches(y, ref)
    with pytest.raises(ValueError, match="shape"):
        fl.relative_error(y[:1], ref)


@pytest.mark.parametrize("layers", [1, 3])
def test_reference_equals_keras(keras_available, layers):
    cfg = fl.LSTMConfig(batch=5, seq_len=7, input_size=9, hidden=11, layers=layers)
    x, params = problem(cfg, seed=layers)
    ref = fl.reference_forward(x, params)
    assert fl.relative_error(fl.keras_forward(x, params), ref) <= 1e-5


def test_params_from_keras_round_trip(keras_available):
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4, 6)), keras.layers.LSTM(9, return_sequences=True), keras.layers.LSTM(9, return_sequences=True)]
    )
    params = fl.params_from_keras([layer for layer in model.layers])
    assert [p.kernel.shape for p in params] == [(6, 36), (9, 36)]
    x = np.random.default_rng(0).standard_normal((3, 4, 6)).astype(np.float32)
    from fastlstm_lib.runtime.keras_backend import strict_float32

    with strict_float32():  # TF32 off, as fl.keras_forward computes: cuDNN's LSTM on a GPU would round to TF32
        expected = keras.ops.convert_to_numpy(model(x))  # a torch tensor (on the GPU) comes to the host
    assert fl.relative_error(expected, fl.reference_forward(x, params)) <= 1e-5


def test_params_from_keras_rejects_other_layers(keras_available):
    keras = pytest.importorskip("keras")
    with pytest.raises(TypeError, match="keras.layers.LSTM"):
        fl.params_from_keras([keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="layers must hold at least one keras.layers.LSTM, got an empty list"):
        fl.params_from_keras([])
