"""The kernel runner's case of a persistent version (``layer_case``): one layer's whole sequence
from its plan and its launch, against float64.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ...config import LSTMConfig
from ...params import init_params, random_input
from ...reference import lstm_layer64
from ..case import Case, poisoned


def layer_case(batch: int, steps: int, hidden: int, plan_, describe) -> Case:
    """A persistent version's runner case: ``plan_(hidden, batch).launch(x_gates, recurrent, bias,
    hs)`` for one layer of unsaturated gates, its output poisoned first, against float64 from x;
    ``describe(plan)`` says what the plan is."""
    grid_ = plan_(hidden, batch)
    cfg = LSTMConfig(batch=batch, seq_len=steps, input_size=hidden, hidden=hidden, layers=1)
    (layer,), x = init_params(cfg, seed=0), random_input(cfg, seed=1)  # unsaturated gates
    kernel, recurrent, bias = layer
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))  # (T, B, 4H)
    want = lstm_layer64(x, layer)[0].transpose(1, 0, 2)
    arrays = [cuda.to_device(a) for a in (x_gates, recurrent, bias)]
    hs = poisoned(steps, batch, hidden)
    flop = steps * batch * hidden * (8.0 * hidden + 40.0)
    moved = 4.0 * (x_gates.size + recurrent.size + bias.size + hs.size + grid_.blocks * (steps - 1) * batch * hidden)
    return Case(f"batch {batch}, {steps} steps, hidden {hidden}: {describe(grid_)}", lambda: grid_.launch(*arrays, hs),
                {"hs": hs}, {"hs": want}, flop, moved)
