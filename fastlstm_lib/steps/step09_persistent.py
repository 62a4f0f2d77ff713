"""Step 09, beyond cuDNN 5: a persistent kernel that keeps the recurrent weights on chip.

After the whole ladder, every layer-step still (1) launches two kernels from the host and (2)
reads all of U (H x 4H floats, 4 MiB at hidden 512) from memory for a GEMM that is only batch
rows tall. At batch 4 that is ~1 FLOP per byte: the step is bound by memory and launches, not by
arithmetic. Persistent RNNs (Diamos et al., 2016; cuDNN's PERSIST algorithms later) turn this
around: ONE launch per layer runs every step, each block holds its slice of U in shared memory
for the whole sequence, and a grid-wide barrier separates the steps.

Per layer: one GEMM for every step's input product (step 07), then one cooperative launch of
``kernels/persistent.py``. It builds on combined_inputs, with layers one after the other (each
layer's persistent grid already occupies the whole GPU).

What changes: ``setup`` (plan the grid, or say plainly why the layer does not fit) and
``run_layer`` (2 launches per layer instead of 2 per layer-step).
"""

from __future__ import annotations

from ..kernels import persistent
from .step07_combined_inputs import CombinedInputs, rows


class Persistent(CombinedInputs):
    name = "persistent"
    title = "one cooperative launch per layer, weights kept in shared memory"

    def setup(self, params, cfg, **options):
        # Fails here, before anything is launched, if the chip can't hold the layer.
        grid = persistent.plan(cfg.hidden, cfg.batch)
        state = super().setup(params, cfg, **options)
        state.plan = grid
        return state

    def run_layer(self, state, weights, xs, hs):
        s = state
        self.input_gemm(weights, rows(xs), rows(s.x_seq), s.stream)  # every step at once
        persistent.launch(s.plan, s.x_seq, weights.recurrent, weights.bias, hs, stream=s.stream)


STEP = Persistent()
