"""``FastLSTM``: a Keras layer whose forward and backward passes run on our kernels, with Keras' LSTM
weights (``set_weights(lstm.get_weights())`` copies one in), on TensorFlow and torch (notebook 42).
"""

from __future__ import annotations

import functools

import numpy as np

from ...backward import layer_api, names as backward_names
from ...checks import check_bool, check_choice, check_int
from ...runtime.keras_backend import import_keras
from ...params import LayerParams, validate_input
from . import conventions

keras = import_keras()


def check_input(shape, dtype, kernel_shape) -> None:
    """``fl.validate_input``'s checks on a symbolic input (unknown sizes taken as 1), its words too."""
    dims = [1 if d is None else int(d) for d in shape]
    x = np.broadcast_to(np.zeros((), dtype=np.dtype(keras.backend.standardize_dtype(dtype))), dims)
    H = kernel_shape[1] // 4
    layer = LayerParams(np.zeros(kernel_shape, np.float32), np.zeros((H, 4 * H), np.float32),
                        np.zeros(4 * H, np.float32))
    validate_input(x, [layer])


def _initializer(name: str, value):
    """``keras.initializers.get``, its refusal naming the argument."""
    refusal = f"{name} must be a Keras initializer (a name such as 'zeros', or an instance), got {type(value).__name__} {value!r}"
    if value is None or isinstance(value, bool):
        raise TypeError(refusal)
    try:
        return keras.initializers.get(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{refusal}: {error}") from None


@keras.saving.register_keras_serializable(package="fastlstm")
class FastLSTM(keras.layers.Layer):
    """An LSTM layer (tanh, sigmoid gates, with bias) that trains on the fastlstm kernels.

    ``step``: which backward step's kernels run (default the last of the ladder); the other
    arguments mean what they mean for ``keras.layers.LSTM``.
    """

    def __init__(self, units, return_sequences=False, *, step=layer_api.DEFAULT_STEP,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, zero_output_for_mask=False, **kwargs):
        kwargs = conventions.lstm_arguments_refused(kwargs)
        super().__init__(**kwargs)
        conventions.check_dtype_policy(self.dtype_policy)
        self.supports_jit = False  # tf.numpy_function and Numba kernels: no XLA, no torch.compile
        self.units = check_int("units", units)
        self.return_sequences = check_bool("return_sequences", return_sequences)
        self.step = check_choice("step", step, tuple(backward_names()))
        self.kernel_initializer = _initializer("kernel_initializer", kernel_initializer)
        self.recurrent_initializer = _initializer("recurrent_initializer", recurrent_initializer)
        self.bias_initializer = _initializer("bias_initializer", bias_initializer)
        self.unit_forget_bias = check_bool("unit_forget_bias", unit_forget_bias)
        self.zero_output_for_mask = check_bool("zero_output_for_mask", zero_output_for_mask)

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"x must have shape (batch, seq_len, input_size), got {len(input_shape)} dimensions "
                             f"{tuple(input_shape)}")
        if input_shape[-1] is None:
            raise ValueError(f"x must have a known number of features per step, got shape {tuple(input_shape)}")
        conventions.check_dtype_policy(self.dtype_policy)  # in case it was set after construction
        H = self.units
        self.kernel = self.add_weight(shape=(int(input_shape[-1]), 4 * H), name="kernel",
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight(shape=(H, 4 * H), name="recurrent_kernel",
                                                initializer=self.recurrent_initializer)
        self.bias = self.add_weight(shape=(4 * H,), name="bias", initializer=self.forget_bias_one())

    def forget_bias_one(self):
        """``keras.layers.LSTM``'s bias initializer: the forget gate's biases start at 1."""
        if not self.unit_forget_bias:
            return self.bias_initializer
        H, other = self.units, self.bias_initializer

        def initializer(shape, dtype=None):
            return keras.ops.concatenate([other((H,), dtype=dtype), keras.ops.ones((H,), dtype=dtype),
                                          other((2 * H,), dtype=dtype)])

        return initializer

    def call(self, inputs, initial_state=None, mask=None):
        check_input(inputs.shape, inputs.dtype, tuple(self.kernel.shape))
        inputs, mask = conventions.check_call(inputs, initial_state, mask)  # masks: right-padded only
        weights = [keras.ops.convert_to_tensor(w) for w in (self.kernel, self.recurrent_kernel, self.bias)]
        backend = keras.backend.backend()
        if backend == "tensorflow":
            y = tensorflow_lstm(inputs, *weights, step=self.step)
        elif backend == "torch":
            y = torch_function().apply(inputs, *weights, self.step)
        else:
            raise NotImplementedError(f"FastLSTM runs on the TensorFlow and torch backends, not {backend!r}")
        if mask is not None:
            return conventions.masked_outputs(y, mask, return_sequences=self.return_sequences,
                                              zero_output_for_mask=self.zero_output_for_mask)
        return y if self.return_sequences else y[:, -1, :]

    def compute_mask(self, inputs, mask=None):
        """Like ``keras.layers.LSTM``: the input's mask goes on with the sequence, not with the last step."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        return mask if self.return_sequences else None

    def compute_output_shape(self, input_shape):
        batch, steps = input_shape[0], input_shape[1]
        return (batch, steps, self.units) if self.return_sequences else (batch, self.units)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "return_sequences": self.return_sequences,
            "step": self.step,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": keras.initializers.serialize(self.recurrent_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "unit_forget_bias": self.unit_forget_bias,
            "zero_output_for_mask": self.zero_output_for_mask,
        }


# ---- TensorFlow: tf.custom_gradient around two NumPy calls -------------------------------------


def _numpy_forward(step, x, kernel, recurrent, bias):
    _, saved = layer_api.forward(x, LayerParams(kernel, recurrent, bias), step=step)
    return tuple(saved)


def _numpy_backward(step, x, kernel, recurrent, bias, hs, gates, cs, dy):
    saved = layer_api.Saved(hs, gates, cs)
    dx, grads = layer_api.backward(x, LayerParams(kernel, recurrent, bias), saved, dy, step=step)
    return (dx, *grads)


def tensorflow_lstm(x, kernel, recurrent, bias, *, step):
    """y = the layer's output at every step (batch, T, H), differentiable by TensorFlow."""
    import tensorflow as tf

    @tf.custom_gradient
    def lstm(x, kernel, recurrent, bias):
        saved = tf.numpy_function(functools.partial(_numpy_forward, step), [x, kernel, recurrent, bias],
                                  [tf.float32] * 3, stateful=False)
        T, B, H = x.shape[1], x.shape[0], recurrent.shape[0]
        for tensor, width in zip(saved, (H, 4 * H, H)):
            tensor.set_shape((T, B, width))

        def gradient(dy):
            grads = tf.numpy_function(functools.partial(_numpy_backward, step),
                                      [x, kernel, recurrent, bias, *saved, dy], [tf.float32] * 4, stateful=False)
            for tensor, like in zip(grads, (x, kernel, recurrent, bias)):
                tensor.set_shape(like.shape)
            return tuple(grads)

        return tf.transpose(saved[0], (1, 0, 2)), gradient

    # Read the variables out here: inside, custom_gradient would want to differentiate them itself.
    return lstm(x, *(tf.convert_to_tensor(w) for w in (kernel, recurrent, bias)))


# ---- torch: an autograd.Function, on CUDA without copies -----------------------------------------


@functools.lru_cache(maxsize=1)
def torch_function():
    """The ``torch.autograd.Function`` (defined on first use: torch is imported then)."""
    import torch
    from numba import cuda

    def on_device(*tensors):
        torch.cuda.current_stream().synchronize()  # torch's work on them is done before ours starts
        return [cuda.as_cuda_array(t.detach()) for t in tensors]

    class FastLSTMFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, kernel, recurrent, bias, step):
            (B, T, _), H = x.shape, recurrent.shape[0]
            if x.is_cuda:
                saved = layer_api.Saved(*(x.new_empty((T, B, width)) for width in (H, 4 * H, H)))
                arrays = on_device(x.transpose(0, 1).contiguous(), kernel, recurrent, bias, *saved)
                layer_api.forward_on_device(*arrays[:4], layer_api.Saved(*arrays[4:]), step=step)
            else:
                host = _numpy_forward(step, *(t.detach().numpy() for t in (x, kernel, recurrent, bias)))
                saved = layer_api.Saved(*(torch.from_numpy(a) for a in host))
            ctx.step = step
            ctx.save_for_backward(x, kernel, recurrent, bias, *saved)
            return saved.hs.transpose(0, 1).contiguous()

        @staticmethod
        def backward(ctx, dy):
            x, kernel, recurrent, bias, *saved = ctx.saved_tensors
            if x.is_cuda:
                dx = x.new_empty((x.shape[1], x.shape[0], x.shape[2]))  # time-major
                grads = [torch.empty_like(w) for w in (kernel, recurrent, bias)]
                arrays = on_device(x.transpose(0, 1).contiguous(), kernel, recurrent, bias, *saved,
                                   dy.transpose(0, 1).contiguous(), dx, *grads)
                layer_api.backward_on_device(*arrays[:4], layer_api.Saved(*arrays[4:7]), arrays[7], arrays[8],
                                             LayerParams(*arrays[9:]), step=ctx.step)
                return (dx.transpose(0, 1), *grads, None)
            host = _numpy_backward(ctx.step, *(t.detach().numpy() for t in (x, kernel, recurrent, bias, *saved)),
                                   dy.detach().contiguous().numpy())
            return (*(torch.from_numpy(a) for a in host), None)

    return FastLSTMFunction
