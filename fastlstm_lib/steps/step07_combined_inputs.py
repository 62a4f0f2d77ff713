"""Step 07, combined inputs: one input GEMM covers many time steps.

A layer's inputs are all known before its recurrence starts: layer 0's are the data, and since
layers here run one after the other, layer l's are the finished outputs of layer l-1. Stacked,
(chunk*B x in) @ W computes the input products of ``chunk`` steps in ONE GEMM, ``chunk`` times
taller than a step's (up to T, the whole sequence): it fills more of the GPU, and launches
disappear. The recurrent GEMM can't do the same: step t needs h_{t-1}.

Option ``chunk``: steps per input GEMM. The default, ``ARTICLE_CHUNK`` = 2, is the article's own
setting (its program, LSTM.cu, sets ``RECUR_BATCH_SIZE`` to 2 with this optimization; REFERENCES.md,
A); other values are experiments, up to the whole sequence (one GEMM per layer). Chunk k+1's GEMM
on the side stream overlaps chunk k's recurrence; the wavefront (step 08) needs chunks for the
layers above the first.

What changes: ``setup`` (the option, one event per chunk) and ``run_layer``.

State added:
- ``chunks``: [(t0, t1), ...], the steps each input GEMM covers;
- ``chunk_inputs_done``: one event per chunk, its input products are ready.
"""

from __future__ import annotations

import numbers

from ..kernels import pointwise as pw
from .resources import ordering_event, rows
from .step06_pretransposed import Pretransposed


#: Steps per input GEMM by default: the article's program's ``RECUR_BATCH_SIZE`` with combined inputs on.
ARTICLE_CHUNK = 2


def chunk_bounds(seq_len: int, chunk: int) -> list[tuple[int, int]]:
    """[(t0, t1), ...] covering 0..seq_len in pieces of ``chunk`` steps (the last may be shorter)."""
    return [(t0, min(t0 + chunk, seq_len)) for t0 in range(0, seq_len, chunk)]


def checked_chunk(step, chunk, seq_len: int) -> int:
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"step {step.name!r}: chunk must be a positive int (steps per input GEMM), got {chunk!r}")
    return min(int(chunk), seq_len)


class CombinedInputs(Pretransposed):
    name = "combined_inputs"
    title = "input GEMM covers several time steps at once"

    def default_chunk(self, seq_len: int) -> int:
        return min(ARTICLE_CHUNK, seq_len)

    def setup(self, params, cfg, chunk=None, **options):
        state = super().setup(params, cfg, **options)
        chunk = self.default_chunk(cfg.seq_len) if chunk is None else chunk
        state.chunks = chunk_bounds(cfg.seq_len, checked_chunk(self, chunk, cfg.seq_len))
        state.chunk_inputs_done = [ordering_event() for _ in state.chunks]
        return state

    def run_layer(self, state, weights, xs, hs):
        state.layer_ready.record(state.stream)
        state.layer_ready.wait(state.side)
        # Every input GEMM of the layer is queued at once on the side stream...
        for (t0, t1), done in zip(state.chunks, state.chunk_inputs_done):
            self.input_gemm(weights, rows(xs[t0:t1]), rows(state.x_seq[t0:t1]), state.side)
            done.record(state.side)
        # ...while the main stream runs the recurrence, chunk by chunk as their inputs arrive.
        pw.fill(state.c, 0.0, stream=state.stream)
        h_prev = state.h_zero
        for (t0, t1), done in zip(state.chunks, state.chunk_inputs_done):
            done.wait(state.stream)
            for t in range(t0, t1):
                self.recurrent_gemm(state, weights, h_prev)
                self.cell_update(state, weights, state.x_seq[t], state.h_gates, hs[t])
                h_prev = hs[t]


STEP = CombinedInputs()
