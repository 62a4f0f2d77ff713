"""Element-wise version 3, ``lstm_cell_split``: version 2 with the recurrent product in parts, one
per part of K, as the GEMM's split-K version (``gemm.gemm_split``) leaves it, added in the same pass.

Steps 06-08 launch it under the "fast" GEMM policy where ``gemm.choose_splits`` cuts K (at batch
64 on an H100 or an M40; never on the simulator).
"""

from __future__ import annotations

import math

from numba import cuda

from ..case import Case, f32, poisoned
from .base import C1, C2, C3, CELL_ACCESS, CELL_SHAPES, cell64, cell_inputs, cell_traffic, launch_elementwise, \
    sigmoidf, spec


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


def case(size: str, rng) -> list:
    """The runner's case: the cell at ``CELL_SHAPES[size]`` with its recurrent product in 4 parts."""
    rows, units = CELL_SHAPES[size]
    x_gates, _, bias, c0 = cell_inputs(size, rng)
    h_parts = f32(rng, 4, rows, 4 * units, scale=0.25)
    c_new, h_new, _ = cell64(x_gates, h_parts.astype("float64").sum(axis=0), bias, c0.astype("float64"))
    xg, hp, b_d, c_d, h_d = (cuda.to_device(x_gates), cuda.to_device(h_parts), cuda.to_device(bias),
                             cuda.to_device(c0), poisoned(rows, units))
    words = 4 * units + 16 * units + 3 * units  # per row: x_gates, 4 parts of 4H, c in and out, h out
    return [Case(f"{rows} x {units} units, 4 parts", lambda: lstm_cell_split(xg, hp, b_d, c_d, h_d),
                 {"c": c_d, "h": h_d}, {"c": c_new, "h": h_new}, (40.0 + 12.0) * rows * units,
                 4.0 * rows * words + 16.0 * units, reset=lambda: c_d.copy_to_device(c0))]


SPECS = (spec("pointwise", 3, _lstm_cell_split, "2 adding the recurrent product's split-K parts as it reads them",
              CELL_ACCESS, lambda args, grid, block, constants: cell_traffic(args, "h_parts", (args["h_parts"].shape[0],)),
              (C2, C3, C1, C2, C2), "fused cell, split-K parts"),)
