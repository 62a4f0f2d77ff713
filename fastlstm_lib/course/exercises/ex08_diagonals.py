"""Exercise (notebook 08): the loop of ``Wavefront.run`` over the diagonals (layer + chunk = d),
judged with 2 layers and chunk=1 over 3 steps, and twice back to back."""

from __future__ import annotations

from ...config import LSTMConfig
from . import symptoms
from .base import Mistake
from .step_runs import StepExercise


def queued_layer_by_layer(evidence):
    """Right and ordered, but layer 1's first launch is queued after all of layer 0's."""
    run = evidence.first
    if run.error is not None or evidence.wrong() is not None or run.trace.findings:
        return None
    work = [(i, launch.stream) for i, launch in enumerate(run.trace.launches) if launch.kernel != "_fill"]
    last_below = max(i for i, stream in work if stream == "state.lanes[0].stream")
    first_above = min(i for i, stream in work if stream == "state.lanes[1].stream")
    if first_above > last_below:
        return (f"the output is right, but layer 1's first launch (number {first_above} of the run) is queued only "
                f"after all of layer 0's (the last is number {last_below})")
    return None


EXERCISE = StepExercise(
    name="diagonals", notebook="08", difficulty="medium",
    title=("the diagonal loop of run(self, state, x, out) in a subclass of Wavefront: self.run_chunk(state, "
           "layer, k, inputs[layer], outputs[layer]) for every (layer, chunk k), diagonal d = layer + k by "
           "diagonal"),
    hints=(
        ('Chunk k of layer l needs chunk k of layer l - 1 and chunk k - 1 of layer l. Which '
         '(layer, chunk) pairs can run at the same time?'),
        ('Pairs with the same layer + chunk (a diagonal) do not depend on each other. Walk the '
         'diagonals in order: which layers have a chunk on diagonal d, and which do not (near the '
         'corners)? run_chunk already waits for what it needs.'),
        ('for d in range(layers + chunks - 1): for layer in range(max(0, d - chunks + 1), '
         'min(layers - 1, d) + 1): self.run_chunk(state, layer, d - layer, inputs[layer], '
         'outputs[layer])'),
    ),
    step="wavefront", methods=("run",), cfg=LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2),
    options={"chunk": 1},  # 3 chunks, 4 diagonals: layer 1 starts while layer 0 still has a chunk to do
    catalog=(
        Mistake("chunk_out_of_range", "a diagonal asks for chunks that do not exist",
                "on diagonal d, layer l does chunk d - l, which exists only if 0 <= d - l < chunks: the layers of a "
                "diagonal run from max(0, d - chunks + 1) to min(layers - 1, d)",
                symptoms.raised("IndexError")),
        Mistake("top_layer_first", "a layer runs before the layer below has produced its input",
                "layer l's chunk k reads layer l-1's chunk k: queue (l-1, k) first. run_chunk waits for layer l-1's "
                "event, but a wait before the event is recorded waits for nothing",
                symptoms.read_before_write("state.hidden_seq")),
        Mistake("layer_by_layer", "the work is queued layer by layer, not diagonal by diagonal",
                "the events keep it right, but layer 1's first chunk is queued only after every launch of layer 0: "
                "on a GPU it cannot start earlier. Walk the diagonals so each layer starts as soon as its input is ready",
                queued_layer_by_layer),
        Mistake("previous_run_not_awaited", "a run does not wait for the previous run",
                "runs queued back to back share every lane's buffers: before starting, each lane waits for every "
                "lane's last chunk_done event of the previous run (the stub's first loop)",
                symptoms.race(stage="again"), stage="again"),
    ),
)
