"""Backward step 5, the wavefront in reverse: layers' backward recurrences run concurrently.

Backward, layer l at step t needs the gradient of its output h_t, which is the dx of layer l+1
at step t, and its own dh_rec and dc from step t+1. So the top layer goes first, from the last
step back, and layer l can start chunk k (of steps, as in notebook 08) as soon as layer l+1 has
finished it and written that chunk's dx: the diagonals of the forward wavefront, walked from the
other corner. While the top layer works on chunk k-1, the one below works on chunk k.

Each layer runs on its own lane's stream (the forward's); per chunk: its dh_rec GEMMs and fused
cells, one step at a time, then (above layer 0) the chunk's dx in one GEMM, and an event that
the layer below waits for. After its last chunk a layer computes its weight gradients (step 4's
two GEMMs and column sum, over every step), while the layers below are still busy; layer 0 also
computes dx, in one GEMM.

What changes: ``setup`` (one event per chunk per lane, one when a lane is done) and
``run_backward`` (the diagonals), with ``backward_chunk``, one layer's share of a diagonal.

State added, per lane: ``back_chunk_done``, one event per chunk (its dx is written);
``back_done`` (the layer's backward is done).
"""

from __future__ import annotations

from ..steps.resources import ordering_event
from .bwd04_combined_weights import BackwardCombinedWeights


class BackwardWavefront(BackwardCombinedWeights):
    name = "bwd_wavefront"
    title = "layers' backward recurrences run concurrently, along diagonals in reverse"

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        for lane in state.lanes:
            lane.back_chunk_done = [ordering_event() for _ in state.chunks]
            lane.back_done = ordering_event()
        return state

    def run_backward(self, state, x, out):
        inputs = [x] + state.hidden_seq
        outputs = state.hidden_seq + [out]
        dh_outs = state.dh_seq + [state.dy]  # the gradient of each layer's output
        dxs = [state.dx] + state.dh_seq  # where each layer writes its dx
        layers, chunks = len(state.layers), len(state.chunks)
        for diagonal in range(layers + chunks - 1):
            for depth in range(max(0, diagonal - chunks + 1), min(layers, diagonal + 1)):  # depth 0: the top
                layer, k = layers - 1 - depth, chunks - 1 - (diagonal - depth)
                self.backward_chunk(state, layer, k, inputs[layer], outputs[layer], dh_outs[layer], dxs[layer])
        for lane in state.lanes:
            lane.back_done.wait(state.stream)  # run() records the end of the backward on state.stream

    def backward_chunk(self, state, layer, k, xs, hs, dh_out, dx):
        """Layer ``layer``, the steps of chunk ``k`` in reverse, on the layer's own stream."""
        lane = state.lanes[layer]
        t0, t1 = state.chunks[k]
        if k == len(state.chunks) - 1:
            self.zero_accumulators(state, layer, lane.stream)
        if layer < len(state.layers) - 1:
            state.lanes[layer + 1].back_chunk_done[k].wait(lane.stream)  # dh_out[t0:t1] is written
        for t in reversed(range(t0, t1)):
            self.cell_backward(state, lane, t, dh_out[t], lane.stream)
            if t > 0:
                self.recurrent_product(state, layer, t, lane.stream)
        if layer > 0:
            self.input_products(state, layer, t0, t1, dx, lane.stream)
            lane.back_chunk_done[k].record(lane.stream)
        if k == 0:
            self.weight_products(state, layer, xs, hs, lane.stream)
            if layer == 0:
                self.input_products(state, layer, 0, xs.shape[0], dx, lane.stream)
            lane.back_done.record(lane.stream)


STEP = BackwardWavefront()
