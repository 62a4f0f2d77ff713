"""Training version 2: ``sigmoid_backward`` and ``tanh_backward``, d * s * (1 - s) and d * (1 - t^2),
one derivative per launch.

The op-by-op backward (bwd01, ``backward/bwd01_op_by_op.py``) chains them with ``pointwise``'s
``add``, ``mul`` and ``tanh``: 14 launches per layer-step.
"""

from __future__ import annotations

from numba import cuda, float32

from ..pointwise.base import A2, elementwise_cases, launch_elementwise, spec


@cuda.jit
def _sigmoid_backward(d, s, out):
    i = cuda.grid(1)
    if i < out.size:
        r, k = i // out.shape[1], i % out.shape[1]
        out[r, k] = d[r, k] * s[r, k] * (float32(1.0) - s[r, k])


@cuda.jit
def _tanh_backward(d, t, out):
    i = cuda.grid(1)
    if i < out.size:
        r, k = i // out.shape[1], i % out.shape[1]
        out[r, k] = d[r, k] * (float32(1.0) - t[r, k] * t[r, k])


def sigmoid_backward(d, s, out, stream=0):
    """out = d * s * (1 - s): the gradient d through s = sigmoid(z), back to z."""
    launch_elementwise(_sigmoid_backward, out, d, s, out, stream=stream)


def tanh_backward(d, t, out, stream=0):
    """out = d * (1 - t^2): the gradient d through t = tanh(z), back to z."""
    launch_elementwise(_tanh_backward, out, d, t, out, stream=stream)


def case(size: str, rng) -> list:
    """The runner's cases: each derivative on (rows, 4 x units) at ``size``."""
    return elementwise_cases(size, rng, {
        "sigmoid_backward": (lambda a, b, bias, out: sigmoid_backward(a, b, out), lambda a, b, bias: a * b * (1 - b), 3),
        "tanh_backward": (lambda a, b, bias, out: tanh_backward(a, b, out), lambda a, b, bias: a * (1 - b * b), 3)})


SPECS = tuple(spec("pointwise_backward", 2, kernel, "one derivative per launch (bwd01)", ((0, 1), (2,)), None,
                   (A2,) * 3, "element-wise") for kernel in (_sigmoid_backward, _tanh_backward))
