"""The forward pass that feeds the backward ladder: notebook 08's wavefront, keeping its work.

The backward pass of step t needs the gate activations i, f, g, o of step t and the cell states
c_t and c_{t-1}; the forward ladder computes them in registers and throws them away. This step
is the wavefront (``steps/step08_wavefront.py``: combined input GEMMs, layers along diagonals on
their own streams), with the fused cell swapped for ``lstm_cell_train``, which also stores them:
5 more floats per unit and step, no more launches. Each layer's output sequence, which the
wavefront already keeps whole, is the other thing the backward reads (h_{t-1} for dU, the layer
above's input for its dW).

What changes: ``setup`` (two sequences per lane) and ``run_chunk`` (the training cell).

State added, per lane: ``gates`` (T, B, 4H), the activations; ``cs`` (T, B, H), c at every step.
"""

from __future__ import annotations

from ..kernels import pointwise_backward as pwb
from ..steps.resources import rows, scratch
from ..steps.step08_wavefront import Wavefront


class TrainingForward(Wavefront):
    name = "training_forward"
    title = "the wavefront, keeping the gates and c of every step for the backward pass"
    #: The training cell reads one recurrent product: no split-K parts (step 06) here.
    split_recurrent = False

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
        for lane in state.lanes:
            lane.gates = scratch((T, B, 4 * H))
            lane.cs = scratch((T, B, H))
        return state

    def run_chunk(self, state, layer, k, xs, hs):
        lane, weights = state.lanes[layer], state.layers[layer]
        t0, t1 = state.chunks[k]
        if layer > 0:
            state.lanes[layer - 1].chunk_done[k].wait(lane.stream)
            self.input_gemm(weights, rows(xs[t0:t1]), rows(lane.x_seq[t0:t1]), lane.stream)
        elif k == 0:
            self.input_gemm(weights, rows(xs), rows(lane.x_seq), lane.stream)
        h_prev = lane.h_zero if t0 == 0 else hs[t0 - 1]
        for t in range(t0, t1):
            self.recurrent_gemm(lane, weights, h_prev)
            pwb.lstm_cell_train(lane.x_seq[t], lane.h_gates, weights.bias, lane.c, hs[t], lane.gates[t], lane.cs[t],
                                stream=lane.stream)
            h_prev = hs[t]
        lane.chunk_done[k].record(lane.stream)


STEP = TrainingForward()
