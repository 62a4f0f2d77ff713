"""Step 07, combined inputs: one input GEMM covers many time steps.

A layer's inputs are all known before its recurrence starts: layer 0's are the data, and since
layers here run one after the other, layer l's are the finished outputs of layer l-1. Stacked,
(T*B x in) @ W^T computes every step's input product in ONE GEMM, 100x taller than a step's: it
fills the GPU, and T-1 launches disappear. The recurrent GEMM can't do the same: step t needs
h_{t-1}.

Option ``chunk``: steps per input GEMM (default: the whole sequence, one GEMM per layer). With
smaller chunks, chunk k+1's GEMM on the side stream overlaps chunk k's recurrence; the wavefront
(step 08) needs chunks for the layers above the first.

What changes: ``setup`` (the option, one event per chunk) and ``run_layer``.
"""

from __future__ import annotations

import numbers

from ..kernels import pointwise as pw
from ..kernels.launch import ordering_event
from .step06_pretransposed import Pretransposed


def rows(sequence):
    """A contiguous (steps, B, F) block of a sequence as the (steps*B, F) matrix a GEMM takes."""
    steps, batch, features = sequence.shape
    return sequence.reshape(steps * batch, features)


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
        return seq_len

    def setup(self, params, cfg, chunk=None, **options):
        state = super().setup(params, cfg, **options)
        chunk = self.default_chunk(cfg.seq_len) if chunk is None else chunk
        state.chunks = chunk_bounds(cfg.seq_len, checked_chunk(self, chunk, cfg.seq_len))
        state.chunk_inputs_done = [ordering_event() for _ in state.chunks]
        return state

    def run_layer(self, state, weights, xs, hs):
        s = state
        s.layer_ready.record(s.stream)
        s.layer_ready.wait(s.side)
        # Every input GEMM of the layer is queued at once on the side stream...
        for (t0, t1), done in zip(s.chunks, s.chunk_inputs_done):
            self.input_gemm(weights, rows(xs[t0:t1]), rows(s.x_seq[t0:t1]), s.side)
            done.record(s.side)
        # ...while the main stream runs the recurrence, chunk by chunk as their inputs arrive.
        pw.fill(s.c, 0.0, stream=s.stream)
        h_prev = s.h_zero
        for (t0, t1), done in zip(s.chunks, s.chunk_inputs_done):
            done.wait(s.stream)
            for t in range(t0, t1):
                self.recurrent_gemm(s, weights, h_prev)
                self.cell_update(s, weights, s.x_seq[t], s.h_gates, hs[t])
                h_prev = hs[t]


STEP = CombinedInputs()
