"""Step 05, fused point-wise: one kernel per layer-step for the bias, the activations, c and h.

The 17 element-wise kernels each did a few FLOPs per element and a full round trip through
global memory, and each cost a launch. One kernel with one thread per (batch row, hidden unit)
reads that unit's 4 gate pre-activations from both GEMM results, keeps every intermediate in
registers, and writes c and h once: 3 launches per layer-step are left (the input GEMM on the
side stream, the recurrent GEMM and this kernel on the main stream).

What changes: ``cell_update`` only.

State added: none (``z``, ``act`` and ``tmp`` are no longer used).
"""

from __future__ import annotations

from ..kernels import pointwise as pw
from .step04_streams import Streams


class FusedPointwise(Streams):
    name = "fused_pointwise"
    title = "one element-wise kernel for bias + activations + cell update"

    def cell_update(self, state, weights, x_gates, h_gates, h_t):
        pw.lstm_cell(x_gates, h_gates, weights.bias, state.c, h_t, stream=state.stream)


STEP = FusedPointwise()
