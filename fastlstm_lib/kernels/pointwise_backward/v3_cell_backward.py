"""Training version 3, ``lstm_cell_backward``: version 2's work, the whole cell's backward, in one
kernel per layer-step: bwd02-05 (fused_pointwise, combined_gemms, combined_weights, wavefront).

One thread per (batch row, hidden unit) reads the unit's dh (from the layer above and from the
recurrence), its 4 saved gates and c_t, c_{t-1}; writes the unit's 4 columns of dz and carries dc
to step t-1 in place.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from ..case import Case, f32, poisoned
from ..pointwise.base import A2, CELL_SHAPES, launch_elementwise, spec


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


def case(size: str, rng) -> list:
    """The runner's case: one layer-step's backward cell at ``CELL_SHAPES[size]``, dc carried in place."""
    rows, units = CELL_SHAPES[size]
    dh_out, dh_rec, c_prev, dc, c = (f32(rng, rows, units) for _ in range(5))
    z = f32(rng, rows, 4 * units)
    gates = np.concatenate([1 / (1 + np.exp(-z[:, :2 * units])), np.tanh(z[:, 2 * units:3 * units]),
                            1 / (1 + np.exp(-z[:, 3 * units:]))], axis=1).astype(np.float32)
    i, f, gg, o = (gates[:, q * units:(q + 1) * units].astype(np.float64) for q in range(4))
    dh = dh_out.astype(np.float64) + dh_rec
    tanh_c = np.tanh(c.astype(np.float64))
    dc_t = dh * o * (1 - tanh_c ** 2) + dc
    dz = np.concatenate([dc_t * gg * i * (1 - i), dc_t * c_prev * f * (1 - f), dc_t * i * (1 - gg ** 2),
                         dh * tanh_c * o * (1 - o)], axis=1)
    arrays = [cuda.to_device(a) for a in (dh_out, dh_rec, gates, c, c_prev, dc)]
    dz_d = poisoned(rows, 4 * units)
    return [Case(f"{rows} x {units} units", lambda: lstm_cell_backward(*arrays, dz_d), {"dc": arrays[5], "dz": dz_d},
                 {"dc": dc_t * f, "dz": dz}, 30.0 * rows * units, 4.0 * rows * units * 14,
                 reset=lambda: arrays[5].copy_to_device(dc))]


SPECS = (spec("pointwise_backward", 3, _lstm_cell_backward, "the cell's backward in one launch (bwd02-05)",
              ((0, 1, 2, 3, 4, 5), (5, 6)), None, (A2,) * 7, "fused cell backward"),)
