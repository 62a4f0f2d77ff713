"""Backward step 2, fused point-wise: one kernel per layer-step for the whole cell backward.

The 14 element-wise kernels of step 1 each do a few FLOPs per element and a round trip through
memory. One thread per (batch row, hidden unit) can do all of it in registers: read dh (from the
layer above and from the recurrence), the 4 saved gates and c_t, c_{t-1}; write the unit's 4
columns of dz; carry dc back to step t-1 in place (``kernels/pointwise_backward/v3_cell_backward.py``). The same
idea as the forward's fused cell (notebook 05), in reverse: 13 launches fewer per layer-step.

What changes: ``cell_backward`` only.

State added: none (``tmp_back`` is no longer used).
"""

from __future__ import annotations

from ..kernels import pointwise_backward as pwb
from .bwd01_op_by_op import BackwardOpByOp


class BackwardFusedPointwise(BackwardOpByOp):
    name = "bwd_fused_pointwise"
    title = "one element-wise kernel for every gate derivative and the cell-state recurrence"

    def cell_backward(self, state, lane, t, dh_t, stream):
        c_prev = lane.cs[t - 1] if t > 0 else state.c_zero
        pwb.lstm_cell_backward(dh_t, lane.dh_rec, lane.gates[t], lane.cs[t], c_prev, lane.dc, lane.dz_seq[t],
                               stream=stream)


STEP = BackwardFusedPointwise()
