"""Exercise (notebook 04): ``run_layer`` with the input GEMM on a side stream, ordered by an event
per step; the solution is ``Streams.run_layer``. The trace judges the order, not only the numbers."""

from __future__ import annotations

from ...config import LSTMConfig
from .base import Mistake
from .step_runs import StepExercise
from . import symptoms


EXERCISE = StepExercise(
    name="side_stream", notebook="04", difficulty="medium",
    title=("run_layer(self, state, weights, xs, hs) in a subclass of Streams: each step's input GEMM on "
           "state.side into state.x_seq[t], an event that the main stream waits for before the cell update"),
    hints=(
        ("Which of a step's two GEMMs does not depend on the previous step? That one can go on "
         'the side stream; then what must the main stream wait for, and when?'),
        ('Which product of a step does not depend on the step before? Put it on the side stream, '
         'and let one event per step say when it is done: the main stream waits for that event '
         'before the work that reads its result. Before the first step, what must the side stream '
         'itself wait for, and what does c start at?'),
        ('state.layer_ready.record(state.stream); state.layer_ready.wait(state.side); '
         'pw.fill(state.c, 0.0, stream=state.stream); per t: self.input_gemm(weights, xs[t], '
         'state.x_seq[t], state.side); state.input_done[t].record(state.side); '
         'self.recurrent_gemm(state, weights, h_prev); state.input_done[t].wait(state.stream); '
         'self.cell_update(state, weights, state.x_seq[t], state.h_gates, hs[t]); h_prev = '
         'hs[t]'),
    ),
    step="streams", methods=("run_layer",), cfg=LSTMConfig(batch=3, seq_len=2, input_size=5, hidden=7, layers=2),
    catalog=(
        Mistake(
            "event_on_wrong_stream", "the event is recorded on the wrong stream",
            "an event marks the point reached by the stream it is recorded on: record input_done[t] on state.side, "
            "right after the input GEMM, so that waiting for it means waiting for that GEMM",
            symptoms.race(cause="event_on_wrong_stream")),
        Mistake(
            "missing_wait", "the main stream never waits for the input product",
            "state.input_done[t].wait(state.stream) before the cell update: recording an event orders nothing by "
            "itself",
            symptoms.race(cause="missing_wait", buffer="state.x_seq")),
        Mistake(
            "wait_on_wrong_stream", "the event is waited for on the wrong stream",
            "event.wait(stream) makes *stream* wait: the main stream (state.stream) needs the input product, so "
            "it is the one that waits",
            symptoms.race(cause="wait_on_wrong_stream")),
        Mistake(
            "layer_input_unordered", "the side stream reads the layer's input before the layer below wrote it",
            "for the layers above the first, xs is the output of the layer below, written on the main stream: "
            "record state.layer_ready on state.stream and wait for it on state.side before the first input GEMM",
            symptoms.race(buffer="state.hidden_seq")),
        Mistake(
            "slot_reused", "every step's input product goes to the same buffer",
            "the side stream runs ahead: step t+1's GEMM may overwrite the slot while step t's cell update still "
            "reads it. Give each step its own slot, state.x_seq[t]",
            symptoms.race(overwrite=True)),
    ),
)
