"""The float64 backward reference: it differentiates reference_forward (central finite
differences) and gives Keras' own gradients of keras.layers.LSTM with the same weights."""

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.backward import reference as ref_module
from conftest import ODD, problem

#: Small enough for a finite difference of every weight, odd everywhere.
FD = fl.LSTMConfig(batch=3, seq_len=3, input_size=3, hidden=5, layers=2)


def float64(params):
    return [fl.LayerParams(*(a.astype(np.float64) for a in layer)) for layer in params]


def test_forward_with_cache_is_reference_forward():
    x, params = problem(ODD)
    y, caches = ref_module.forward_with_cache(x, params)
    assert np.array_equal(y, fl.reference_forward(x, params))
    assert [c.gates.shape for c in caches] == [(3, 5, 28)] * 2


def test_reference_equals_finite_differences():
    x, params = problem(FD, seed=4)
    x, params = x.astype(np.float64), float64(params)
    dy = fl.backward.output_gradient(FD).astype(np.float64)
    dx, grads = fl.reference_backward(x, params, dy)
    assert dx.dtype == np.float64 and dx.shape == x.shape
    numeric_dx, numeric_grads = fl.backward.numerical_gradients(x, params, dy)
    assert fl.relative_error(dx, numeric_dx) <= 1e-6
    for layer, (analytic, numeric) in enumerate(zip(grads, numeric_grads)):
        for part, a, n in zip(fl.LayerParams._fields, analytic, numeric):
            assert a.shape == n.shape and fl.relative_error(a, n) <= 1e-6, (layer, part)


def test_one_step_gradients_by_hand():
    # One unit, one step, h_{-1} = c_{-1} = 0: dU = 0 and dz by hand.
    kernel = np.array([[0.1, 0.2, 0.3, 0.4]])
    bias = np.array([0.0, 0.1, -0.1, 0.2])
    x = np.array([[[2.0]]])
    sig = lambda v: 1 / (1 + np.exp(-v))
    z = 2.0 * kernel[0] + bias
    i, f, g, o = sig(z[0]), sig(z[1]), np.tanh(z[2]), sig(z[3])
    c = i * g
    dc = o * (1 - np.tanh(c) ** 2)
    dz = np.array([dc * g * i * (1 - i), 0.0, dc * i * (1 - g**2), np.tanh(c) * o * (1 - o)])
    dx, (grads,) = fl.reference_backward(x, [(kernel, np.zeros((1, 4)), bias)], np.ones((1, 1, 1)))
    assert np.allclose(grads.bias, dz, rtol=1e-12) and np.allclose(grads.kernel[0], 2.0 * dz, rtol=1e-12)
    assert not grads.recurrent_kernel.any()
    assert dx[0, 0, 0] == pytest.approx(dz @ kernel[0], rel=1e-12)


def test_reference_equals_keras_gradients(keras_available):
    from fastlstm_lib.backward.keras_training import keras_gradients
    from fastlstm_lib.runtime.keras_backend import backend_name, set_tf32

    set_tf32(False)  # on a GPU with TF32, Keras would not compute in float32
    if backend_name() not in ("tensorflow", "torch"):
        pytest.skip(f"Keras' gradients are taken with TensorFlow or torch, not {backend_name()}")
    x, params = problem(ODD)
    dy = fl.backward.output_gradient(ODD)
    dx, grads = keras_gradients(x, params, dy)
    y = fl.keras_forward(x, params)
    errors = fl.backward.gradient_errors(fl.backward.TrainingResult(y, dx, grads),
                                         fl.backward.reference_training(x, params, dy))
    assert max(errors.values()) <= fl.backward.BACKWARD_RTOL, errors


@pytest.mark.parametrize("dy, error, words", [
    (np.zeros((3, 5, 6), np.float32), ValueError, r"dy must have the forward output's shape .* \(3, 5, 7\)"),
    (np.zeros((3, 5, 7), np.int64), TypeError, "dy must have dtype"),
    (np.full((3, 5, 7), np.nan, np.float32), ValueError, "dy contains NaN"),
    ([[0.0]], TypeError, "dy must be a NumPy array"),
])
def test_bad_dy(dy, error, words):
    x, params = problem(ODD)
    with pytest.raises(error, match=words):
        fl.reference_backward(x, params, dy)


def test_bad_x_gets_validate_input_words():
    x, params = problem(ODD)
    with pytest.raises(ValueError, match="x has 4 features per step but the first layer.s kernel expects 5"):
        fl.reference_backward(x[:, :, :4], params, fl.backward.output_gradient(ODD))


def test_nan_never_passes():
    x, params = problem(ODD)
    ref = fl.backward.reference_training(x, params, fl.backward.output_gradient(ODD))
    broken = ref.grads[1].bias.copy()
    broken[0] = np.nan
    bad = ref._replace(grads=[ref.grads[0], ref.grads[1]._replace(bias=broken)])
    assert fl.backward.gradient_errors(bad, ref)["layer 1 bias"] == float("inf")
    assert ref_module.training_error(bad, ref) == float("inf")
