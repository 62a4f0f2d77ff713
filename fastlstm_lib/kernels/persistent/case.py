"""The kernel runner's case of a persistent version (``layer_case``): one layer's whole sequence
from its plan and its launch, against float64.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ...numerics import lstm_layer64
from ..case import Case, f32, poisoned


def layer_case(batch: int, steps: int, hidden: int, plan_, describe) -> Case:
    """A persistent version's runner case: ``plan_(hidden, batch).launch(x_gates, recurrent, bias,
    hs)`` for one layer of unsaturated gates, its output poisoned first, against float64 from x;
    ``describe(plan)`` says what the plan is."""
    grid_ = plan_(hidden, batch)
    weights = np.random.default_rng(0)
    scale = 0.5 / math.sqrt(2 * hidden)  # gate pre-activations near N(0, 0.5^2): unsaturated gates
    kernel, recurrent = f32(weights, hidden, 4 * hidden, scale=scale), f32(weights, hidden, 4 * hidden, scale=scale)
    bias = f32(weights, 4 * hidden, scale=0.1)
    x = f32(np.random.default_rng(1), batch, steps, hidden)  # (B, T, in), in = hidden
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))  # (T, B, 4H)
    want = lstm_layer64(x, (kernel, recurrent, bias))[0].transpose(1, 0, 2)
    arrays = [cuda.to_device(a) for a in (x_gates, recurrent, bias)]
    hs = poisoned(steps, batch, hidden)
    flop = steps * batch * hidden * (8.0 * hidden + 40.0)
    moved = 4.0 * (x_gates.size + recurrent.size + bias.size + hs.size + grid_.blocks * (steps - 1) * batch * hidden)
    return Case(f"batch {batch}, {steps} steps, hidden {hidden}: {describe(grid_)}", lambda: grid_.launch(*arrays, hs),
                {"hs": hs}, {"hs": want}, flop, moved)
