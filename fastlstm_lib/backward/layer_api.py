"""One LSTM layer's forward and backward on our kernels, as a framework's autograd calls them.

A framework (the Keras layer, ``fastlstm_lib/topics/keras_layer/``) calls ``forward``, keeps what it
returns (the output and the ``Saved`` gates and c) and later calls ``backward`` with them and the
gradient of the output. Nothing is kept here between the two calls, so any number of layers and
calls can be in flight; each call runs alone (a lock) and returns when the device is done.

Two levels, both with the weights in Keras' layout:

- ``forward_on_device`` / ``backward_on_device``: time-major float32 device arrays, which may be
  another framework's memory (torch CUDA tensors via ``numba.cuda.as_cuda_array``: no copy);
  the caller allocates the outputs;
- ``forward`` / ``backward``: batch-major NumPy arrays, checked with ``fl.validate_input``'s
  words, uploaded, run on the device (a GPU, or the simulator) and downloaded; their outputs
  start as NaN, so anything the kernels leave unwritten shows.

The kernels are those of a backward step (default: the last of the ladder), set up once per
problem size (``_state``); only the weights and the caller's arrays change between calls.
"""

from __future__ import annotations

import functools
import threading
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
from numba import cuda

from ..checks import check_choice, check_str
from ..config import LSTMConfig
from ..params import LayerParams, validate_input
from ..steps.base import poisoned, time_major
from .reference import validate_dy

#: The backward step whose kernels the layer runs, unless told otherwise.
DEFAULT_STEP = "bwd_wavefront"


class Saved(NamedTuple):
    """What the forward pass keeps for the backward, time-major: h, the gate activations and c."""

    hs: object  # (T, B, H)
    gates: object  # (T, B, 4H)
    cs: object  # (T, B, H)


_lock = threading.Lock()


@functools.lru_cache(maxsize=4)
def _state(step_name: str, cfg: LSTMConfig):
    """A step's state for one problem size, its scratch buffers allocated once (weights come per call)."""
    from . import get

    step = get(step_name)
    zeros = LayerParams(np.zeros((cfg.input_size, 4 * cfg.hidden), np.float32),
                        np.zeros((cfg.hidden, 4 * cfg.hidden), np.float32), np.zeros(4 * cfg.hidden, np.float32))
    return step, step.setup([zeros], cfg, timed="backward")


def _bind(step_name: str, x, kernel, recurrent, bias, saved: Saved):
    """The cached state, pointed at this call's weights and saved arrays."""
    cfg = LSTMConfig(batch=x.shape[1], seq_len=x.shape[0], input_size=x.shape[2], hidden=recurrent.shape[0])
    step, state = _state(step_name, cfg)
    state.layers = [step.forward_step.upload_weights(LayerParams(kernel, recurrent, bias))]  # no copy of device arrays
    state.lanes[0].gates, state.lanes[0].cs = saved.gates, saved.cs
    return step, state


def forward_on_device(x, kernel, recurrent, bias, saved: Saved, *, step: str = DEFAULT_STEP) -> None:
    """Forward pass of one layer: x (T, B, in) -> saved.hs (T, B, H), and saved.gates, saved.cs."""
    with _lock:
        step_, state = _bind(step, x, kernel, recurrent, bias, saved)
        step_.run_forward(state, x, saved.hs)
        cuda.synchronize()


def backward_on_device(x, kernel, recurrent, bias, saved: Saved, dy, dx, grads: LayerParams, *,
                       step: str = DEFAULT_STEP) -> None:
    """Backward pass of one layer: dy (T, B, H) -> dx (T, B, in) and grads (kernel, recurrent, bias (4H,))."""
    with _lock:
        step_, state = _bind(step, x, kernel, recurrent, bias, saved)
        state.dy, state.dx = dy, dx
        state.grads = [SimpleNamespace(kernel=grads.kernel, recurrent=grads.recurrent_kernel,
                                       bias=grads.bias.reshape((1, grads.bias.shape[0])))]
        step_.run(state, x, saved.hs)  # set up with timed="backward": the backward alone
        cuda.synchronize()


def _check_step(step) -> str:
    """A backward step's name ("bwd_wavefront", ...): TypeError / ValueError otherwise."""
    from . import names

    check_str("step", step, example=DEFAULT_STEP)
    return check_choice("step", step, tuple(names()))


def forward(x: np.ndarray, layer, *, step: str = DEFAULT_STEP) -> tuple[np.ndarray, Saved]:
    """NumPy in and out: x (B, T, in) float32 -> (y (B, T, H), ``Saved`` NumPy arrays)."""
    _check_step(step)
    x, (layer,), cfg = validate_input(x, [layer])
    T, B, H = cfg.seq_len, cfg.batch, cfg.hidden
    saved = Saved(poisoned((T, B, H)), poisoned((T, B, 4 * H)), poisoned((T, B, H)))  # NaN: unwritten shows
    forward_on_device(cuda.to_device(time_major(x)), *layer, saved, step=step)
    host = Saved(*(array.copy_to_host() for array in saved))
    return np.ascontiguousarray(host.hs.transpose(1, 0, 2)), host


def backward(x: np.ndarray, layer, saved: Saved, dy: np.ndarray, *, step: str = DEFAULT_STEP) \
        -> tuple[np.ndarray, LayerParams]:
    """NumPy in and out: (dx (B, T, in), the layer's gradients) for dy (B, T, H) and ``forward``'s ``saved``."""
    _check_step(step)
    x, (layer,), cfg = validate_input(x, [layer])
    dy = validate_dy(dy, cfg)
    if not isinstance(saved, tuple) or len(saved) != len(Saved._fields):
        raise TypeError(f"saved must be the Saved (hs, gates, cs) that forward() returned, got {type(saved).__name__}")
    T, B, H = cfg.seq_len, cfg.batch, cfg.hidden
    for name, array, shape in zip(Saved._fields, saved, [(T, B, H), (T, B, 4 * H), (T, B, H)]):
        if np.shape(array) != shape:
            raise ValueError(f"saved.{name} must have shape {shape} (what forward() returned), got {np.shape(array)}")
    saved_device = Saved(*(cuda.to_device(np.ascontiguousarray(array, np.float32)) for array in saved))
    dx = poisoned((T, B, cfg.input_size))
    grads = LayerParams(poisoned(layer.kernel.shape), poisoned(layer.recurrent_kernel.shape), poisoned(4 * H))
    backward_on_device(cuda.to_device(time_major(x)), *layer, saved_device, cuda.to_device(time_major(dy)), dx, grads,
                       step=step)
    dx_host = np.ascontiguousarray(dx.copy_to_host().transpose(1, 0, 2))
    return dx_host, LayerParams(*(array.copy_to_host() for array in grads))
