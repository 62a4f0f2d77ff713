"""Element-wise kernels of training: the forward cell that keeps what the backward needs, the
derivatives of the activations op by op, and the fused backward cell (notebooks 40-42).

Its versions, and the steps that launch them (the forward ones are in ``pointwise.py``; ``SPECS``
at the end holds each version's facts):

1. ``lstm_cell_train``: the forward pass of every backward step (bwd01-05,
   ``backward/training_forward.py``).
2. ``sigmoid_backward``, ``tanh_backward``: the backward cell op by op, with ``pointwise``'s
   ``add``, ``mul`` and ``tanh``: bwd01 (op_by_op), 14 launches per layer-step.
3. ``lstm_cell_backward``: version 2's work in one kernel per layer-step: bwd02-05
   (fused_pointwise, combined_gemms, combined_weights, wavefront).

``lstm_cell_train``: the fused forward cell of ``pointwise.lstm_cell`` (notebook 05) that also
stores step t's gate activations (i, f, g = tanh(z_c), o) and its cell state c_t: the backward
pass needs both, and recomputing them would mean running the recurrence again.

``sigmoid_backward`` / ``tanh_backward``: d * s * (1 - s) and d * (1 - t^2), the two derivatives
the op-by-op backward chains with ``pointwise.add`` / ``mul`` / ``tanh`` (14 kernels per
layer-step, see ``backward/bwd01_op_by_op.py``).

``lstm_cell_backward``: all of that in one kernel per layer-step. One thread per (batch row,
hidden unit) reads the unit's dh (from the layer above and from the recurrence), its 4 saved
gates and c_t, c_{t-1}; writes the unit's 4 columns of dz and carries dc to step t-1 in place.
"""

from __future__ import annotations

import math

from numba import cuda, float32

from .pointwise import launch_elementwise, sigmoidf
from .spec import BACKWARD_STEPS, Build, Spec, function_name


@cuda.jit
def _lstm_cell_train(x_gates, h_gates, bias, c, h, gates, c_saved):
    i = cuda.grid(1)
    hidden = c.shape[1]
    if i < c.size:
        r, j = i // hidden, i % hidden
        gate_i = sigmoidf(x_gates[r, j] + h_gates[r, j] + bias[j])
        gate_f = sigmoidf(x_gates[r, hidden + j] + h_gates[r, hidden + j] + bias[hidden + j])
        gate_g = math.tanh(x_gates[r, 2 * hidden + j] + h_gates[r, 2 * hidden + j] + bias[2 * hidden + j])
        gate_o = sigmoidf(x_gates[r, 3 * hidden + j] + h_gates[r, 3 * hidden + j] + bias[3 * hidden + j])
        c_new = gate_f * c[r, j] + gate_i * gate_g
        c[r, j] = c_new
        h[r, j] = gate_o * math.tanh(c_new)
        # What the backward pass reads: 5 more stores per unit, no more loads.
        gates[r, j] = gate_i
        gates[r, hidden + j] = gate_f
        gates[r, 2 * hidden + j] = gate_g
        gates[r, 3 * hidden + j] = gate_o
        c_saved[r, j] = c_new


def lstm_cell_train(x_gates, h_gates, bias, c, h, gates, c_saved, stream=0):
    """``pointwise.lstm_cell`` that also writes the activations (B, 4H: i, f, g, o) to ``gates``
    and the new c to ``c_saved`` (B, H)."""
    launch_elementwise(_lstm_cell_train, c, x_gates, h_gates, bias, c, h, gates, c_saved, stream=stream)


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


@cuda.jit
def _lstm_cell_backward(dh_out, dh_rec, gates, c, c_prev, dc, dz):
    i = cuda.grid(1)
    hidden = dc.shape[1]
    if i < dc.size:
        r, j = i // hidden, i % hidden
        gate_i = gates[r, j]
        gate_f = gates[r, hidden + j]
        gate_g = gates[r, 2 * hidden + j]
        gate_o = gates[r, 3 * hidden + j]
        tanh_c = math.tanh(c[r, j])
        dh = dh_out[r, j] + dh_rec[r, j]  # from the layer above (or the loss), and from step t+1
        dc_t = dh * gate_o * (float32(1.0) - tanh_c * tanh_c) + dc[r, j]
        dz[r, j] = dc_t * gate_g * gate_i * (float32(1.0) - gate_i)
        dz[r, hidden + j] = dc_t * c_prev[r, j] * gate_f * (float32(1.0) - gate_f)
        dz[r, 2 * hidden + j] = dc_t * gate_i * (float32(1.0) - gate_g * gate_g)
        dz[r, 3 * hidden + j] = dh * tanh_c * gate_o * (float32(1.0) - gate_o)
        dc[r, j] = dc_t * gate_f  # what step t-1 receives through c


def lstm_cell_backward(dh_out, dh_rec, gates, c, c_prev, dc, dz, stream=0):
    """One layer-step's point-wise backward in one launch.

    dh_out, dh_rec (B, H): the gradient of h_t from the layer above and from step t+1 (dz_{t+1}
    U^T); gates (B, 4H) and c, c_prev (B, H): what the forward saved; dc (B, H): in, dc from step
    t+1; out, dc for step t-1; dz (B, 4H): out, the gradient of the gate pre-activations."""
    launch_elementwise(_lstm_cell_backward, dc, dh_out, dh_rec, gates, c, c_prev, dc, dz, stream=stream)


# ---- the versions' facts (kernels/spec.py): no traffic formula written for these -------------------

_A2, _A1 = float32[:, :], float32[:]


def _spec(number: int, kernel, what: str, steps: tuple, access: tuple, signature: tuple, built: str) -> Spec:
    name = function_name(kernel)
    return Spec("pointwise_backward", number, name, what, steps, access, None,
                lambda: (Build(name.lstrip("_"), lambda: (kernel, signature), built),))


SPECS = (
    _spec(1, _lstm_cell_train, "the fused cell that also saves gates and c (bwd01-05)", BACKWARD_STEPS,
          ((0, 1, 2, 3), (3, 4, 5, 6)), (_A2, _A2, _A1, _A2, _A2, _A2, _A2), "fused cell, saves gates"),
    _spec(2, _sigmoid_backward, "one derivative per launch (bwd01)", BACKWARD_STEPS[:1], ((0, 1), (2,)), (_A2,) * 3,
          "element-wise"),
    _spec(2, _tanh_backward, "one derivative per launch (bwd01)", BACKWARD_STEPS[:1], ((0, 1), (2,)), (_A2,) * 3,
          "element-wise"),
    _spec(3, _lstm_cell_backward, "the cell's backward in one launch (bwd02-05)", BACKWARD_STEPS[1:],
          ((0, 1, 2, 3, 4, 5), (5, 6)), (_A2,) * 7, "fused cell backward"),
)
