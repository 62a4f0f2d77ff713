"""Element-wise kernels on (rows, cols) device arrays: one thread per element.

Its versions, and the steps that launch them (the README's table counts them per pass):

1. one kernel per operation: ``fill``, ``add``, ``add_bias``, ``mul``, ``sigmoid``, ``tanh``.
   The unfused cell of steps 02-04 (baseline, combined_gemms, streams), 17 launches per
   layer-step; ``fill`` zeroes the cell state in steps 02-08 and the gradients in bwd01-05. The
   op-by-op backward (bwd01) chains ``add``, ``mul`` and ``tanh`` with the derivatives in
   ``pointwise_backward.py``.
2. ``lstm_cell``: all of version 1 for one layer-step in one kernel (notebook 05): steps 05-08
   (fused_pointwise, pretransposed, combined_inputs, wavefront) where the recurrent GEMM is not
   split. Step 09's persistent kernel (``persistent.py``) does the same work inside itself, with
   ``sigmoidf`` from here.
3. ``lstm_cell_split``: 2 with the recurrent product in parts, one per part of K, as the GEMM's
   split-K version (``gemm.gemm_split``) leaves it, added in the same pass: steps 06-08 where
   ``gemm.choose_splits`` cuts K (at batch 64 on an H100 or an M40; never on the simulator).

The training versions (the fused cell that saves its gates, the activations' derivatives, the
fused backward cell) are in ``pointwise_backward.py``.

The version-1 kernels are the small, separate kernels of the unfused LSTM: each reads its inputs
from global memory and writes its result back, and each costs a launch. The fused step replaces a
whole chain of them with a single kernel.
"""

from __future__ import annotations

import math

from numba import cuda, float32

from .. import simulator
from .geometry import pointwise_grid


#: Below this, exp(-z) overflows float32 (ln of its largest value is 88.72): sigmoid is 0 there.
SIGMOID_FLOOR = -88.72


@cuda.jit(device=True, inline=True)
def sigmoidf(z):
    """1 / (1 + exp(-z)), saturating like the reference for any finite z. Below ``SIGMOID_FLOOR``
    it returns 0, which is what a GPU's float32 exp gives there anyway (1 / inf); without the test,
    the simulator's Python math.exp(-z) raises OverflowError once z < -709. Above it, the same
    formula as ever, so every result is unchanged to the bit."""
    if z < float32(SIGMOID_FLOOR):
        return float32(0.0)
    return float32(1.0) / (float32(1.0) + math.exp(-z))


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


def launch_elementwise(kernel, out, *args, stream=0):
    """Launch an element-wise ``kernel(*args)`` with one thread per element of ``out``."""
    simulator.announce()
    blocks, threads = pointwise_grid(out.size)
    kernel[blocks, threads, stream](*args)


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


# --------------------------------------------------------------------------------------------
# Version 2, the fused cell (notebook 05): everything above, for one layer-step, in one kernel.


@cuda.jit
def _lstm_cell(x_gates, h_gates, bias, c, h):
    # One thread per (batch row, hidden unit): it reads that unit's 4 gate pre-activations from
    # both GEMM results, and writes c and h once. Nothing else goes through global memory.
    i = cuda.grid(1)
    hidden = c.shape[1]
    if i < c.size:
        r, j = i // hidden, i % hidden
        z_i = x_gates[r, j] + h_gates[r, j] + bias[j]
        z_f = x_gates[r, hidden + j] + h_gates[r, hidden + j] + bias[hidden + j]
        z_c = x_gates[r, 2 * hidden + j] + h_gates[r, 2 * hidden + j] + bias[2 * hidden + j]
        z_o = x_gates[r, 3 * hidden + j] + h_gates[r, 3 * hidden + j] + bias[3 * hidden + j]
        c_new = sigmoidf(z_f) * c[r, j] + sigmoidf(z_i) * math.tanh(z_c)
        c[r, j] = c_new
        h[r, j] = sigmoidf(z_o) * math.tanh(c_new)


def lstm_cell(x_gates, h_gates, bias, c, h, stream=0):
    """One layer-step's point-wise work in one launch: z = x_gates + h_gates + bias (B, 4H, gates
    i, f, c, o); c = f*c + i*tanh(z_c) in place; h = o*tanh(c)."""
    launch_elementwise(_lstm_cell, c, x_gates, h_gates, bias, c, h, stream=stream)


# --------------------------------------------------------------------------------------------
# Version 3, the fused cell that adds the recurrent GEMM's split-K parts (gemm.py's version 6).


@cuda.jit
def _lstm_cell_split(x_gates, h_parts, bias, c, h):
    # Version 2, with h_gates = h_parts[0] + h_parts[1] + ...: the parts of the recurrent product
    # that version 6 of the GEMM left, one per part of K, added here in one pass (no extra launch).
    i = cuda.grid(1)
    hidden = c.shape[1]
    if i < c.size:
        r, j = i // hidden, i % hidden
        z_i = x_gates[r, j] + bias[j]
        z_f = x_gates[r, hidden + j] + bias[hidden + j]
        z_c = x_gates[r, 2 * hidden + j] + bias[2 * hidden + j]
        z_o = x_gates[r, 3 * hidden + j] + bias[3 * hidden + j]
        for s in range(h_parts.shape[0]):
            z_i += h_parts[s, r, j]
            z_f += h_parts[s, r, hidden + j]
            z_c += h_parts[s, r, 2 * hidden + j]
            z_o += h_parts[s, r, 3 * hidden + j]
        c_new = sigmoidf(z_f) * c[r, j] + sigmoidf(z_i) * math.tanh(z_c)
        c[r, j] = c_new
        h[r, j] = sigmoidf(z_o) * math.tanh(c_new)


def lstm_cell_split(x_gates, h_parts, bias, c, h, stream=0):
    """``lstm_cell`` with the recurrent product in parts: z = x_gates + bias + h_parts.sum(0)
    (h_parts (splits, B, 4H), from ``gemm.gemm_split``); c in place, h out."""
    if len(h_parts.shape) != 3 or tuple(h_parts.shape[1:]) != tuple(x_gates.shape):
        raise ValueError(f"h_parts must be (splits, {x_gates.shape[0]}, {x_gates.shape[1]}) like x_gates, "
                         f"got shape {tuple(h_parts.shape)}")
    launch_elementwise(_lstm_cell_split, c, x_gates, h_parts, bias, c, h, stream=stream)
