"""Element-wise version 2, ``lstm_cell``: all of version 1 for one layer-step in one kernel (notebook 05).

Steps 05-08 (fused_pointwise, pretransposed, combined_inputs, wavefront) launch it where the
recurrent GEMM is not split (always under the ladder's default GEMM policy,
``steps/gemm_policy.py``). Step 09's persistent kernel does the same work inside itself, with
``sigmoidf``.
"""

from __future__ import annotations

import math

from numba import cuda

from ..case import Case, poisoned
from .base import C1, C2, CELL_ACCESS, CELL_SHAPES, cell64, cell_inputs, cell_traffic, launch_elementwise, sigmoidf, \
    spec


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


def case(size: str, rng) -> list:
    """The runner's case: one layer-step's cell at ``CELL_SHAPES[size]``, c updated in place."""
    rows, units = CELL_SHAPES[size]
    x_gates, h_gates, bias, c0 = cell_inputs(size, rng)
    c_new, h_new, _ = cell64(x_gates, h_gates, bias, c0.astype("float64"))
    xg, hg, b_d, c_d, h_d = (cuda.to_device(x_gates), cuda.to_device(h_gates), cuda.to_device(bias),
                             cuda.to_device(c0), poisoned(rows, units))
    return [Case(f"{rows} x {units} units", lambda: lstm_cell(xg, hg, b_d, c_d, h_d), {"c": c_d, "h": h_d},
                 {"c": c_new, "h": h_new}, 40.0 * rows * units, 4.0 * rows * 9 * units + 16.0 * units,
                 reset=lambda: c_d.copy_to_device(c0))]  # per row: 2 x 4H in, c in and out, h out


SPECS = (spec("pointwise", 2, _lstm_cell, "the whole cell of a layer-step in one launch (notebook 05)", CELL_ACCESS,
              lambda args, grid, block, constants: cell_traffic(args, "h_gates", ()), (C2, C2, C1, C2, C2),
              "fused cell", role="fused cell", colour="tab:orange"),)
