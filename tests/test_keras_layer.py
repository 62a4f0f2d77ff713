"""fl.keras_layer.FastLSTM: equals keras.layers.LSTM with the same weights, forward and backward,
trains with model.fit like it, survives model.save / load_model, and rejects bad input in
fl.validate_input's words."""

import numpy as np
import pytest

import fastlstm_lib as fl

pytestmark = pytest.mark.usefixtures("keras_available")

#: Odd sizes; the simulator runs one training step in about half a second.
BATCH, STEPS, FEATURES, UNITS = 3, 5, 3, 5


@pytest.fixture(scope="module")
def keras():
    from fastlstm_lib.runtime.keras_backend import backend_name, import_keras, set_tf32

    if backend_name() not in ("tensorflow", "torch"):
        pytest.skip(f"FastLSTM runs on the TensorFlow and torch backends, not {backend_name()}")
    set_tf32(False)  # on a GPU with TF32, Keras would not compute in float32 like our kernels
    return import_keras()


@pytest.fixture(scope="module")
def kl(keras):
    return fl.keras_layer


def twin_layers(keras, kl, return_sequences, seed=0):
    keras.utils.set_random_seed(seed)
    theirs = keras.layers.LSTM(UNITS, return_sequences=return_sequences)
    ours = kl.FastLSTM(UNITS, return_sequences=return_sequences)
    x = np.random.default_rng(seed).standard_normal((BATCH, STEPS, FEATURES)).astype(np.float32)
    theirs(x)
    ours(x)
    ours.set_weights(theirs.get_weights())
    return ours, theirs, x


@pytest.mark.parametrize("return_sequences", [True, False])
def test_forward_equals_keras_lstm(keras, kl, return_sequences):
    ours, theirs, x = twin_layers(keras, kl, return_sequences)
    assert [w.path.rsplit("/", 1)[-1] for w in ours.weights] == ["kernel", "recurrent_kernel", "bias"]
    y = keras.ops.convert_to_numpy(ours(x))
    assert y.shape == ((BATCH, STEPS, UNITS) if return_sequences else (BATCH, UNITS))
    assert fl.relative_error(y, keras.ops.convert_to_numpy(theirs(x)).astype(np.float64)) <= 1e-5


def test_unit_forget_bias_like_keras(keras, kl):
    layer = kl.FastLSTM(4)
    layer.build((None, 3, 2))
    assert np.array_equal(keras.ops.convert_to_numpy(layer.bias), np.repeat([0.0, 1.0, 0.0, 0.0], 4))


def test_gradients_equal_keras_lstm(keras, kl):
    from fastlstm_lib.runtime.keras_backend import backend_name

    ours, theirs, x = twin_layers(keras, kl, True, seed=1)
    dy = np.random.default_rng(2).standard_normal((BATCH, STEPS, UNITS)).astype(np.float32)
    grads = []
    for layer in (ours, theirs):
        if backend_name() == "tensorflow":
            import tensorflow as tf

            xt = tf.constant(x)
            with tf.GradientTape() as tape:
                tape.watch(xt)
                loss = tf.reduce_sum(layer(xt) * dy)
            got = tape.gradient(loss, [xt, *layer.trainable_weights])
        else:
            import torch

            xt = torch.tensor(x, requires_grad=True)
            y = layer(xt)  # on Keras' device: the GPU's where torch has one
            loss = (y * torch.as_tensor(dy, device=y.device)).sum()
            got = torch.autograd.grad(loss, [xt, *(w.value for w in layer.trainable_weights)])
        grads.append([keras.ops.convert_to_numpy(g).astype(np.float64) for g in got])
    for name, a, b in zip(["x", "kernel", "recurrent_kernel", "bias"], *grads):
        assert fl.relative_error(a, b) <= fl.backward.BACKWARD_RTOL, name


def test_fit_follows_keras_lstm_and_learns(keras, kl):
    x, y = kl.adding_problem(24, STEPS, seed=0)
    ours, theirs = kl.twin_lstm_models(STEPS, UNITS, seed=0, learning_rate=0.1)
    losses = [kl.fit_losses(model, x, y, batch_size=6, epochs=1) for model in (ours, theirs)]
    assert len(losses[0]) == 4
    assert np.all(np.abs(losses[0] - losses[1]) <= 1e-4 * losses[1])  # the same curve
    assert losses[0][-1] < 0.5 * losses[0][0]  # and it goes down


def test_save_and_load_round_trip(keras, kl, tmp_path):
    ours, _, x = twin_layers(keras, kl, False)
    model = keras.Sequential([keras.Input((STEPS, FEATURES)), ours, keras.layers.Dense(2)])
    path = tmp_path / "fast.keras"
    model.save(path)
    loaded = keras.models.load_model(path)  # registered as fastlstm>FastLSTM: no custom_objects needed
    assert isinstance(loaded.layers[0], kl.FastLSTM)
    assert loaded.layers[0].get_config()["units"] == UNITS
    assert all(np.array_equal(a, b) for a, b in zip(loaded.get_weights(), model.get_weights()))
    assert np.array_equal(keras.ops.convert_to_numpy(loaded(x)), keras.ops.convert_to_numpy(model(x)))


@pytest.mark.parametrize("x, error, words", [
    (np.zeros((4, 3), np.float32), ValueError, r"x must have shape \(batch, seq_len, input_size\), got 2 dimensions"),
    (np.zeros((2, 3, FEATURES), np.int32), TypeError, r"x must have dtype float32, got int32"),
    (np.zeros((2, 3, FEATURES + 1), np.float32), ValueError,
     "x has 4 features per step but the first layer's kernel expects 3"),
    (np.full((2, 3, FEATURES), np.nan, np.float32), ValueError, "x contains NaN or infinity"),
])
def test_bad_input_gets_validate_input_words(keras, kl, x, error, words):
    layer = kl.FastLSTM(UNITS)
    layer.build((None, None, FEATURES))
    with pytest.raises(error, match=words):
        layer(x)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"units": 0}, ValueError, "units must be an int >= 1"),
    ({"units": 3, "return_sequences": 1}, TypeError, "return_sequences must be True or False"),
    ({"units": 3, "step": "fastest"}, ValueError, "step must be one of"),
])
def test_bad_arguments(kl, kwargs, error, words):
    with pytest.raises(error, match=words):
        kl.FastLSTM(**kwargs)
