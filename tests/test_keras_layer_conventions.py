"""fl.keras_layer.FastLSTM behaves as keras.layers.LSTM does, or refuses clearly (issue 20, item 7).

Modelled on Keras' own LSTM tests (keras/src/layers/rnn/lstm_test.py): every constructor argument
FastLSTM takes, against keras.layers.LSTM with the same weights; masks (Masking,
Embedding(mask_zero=True), mask=), forward, gradients and fit; compile's jit_compile ("auto" turns
XLA on on a GPU: faked here); dtype policies; and each of keras.layers.LSTM's arguments FastLSTM
does not take, refused by name. Kernels run on the simulator: tiny odd sizes, few calls."""

import inspect

import numpy as np
import pytest

import fastlstm_lib as fl

pytestmark = pytest.mark.usefixtures("keras_available")

BATCH, STEPS, FEATURES, UNITS = 3, 4, 7, 5
#: Right-padded: a full sequence, a shorter one and one masked entirely.
LENGTHS = (4, 2, 0)
RTOL = 1e-5


@pytest.fixture(scope="module")
def keras():
    from fastlstm_lib.runtime.keras_backend import backend_name, import_keras, set_tf32

    if backend_name() not in ("tensorflow", "torch"):
        pytest.skip(f"FastLSTM runs on the TensorFlow and torch backends, not {backend_name()}")
    set_tf32(False)
    return import_keras()


@pytest.fixture(scope="module")
def kl(keras):
    return fl.keras_layer


def backend():
    from fastlstm_lib.runtime.keras_backend import backend_name

    return backend_name()


def numpy(keras, tensor):
    return keras.ops.convert_to_numpy(tensor).astype(np.float64)


def inputs(seed=0, shape=(BATCH, STEPS, FEATURES)):
    """Unsaturated: small values, so that the gates are far from 0 and 1."""
    return (0.5 * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def right_padded(lengths=LENGTHS, steps=STEPS):
    return np.arange(steps)[None, :] < np.asarray(lengths)[:, None]


def twins(keras, kl, seed=0, **kwargs):
    """(ours, keras'), built, with keras.layers.LSTM's weights in both."""
    keras.utils.set_random_seed(seed)
    theirs, ours = keras.layers.LSTM(UNITS, **kwargs), kl.FastLSTM(UNITS, **kwargs)
    for layer in (theirs, ours):
        layer.build((None, STEPS, FEATURES))
    ours.set_weights(theirs.get_weights())
    return ours, theirs


def assert_close(keras, ours, theirs, rtol=RTOL):
    ours, theirs = numpy(keras, ours), numpy(keras, theirs)
    assert ours.shape == theirs.shape
    assert np.all(np.abs(ours - theirs) <= rtol * np.abs(theirs).max()), np.abs(ours - theirs).max()


def gradients(keras, layer, x, dy, **call):
    """d sum(layer(x) * dy) by x, kernel, recurrent_kernel and bias."""
    if backend() == "tensorflow":
        import tensorflow as tf

        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = tf.reduce_sum(layer(xt, **call) * dy)
        got = tape.gradient(loss, [xt, *layer.trainable_weights])
    else:
        import torch

        xt = torch.tensor(x, requires_grad=True)
        y = layer(xt, **call)  # on Keras' device: the GPU's where torch has one
        loss = (y * torch.as_tensor(dy, device=y.device)).sum()
        got = torch.autograd.grad(loss, [xt, *(w.value for w in layer.trainable_weights)])
    return [numpy(keras, g) for g in got]


# ---- constructor arguments, each against keras.layers.LSTM -------------------------------------


def test_known_output_with_constant_initializers(keras, kl):
    """lstm_test's correctness case: constant initializers, so no copying of weights."""
    init = dict(kernel_initializer=keras.initializers.Constant(0.05),
                recurrent_initializer=keras.initializers.Constant(-0.03),
                bias_initializer=keras.initializers.Constant(0.02), return_sequences=True)
    x = np.linspace(-1, 1, BATCH * STEPS * FEATURES, dtype=np.float32).reshape(BATCH, STEPS, FEATURES)
    ours, theirs = kl.FastLSTM(UNITS, **init), keras.layers.LSTM(UNITS, **init)
    assert_close(keras, ours(x), theirs(x))
    assert all(np.array_equal(a, b) for a, b in zip(ours.get_weights(), theirs.get_weights()))


@pytest.mark.parametrize("unit_forget_bias", [True, False])
def test_initializers_and_unit_forget_bias_like_keras(keras, kl, unit_forget_bias):
    init = dict(kernel_initializer=keras.initializers.RandomNormal(seed=1),
                recurrent_initializer=keras.initializers.Orthogonal(seed=2),
                bias_initializer=keras.initializers.RandomUniform(seed=3), unit_forget_bias=unit_forget_bias)
    ours, theirs = kl.FastLSTM(UNITS, **init), keras.layers.LSTM(UNITS, **init)
    for layer in (ours, theirs):
        layer.build((None, STEPS, FEATURES))
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        assert np.array_equal(a, b)
    forget = ours.get_weights()[2][UNITS:2 * UNITS]
    assert np.all(forget == 1.0) == unit_forget_bias


@pytest.mark.parametrize("step", fl.backward.names())
def test_every_step_forward_and_backward_equal_keras_lstm(keras, kl, step):
    ours, theirs = twins(keras, kl, return_sequences=True)
    ours = kl.FastLSTM.from_config({**ours.get_config(), "step": step})
    ours.build((None, STEPS, FEATURES))
    ours.set_weights(theirs.get_weights())
    x, dy = inputs(1), inputs(2, (BATCH, STEPS, UNITS))
    for name, a, b in zip(["x", "kernel", "recurrent_kernel", "bias"],
                          gradients(keras, ours, x, dy), gradients(keras, theirs, x, dy)):
        assert fl.relative_error(a, b) <= fl.backward.BACKWARD_RTOL, (step, name)


def test_output_shapes_symbolically(keras, kl):
    for return_sequences, shape in [(True, (None, STEPS, UNITS)), (False, (None, UNITS))]:
        y = kl.FastLSTM(UNITS, return_sequences=return_sequences)(keras.Input((STEPS, FEATURES)))
        assert tuple(y.shape) == shape


def test_layer_arguments_name_trainable(keras, kl):
    layer = kl.FastLSTM(UNITS, name="encoder", trainable=False)
    layer.build((None, STEPS, FEATURES))
    assert layer.name == "encoder"
    assert [w.path for w in layer.weights] == ["encoder/kernel", "encoder/recurrent_kernel", "encoder/bias"]
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 3


def test_activity_regularizer_like_keras(keras, kl):
    ours, theirs = twins(keras, kl, activity_regularizer=keras.regularizers.L2(0.1))
    x = inputs(3)
    ours(x)
    theirs(x)
    assert len(ours.losses) == 1
    assert abs(float(numpy(keras, ours.losses[0])) - float(numpy(keras, theirs.losses[0]))) <= 1e-5


def test_config_round_trip_with_every_argument(kl, keras):
    layer = kl.FastLSTM(UNITS, return_sequences=True, step=fl.backward.names()[0], kernel_initializer="he_normal",
                        recurrent_initializer="glorot_normal", bias_initializer="ones", unit_forget_bias=False,
                        zero_output_for_mask=True, name="fast", dtype="float32", trainable=False)
    config = layer.get_config()
    assert kl.FastLSTM.from_config(config).get_config() == config


def test_from_keras_lstm_config(keras, kl):
    """keras.layers.LSTM's arguments at the values FastLSTM behaves as are accepted..."""
    config = keras.layers.LSTM(UNITS, return_sequences=True, zero_output_for_mask=True, name="lstm").get_config()
    layer = kl.FastLSTM.from_config(config)
    assert (layer.units, layer.return_sequences, layer.zero_output_for_mask, layer.name) == (UNITS, True, True, "lstm")


#: ...any other value is refused by name: one such value for each.
LSTM_ONLY = {"activation": "relu", "recurrent_activation": "hard_sigmoid", "use_bias": False,
             "kernel_regularizer": "l2", "recurrent_regularizer": "l2", "bias_regularizer": "l1",
             "kernel_constraint": "non_neg", "recurrent_constraint": "non_neg", "bias_constraint": "non_neg",
             "dropout": 0.1, "recurrent_dropout": 0.2, "seed": 7, "return_state": True, "go_backwards": True,
             "stateful": True, "unroll": True, "use_cudnn": False}


@pytest.mark.parametrize("name", sorted(LSTM_ONLY))
def test_keras_lstm_arguments_refused_by_name(keras, kl, name):
    keras.layers.LSTM(UNITS, **{name: LSTM_ONLY[name]})  # a value Keras takes
    with pytest.raises(ValueError, match=f"FastLSTM does not support {name}=.*use keras.layers.LSTM"):
        kl.FastLSTM(UNITS, **{name: LSTM_ONLY[name]})


def test_every_keras_lstm_argument_is_taken_or_refused(keras, kl):
    from fastlstm_lib.topics.keras_layer.conventions import LSTM_ONLY_ARGUMENTS

    def parameters(cls):
        return set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}

    theirs = parameters(keras.layers.LSTM) | parameters(keras.layers.RNN) - {"cell"}
    taken = parameters(kl.FastLSTM) | {"activity_regularizer"}  # Layer's own, applied by Keras
    assert set(LSTM_ONLY) == set(LSTM_ONLY_ARGUMENTS)
    assert theirs - taken == set(LSTM_ONLY_ARGUMENTS)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"zero_output_for_mask": 1}, TypeError, "zero_output_for_mask must be True or False"),
    ({"colour": "red"}, ValueError, "Unrecognized keyword arguments passed to FastLSTM"),
])
def test_bad_arguments(kl, kwargs, error, words):
    with pytest.raises(error, match=words):
        kl.FastLSTM(UNITS, **kwargs)


def test_initial_state_refused(keras, kl):
    layer = kl.FastLSTM(UNITS)
    with pytest.raises(ValueError, match="initial_state is not supported"):
        layer(inputs(), initial_state=[np.zeros((BATCH, UNITS), np.float32)] * 2)


# ---- dtype policies: float32 only ---------------------------------------------------------------

POLICIES = ["float64", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16", "int8_from_float32"]


@pytest.mark.parametrize("policy", POLICIES)
def test_other_dtype_policies_refused_by_name(kl, policy):
    with pytest.raises(ValueError, match=f"FastLSTM computes in float32.*dtype policy '{policy}' is not supported"):
        kl.FastLSTM(UNITS, dtype=policy)


@pytest.mark.parametrize("policy", ["float64", "mixed_float16"])
def test_global_dtype_policy_refused_unless_float32_asked(keras, kl, policy):
    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        with pytest.raises(ValueError, match=f"dtype policy '{policy}' is not supported"):
            kl.FastLSTM(UNITS)
        assert kl.FastLSTM(UNITS, dtype="float32").dtype_policy.name == "float32"
    finally:
        keras.config.set_dtype_policy(before)


def test_float32_policy_and_float64_input_like_keras(keras, kl):
    ours, theirs = twins(keras, kl, dtype=keras.DTypePolicy("float32"))
    x = inputs(4).astype(np.float64)  # cast to float32 by the layer, as by Keras'
    assert_close(keras, ours(x), theirs(x))


# ---- XLA: compile's jit_compile falls back as for Keras' layers that cannot be compiled --------


def test_layer_declares_it_cannot_be_compiled(keras, kl):
    from keras.src.trainers.trainer import model_supports_jit

    model = keras.Sequential([keras.Input((STEPS, FEATURES)), kl.FastLSTM(UNITS), keras.layers.Dense(1)])
    assert model.layers[0].supports_jit is False
    assert model_supports_jit(model) is False


@pytest.mark.parametrize("jit_compile", ["auto", True])
def test_compile_falls_back_to_no_xla_and_fits(keras, kl, monkeypatch, jit_compile):
    model = keras.Sequential([keras.Input((STEPS, FEATURES)), kl.FastLSTM(UNITS), keras.layers.Dense(1)])
    if backend() == "tensorflow":  # "auto" means XLA where TensorFlow sees a GPU: show it one
        import tensorflow as tf

        seen = tf.config.list_physical_devices() + [tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
        monkeypatch.setattr(tf.config, "list_physical_devices", lambda *args: seen)
    if jit_compile is True:
        with pytest.warns(UserWarning, match="Proceeding with `jit_compile=False`"):
            model.compile("sgd", "mse", jit_compile=True)
    else:
        model.compile("sgd", "mse")
    monkeypatch.undo()
    assert model.jit_compile is False
    if jit_compile is True:  # and fit runs (one step: the kernels are slow on the simulator)
        history = model.fit(inputs(5), np.ones((BATCH, 1), np.float32), batch_size=BATCH, verbose=0)
        assert np.isfinite(history.history["loss"][0])


# ---- masks: right-padded, as keras.layers.LSTM gives them ---------------------------------------


def masked_pair(keras, kl, source, return_sequences):
    """(ours, keras') models, the same weights, whose first layer makes the mask; and their input."""
    models = []
    for lstm in (kl.FastLSTM, keras.layers.LSTM):
        keras.utils.set_random_seed(0)
        if source == "masking":
            first = [keras.Input((STEPS, FEATURES)), keras.layers.Masking(0.0)]
        else:
            first = [keras.Input((STEPS,), dtype="int32"), keras.layers.Embedding(9, FEATURES, mask_zero=True)]
        models.append(keras.Sequential([*first, lstm(UNITS, return_sequences=return_sequences)]))
    models[0].set_weights(models[1].get_weights())
    valid = right_padded((4, 2, 1))
    if source == "masking":
        x = np.where(valid[:, :, None], inputs(6), 0.0).astype(np.float32)
    else:
        x = np.where(valid, np.random.default_rng(6).integers(1, 9, (BATCH, STEPS)), 0).astype(np.int32)
    return *models, x


@pytest.mark.parametrize("source, return_sequences", [("masking", True), ("masking", False), ("embedding", True)])
def test_mask_from_a_layer_like_keras(keras, kl, source, return_sequences):
    ours, theirs, x = masked_pair(keras, kl, source, return_sequences)
    assert_close(keras, ours(x), theirs(x))


@pytest.mark.parametrize("return_sequences, zero_output_for_mask", [(True, True), (False, True), (False, False)])
def test_mask_argument_like_keras(keras, kl, return_sequences, zero_output_for_mask):
    ours, theirs = twins(keras, kl, return_sequences=return_sequences, zero_output_for_mask=zero_output_for_mask)
    x, mask = inputs(7), right_padded()
    assert_close(keras, ours(x, mask=mask), theirs(x, mask=mask))


def test_mask_gradients_equal_keras_lstm(keras, kl):
    """dy at a padded step reaches the last valid step, whose output it repeats."""
    ours, theirs = twins(keras, kl, return_sequences=True)
    x, dy, mask = inputs(8), inputs(9, (BATCH, STEPS, UNITS)), right_padded()
    for name, a, b in zip(["x", "kernel", "recurrent_kernel", "bias"], gradients(keras, ours, x, dy, mask=mask),
                          gradients(keras, theirs, x, dy, mask=mask)):
        assert fl.relative_error(a, b) <= fl.backward.BACKWARD_RTOL, name


def test_output_mask_like_keras(keras, kl):
    mask = keras.ops.convert_to_tensor(right_padded())
    for return_sequences in (True, False):
        ours, theirs = (cls(UNITS, return_sequences=return_sequences) for cls in (kl.FastLSTM, keras.layers.LSTM))
        got, expected = ours.compute_mask(None, mask), theirs.compute_mask(None, mask)
        assert (got is None) == (expected is None) == (not return_sequences)
    assert ours.supports_masking


@pytest.mark.parametrize("mask", [[[1, 1, 1, 1], [0, 0, 1, 1], [1, 0, 0, 0]],  # left-padded
                                  [[1, 1, 1, 1], [1, 1, 1, 1], [1, 0, 1, 0]]])  # holes
def test_mask_not_right_padded_refused(keras, kl, mask):
    layer = kl.FastLSTM(UNITS)
    with pytest.raises(ValueError, match=r"mask must be right-padded, got row \d = \[.*use keras.layers.LSTM"):
        layer(inputs(), mask=np.asarray(mask, bool))


def test_mask_not_right_padded_refused_in_a_graph(keras, kl):
    if backend() != "tensorflow":
        pytest.skip("only TensorFlow runs the layer in a graph, where the mask's values are not known")
    import tensorflow as tf

    layer = kl.FastLSTM(UNITS)
    layer.build((None, STEPS, FEATURES))
    with pytest.raises(tf.errors.InvalidArgumentError, match="mask must be right-padded"):
        tf.function(lambda x, mask: layer(x, mask=mask))(inputs(), ~right_padded())


def test_mask_of_the_wrong_shape_refused(keras, kl):
    with pytest.raises(ValueError, match=r"mask must have shape \(batch, seq_len\) = \(3, 4\).*got shape \(3, 3\)"):
        kl.FastLSTM(UNITS)(inputs(), mask=np.ones((BATCH, STEPS - 1), bool))


def test_fit_with_a_mask_follows_keras_lstm(keras, kl):
    """In a graph (fit), the masked model trains as keras.layers.LSTM's does."""
    ours, theirs, x = masked_pair(keras, kl, "masking", False)
    x, y = np.concatenate([x, x[::-1]]), np.linspace(0, 1, 2 * BATCH, dtype=np.float32)[:, None]
    for model in (ours, theirs):
        model.add(keras.layers.Dense(1))
        model.compile(keras.optimizers.SGD(0.1), "mse")
    ours.set_weights(theirs.get_weights())
    losses = [kl.fit_losses(model, x, y, batch_size=BATCH, epochs=1) for model in (ours, theirs)]
    assert len(losses[0]) == 2
    assert np.all(np.abs(losses[0] - losses[1]) <= 1e-4 * losses[1])
