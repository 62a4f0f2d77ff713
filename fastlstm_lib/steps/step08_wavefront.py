"""Step 08, the wavefront: layers run concurrently along diagonals.

Layer l at step t needs only (l-1, t), its input, and (l, t-1), its own state. So layer 1 can
start step 0 as soon as layer 0 has finished step 0, and while layer 1 works on step t, layer 0
works on step t+1: the work advances along diagonals l + t = const, and up to one layer-step per
layer runs at the same time: several small GEMMs at once give the SMs the warps one alone can't
(one recurrent GEMM leaves most of an SM's warp slots empty, so memory latency goes unhidden).

Each layer gets its own stream and its own buffers (c, the gate products, its output sequence).
The input products stay combined (step 07), in chunks: layer 0's inputs are known, so its
input GEMMs are queued at once; layer l > 0 takes chunk k of its input as soon as layer l-1 has
recorded that chunk's event, one GEMM per chunk. Chunks are the grain of the wavefront: smaller
ones let the layers overlap sooner, larger ones make taller GEMMs (``chunk`` option; by default
step 07's, the article's 2 steps: its program, LSTM.cu, walks the diagonals in ranges of
``RECUR_BATCH_SIZE`` steps; other chunks are experiments).

What changes: ``setup`` (a lane per layer) and ``run`` (the diagonals).

State added:
- ``lanes``: per layer, its ``stream``, ``c``, ``h_gates``, ``x_seq``, ``h_zero`` and one
  ``chunk_done`` event per chunk (its output for that chunk is written);
- ``hidden_seq``: now one (T, B, H) output per layer below the top, kept whole for the layer above.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import cuda

from ..kernels import pointwise as pw
from .resources import ordering_event, rows, scratch
from .step07_combined_inputs import CombinedInputs


class Wavefront(CombinedInputs):
    name = "wavefront"
    title = "layers run concurrently along diagonals"

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
        h_zero = cuda.to_device(np.zeros((B, H), dtype=np.float32))
        # A lane per layer: everything one layer's recurrence touches, and the stream it runs on.
        state.lanes = [
            SimpleNamespace(
                stream=cuda.stream(),
                c=scratch((B, H)),
                h_gates=scratch(state.h_gates.shape),  # (B, 4H), or in split-K parts (step 06)
                x_seq=scratch((T, B, 4 * H)),
                h_zero=h_zero,
                chunk_done=[ordering_event() for _ in state.chunks],
            )
            for _ in range(cfg.layers)
        ]
        # Every layer below the top one keeps its whole output: the one above reads it later.
        state.hidden_seq = [scratch((T, B, H)) for _ in range(cfg.layers - 1)]
        return state

    def run(self, state, x, out):
        inputs = [x] + state.hidden_seq
        outputs = state.hidden_seq + [out]
        # Runs queued back to back share these buffers: no lane starts before every lane of the
        # previous run is done. (Waiting on an event never recorded, the first time, is a no-op.)
        for lane in state.lanes:
            for other in state.lanes:
                other.chunk_done[-1].wait(lane.stream)
        for lane in state.lanes:
            pw.fill(lane.c, 0.0, stream=lane.stream)
        layers, chunks = len(state.layers), len(state.chunks)
        for diagonal in range(layers + chunks - 1):
            for layer in range(max(0, diagonal - chunks + 1), min(layers, diagonal + 1)):
                self.run_chunk(state, layer, diagonal - layer, inputs[layer], outputs[layer])

    def run_chunk(self, state, layer, k, xs, hs):
        """Layer ``layer``, steps of chunk ``k``, on the layer's own stream."""
        lane, weights = state.lanes[layer], state.layers[layer]
        t0, t1 = state.chunks[k]
        if layer > 0:
            state.lanes[layer - 1].chunk_done[k].wait(lane.stream)  # its input is written
            self.input_gemm(weights, rows(xs[t0:t1]), rows(lane.x_seq[t0:t1]), lane.stream)
        elif k == 0:
            self.input_gemm(weights, rows(xs), rows(lane.x_seq), lane.stream)  # all of layer 0's
        h_prev = lane.h_zero if t0 == 0 else hs[t0 - 1]
        for t in range(t0, t1):
            self.recurrent_gemm(lane, weights, h_prev)
            self.cell_update(lane, weights, lane.x_seq[t], lane.h_gates, hs[t])
            h_prev = hs[t]
        lane.chunk_done[k].record(lane.stream)


STEP = Wavefront()
