"""Element-wise version 1: one kernel per operation, ``fill``, ``add``, ``add_bias``, ``mul``,
``sigmoid``, ``tanh``, one thread per element.

The unfused cell of steps 02-04 (baseline, combined_gemms, streams), 17 launches per layer-step;
``fill`` zeroes the cell state in steps 02-08 and the gradients in bwd01-05. The op-by-op backward
(bwd01) chains ``add``, ``mul`` and ``tanh`` with the derivatives of ``pointwise_backward``.

These are the small, separate kernels of the unfused LSTM: each reads its inputs from global
memory and writes its result back, and each costs a launch. The fused cell (version 2) replaces a
whole chain of them with a single kernel.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import cuda, float32

from ...numerics import sigmoid64
from ..spec import Traffic, elementwise
from ..views import view_of
from .base import A1, A2, SIGMOID_FLOP, TANH_FLOP, elementwise_cases, launch_elementwise, sigmoidf, spec


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i // out.shape[1], i % out.shape[1]] = value


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] + b[r, c]


@cuda.jit
def _add_bias(a, bias, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] + bias[c]


@cuda.jit
def _mul(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] * b[r, c]


@cuda.jit
def _sigmoid(a, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = sigmoidf(a[r, c])


@cuda.jit
def _tanh(a, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = math.tanh(a[r, c])


def fill(out, value, stream=0):
    """out[:] = value"""
    launch_elementwise(_fill, out, out, float32(value), stream=stream)


def add(a, b, out, stream=0):
    """out = a + b"""
    launch_elementwise(_add, out, a, b, out, stream=stream)


def add_bias(a, bias, out, stream=0):
    """out = a + bias (bias broadcast along rows)"""
    launch_elementwise(_add_bias, out, a, bias, out, stream=stream)


def mul(a, b, out, stream=0):
    """out = a * b"""
    launch_elementwise(_mul, out, a, b, out, stream=stream)


def sigmoid(a, out, stream=0):
    """out = 1 / (1 + exp(-a))"""
    launch_elementwise(_sigmoid, out, a, out, stream=stream)


def tanh(a, out, stream=0):
    """out = tanh(a)"""
    launch_elementwise(_tanh, out, a, out, stream=stream)


def case(size: str, rng) -> list:
    """The runner's cases: each operation on (rows, 4 x units) at ``size``."""
    return elementwise_cases(size, rng, {
        "fill": (lambda a, b, bias, out: fill(out, 0.5), lambda a, b, bias: np.full(a.shape, 0.5), 1),
        "add": (lambda a, b, bias, out: add(a, b, out), lambda a, b, bias: a + b, 3),
        "add_bias": (lambda a, b, bias, out: add_bias(a, bias, out), lambda a, b, bias: a + bias, 3),
        "mul": (lambda a, b, bias, out: mul(a, b, out), lambda a, b, bias: a * b, 3),
        "sigmoid": (lambda a, b, bias, out: sigmoid(a, out), lambda a, b, bias: sigmoid64(a), 2),
        "tanh": (lambda a, b, bias, out: tanh(a, out), lambda a, b, bias: np.tanh(a), 2)})


def add_bias_traffic(args, grid, block, constants) -> Traffic:
    """Every thread loads its column's bias: rows x cols loads of a cols-long footprint."""
    rows, cols = args["out"].shape
    traffic = elementwise(args, "out", ("a",), 1)
    bias = view_of(args["bias"]).head(cols)
    return dataclasses.replace(traffic, loads={**traffic.loads, "bias": rows * cols},
                               reads=traffic.reads + (bias,), inputs=traffic.inputs + (bias,))


def _op(kernel, inputs: tuple, flop: int, access: tuple, signature: tuple, traffic=None, **facts):
    traffic = traffic or (lambda args, grid, block, constants: elementwise(args, "out", inputs, flop))
    return spec("pointwise", 1, kernel, "one element-wise operation per launch (steps 02-04)", access, traffic,
                signature, "element-wise", **facts)


SPECS = (
    _op(_fill, (), 0, ((), (0,)), (A2, float32), role="fill", colour="tab:green"),
    _op(_add, ("a", "b"), 1, ((0, 1), (2,)), (A2, A2, A2), colour="tab:red"),
    _op(_add_bias, ("a",), 1, ((0, 1), (2,)), (A2, A1, A2), add_bias_traffic, colour="tab:purple"),
    _op(_mul, ("a", "b"), 1, ((0, 1), (2,)), (A2, A2, A2), colour="tab:brown"),
    _op(_sigmoid, ("a",), SIGMOID_FLOP, ((0,), (1,)), (A2, A2), colour="tab:pink"),
    _op(_tanh, ("a",), TANH_FLOP, ((0,), (1,)), (A2, A2), colour="tab:gray"),
)
