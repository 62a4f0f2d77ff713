"""Training version 1, ``lstm_cell_train``: the fused forward cell (``pointwise.lstm_cell``,
notebook 05) that also stores step t's gate activations (i, f, g = tanh(z_c), o) and its cell state
c_t: the backward pass needs both, and recomputing them would mean running the recurrence again.

The forward pass of every backward step (bwd01-05, ``backward/training_forward.py``) launches it.
"""

from __future__ import annotations

import math

from numba import cuda

from ..case import Case, poisoned
from ..pointwise.base import A1, A2, CELL_SHAPES, cell64, cell_inputs, launch_elementwise, sigmoidf, spec


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


def case(size: str, rng) -> list:
    """The runner's case: one layer-step's cell at ``CELL_SHAPES[size]``, gates and c saved."""
    rows, units = CELL_SHAPES[size]
    x_gates, h_gates, bias, c0 = cell_inputs(size, rng)
    c_new, h_new, gates = cell64(x_gates, h_gates, bias, c0.astype("float64"))
    xg, hg, b_d, c_d = (cuda.to_device(a) for a in (x_gates, h_gates, bias, c0))
    h_d, gates_d, saved_d = poisoned(rows, units), poisoned(rows, 4 * units), poisoned(rows, units)
    return [Case(f"{rows} x {units} units", lambda: lstm_cell_train(xg, hg, b_d, c_d, h_d, gates_d, saved_d),
                 {"c": c_d, "h": h_d, "gates": gates_d, "c_saved": saved_d},
                 {"c": c_new, "h": h_new, "gates": gates, "c_saved": c_new}, 40.0 * rows * units,
                 4.0 * rows * 14 * units + 16.0 * units, reset=lambda: c_d.copy_to_device(c0))]  # per row: 14 H words


SPECS = (spec("pointwise_backward", 1, _lstm_cell_train, "the fused cell that also saves gates and c (bwd01-05)",
              ((0, 1, 2, 3), (3, 4, 5, 6)), None, (A2, A2, A1, A2, A2, A2, A2),
              "fused cell, saves gates"),)
