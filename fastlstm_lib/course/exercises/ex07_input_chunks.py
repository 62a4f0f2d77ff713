"""Exercise (notebook 07): ``run_layer`` with one input GEMM per chunk of steps on the side stream;
the solution is ``CombinedInputs.run_layer``, judged with chunk=2 over 3 steps."""

from __future__ import annotations

import numpy as np

from ...config import LSTMConfig
from ...steps.step07_combined_inputs import chunk_bounds
from . import locate, symptoms
from .base import Mistake
from .step_runs import StepExercise

#: 3 steps in chunks of 2: the last chunk is shorter than the others.
CFG, CHUNK = LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2), 2


def restarts_at_chunk(evidence):
    """Right up to the first step of a later chunk, wrong from there on: state reset per chunk."""
    run = evidence.first
    if run.error is not None or run.y is None:
        return None
    wrong_steps = np.flatnonzero(locate.wrong_mask(run.y, evidence.ref).any(axis=(0, 2)))
    first = int(wrong_steps[0]) if wrong_steps.size else None
    if first in [t0 for t0, _ in chunk_bounds(CFG.seq_len, CHUNK)[1:]]:
        return f"right up to step {first - 1}, wrong from step {first}, the first step of a chunk: {evidence.wrong()}"
    return None


EXERCISE = StepExercise(
    name="input_chunks", notebook="07", difficulty="medium",
    title=("run_layer(self, state, weights, xs, hs) in a subclass of CombinedInputs: one input GEMM per chunk "
           "of steps on state.side, each followed by its event, then the recurrence chunk by chunk"),
    hints=(
        ('Streams ran one input GEMM per step. What changes if one GEMM covers a whole chunk of '
         "steps, and what must each chunk's recurrence wait for?"),
        ('Which products can be computed before the recurrence starts, and in how few GEMMs? Each '
         "chunk's steps need its input product first: one event per chunk on the stream that "
         'computes it. rows() views a block of steps as one tall matrix. The layer starts as in '
         'Streams.'),
        ('for (t0, t1), done in zip(state.chunks, state.chunk_inputs_done): '
         'self.input_gemm(weights, rows(xs[t0:t1]), rows(state.x_seq[t0:t1]), state.side); '
         'done.record(state.side). Then for each chunk: done.wait(state.stream); for t in '
         'range(t0, t1): recurrent GEMM, cell update, h_prev = hs[t].'),
    ),
    step="combined_inputs", methods=("run_layer",), cfg=CFG, options={"chunk": CHUNK},
    catalog=(
        Mistake("per_step_input_gemms", "still one input GEMM per step",
                "the point of this step: all the steps of a chunk in ONE GEMM, rows(xs[t0:t1]) @ W into "
                "rows(state.x_seq[t0:t1]): (t1 - t0) * B rows at once",
                symptoms.more_launches()),
        Mistake("chunk_event_not_waited", "the recurrence does not wait for its chunk's input GEMM",
                "done.wait(state.stream) before the steps of each chunk: the GEMM runs on the side stream",
                symptoms.race(cause="missing_wait", buffer="state.x_seq")),
        Mistake("wait_before_record", "the main stream waits for a chunk's event before it is recorded",
                "a wait applies to the event's latest record *before* the wait: queue each chunk's GEMM and "
                "record its event first, then let the main stream wait for it",
                symptoms.race(cause="wait_before_record")),
        Mistake("state_reset_per_chunk", "the recurrence restarts at every chunk",
                "h_prev (and c) carry on from the last step of one chunk to the first of the next; set h_prev = "
                "state.h_zero and fill c once per layer, before the chunk loop",
                restarts_at_chunk),
        Mistake("h_from_current_step", "the recurrent GEMM reads h of the step being computed",
                "step t needs h_{t-1}: h_prev, which is hs[t - 1] after step t-1 (state.h_zero at t = 0); hs[t] is "
                "what step t writes",
                symptoms.read_before_write()),
    ),
)
