"""Step 04, streams: the input GEMM on its own stream, beside the recurrent one.

x_t @ W does not depend on the previous step; only h_{t-1} @ U does. So the input GEMMs go to
a second CUDA stream, where they can run ahead of the recurrence and overlap it, and an event per
step tells the main stream when step t's input product is ready. Each step's input product gets
its own slot in a (T, B, 4H) buffer, so a GEMM running ahead never overwrites one still in use.

Both streams are ordinary (blocking) streams: the legacy default stream, on which the harness
records its timing events and the runner copies, waits for all their work and they for its, so a
run is still one unit of work between two events.

What changes: ``setup`` (two streams, events, the per-step buffer) and ``run_layer``.

State added:
- ``stream`` (now a stream of its own: the recurrence) and ``side`` (the input GEMMs);
- ``x_seq``: x_t @ W for every step of the layer, (T, B, 4H);
- ``layer_ready``: an event, the layer's input is written; ``input_done``: one event per step,
  its input product is ready.
"""

from __future__ import annotations

from numba import cuda

from ..kernels import pointwise as pw
from .resources import ordering_event, scratch
from .step03_combined_gemms import CombinedGemms


class Streams(CombinedGemms):
    name = "streams"
    title = "input GEMM on its own stream, concurrent with the recurrent GEMM"

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        state.stream = cuda.stream()  # the recurrence: recurrent GEMM and point-wise work
        state.side = cuda.stream()  # the input GEMMs
        state.x_seq = scratch((cfg.seq_len, cfg.batch, 4 * cfg.hidden))  # x_t @ W for every t
        state.layer_ready = ordering_event()
        state.input_done = [ordering_event() for _ in range(cfg.seq_len)]
        return state

    def run_layer(self, state, weights, xs, hs):
        # The side stream may read this layer's input only once the main stream has written it
        # (the layer below is done), and may reuse x_seq only once the main stream has read it.
        state.layer_ready.record(state.stream)
        state.layer_ready.wait(state.side)
        pw.fill(state.c, 0.0, stream=state.stream)
        h_prev = state.h_zero
        for t in range(xs.shape[0]):
            self.input_gemm(weights, xs[t], state.x_seq[t], state.side)  # may run ahead
            state.input_done[t].record(state.side)
            self.recurrent_gemm(state, weights, h_prev)  # concurrently, on the main stream
            state.input_done[t].wait(state.stream)  # the point-wise work needs both products
            self.cell_update(state, weights, state.x_seq[t], state.h_gates, hs[t])
            h_prev = hs[t]


STEP = Streams()
