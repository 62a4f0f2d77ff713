"""Step 05, fused point-wise: one kernel per layer-step for the bias, the activations, c and h.

The 17 element-wise kernels each did a few FLOPs per element and a full round trip through
global memory, and each cost a launch. One kernel with one thread per (batch row, hidden unit)
reads that unit's 4 gate pre-activations from both GEMM results, keeps every intermediate in
registers, and writes c and h once: 2 launches per layer-step are left (1 GEMM on each stream,
plus this one on the main stream).

What changes: ``cell_update`` only.
"""

from __future__ import annotations

from ..kernels import pointwise as pw
from .step04_streams import Streams


class FusedPointwise(Streams):
    name = "fused_pointwise"
    title = "one element-wise kernel for bias + activations + cell update"

    def cell_update(self, s, w, x_gates, h_gates, h_t):
        pw.lstm_cell(x_gates, h_gates, w.bias, s.c, h_t, stream=s.stream)


STEP = FusedPointwise()
