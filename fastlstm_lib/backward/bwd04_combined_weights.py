"""Backward step 4, combined weights: the weight gradients of all steps in one launch per matrix.

Only dh_rec = dz_t U^T feeds the recurrence: step t-1 waits for it. The other four products of
a step are sums over the steps (dW, dU, db) or go to the layer below (dx), and nothing in this
layer waits for them. So they leave the loop. Every step's dz is kept (``dz_seq``, (T, B, 4H)),
and after the layer's last step, one launch per product does what 4 x T small ones did:

    dW = X^T dZ           (in, T*B) x (T*B, 4H): X = all T steps' inputs, as rows
    dU = H_{0..T-2}^T dZ_{1..T-1}   (h_{-1} = 0: step 0 adds nothing)
    db = 1^T dZ           the sum of dZ's T*B rows: a column sum, kernels/reduce/
    dx = dZ W^T           all T steps at once, like the forward's combined inputs (notebook 07)

T*B rows make tall GEMMs (6400 at the article's size) that fill the GPU, where a step's B = 64
rows could not; and no accumulation across steps means no zeroing of dW, dU, db beforehand.

db changes kernel too. Steps 1-3 compute it as a GEMM with a row of ones, (1, B) x (B, 4H): an
M = 1 product, whose tiles of 32 or 64 rows hold one real row, every multiply-add of the others
spent on padding. Here it is ``column_sum``: each element of dZ loaded once and added once, in
blocks of 32 neighbouring columns, with the same number of blocks as the GEMM had.

What changes: ``zero_accumulators`` (only dh_rec and dc), ``step_products`` (only dh_rec) and
``layer_products`` (the four products), split in two for the next step: ``weight_products`` and
``input_products``.

State added: none (``dz_seq`` already kept every step's dz; ``ones`` is left for steps 1-3).
"""

from __future__ import annotations

from ..kernels import pointwise as pw
from ..kernels.gemm import gemm
from ..kernels.reduce import column_sum
from ..steps.resources import rows
from .bwd03_combined_gemms import BackwardCombinedGemms


class BackwardCombinedWeights(BackwardCombinedGemms):
    name = "bwd_combined_weights"
    title = "dW, dU, db and dx of all steps in one launch each, after the recurrence"

    def zero_accumulators(self, state, layer, stream):
        lane = state.lanes[layer]
        for array in (lane.dh_rec, lane.dc):
            pw.fill(array, 0.0, stream=stream)

    def step_products(self, state, layer, t, xs, hs, dx, stream):
        if t > 0:
            self.recurrent_product(state, layer, t, stream)

    def layer_products(self, state, layer, xs, hs, dx, stream):
        self.weight_products(state, layer, xs, hs, stream)
        self.input_products(state, layer, 0, xs.shape[0], dx, stream)

    def weight_products(self, state, layer, xs, hs, stream):
        """dW, dU and db of every step of the layer: two GEMMs and a column sum."""
        dz_seq, grads = state.lanes[layer].dz_seq, state.grads[layer]
        T = dz_seq.shape[0]
        gemm(rows(xs), rows(dz_seq), grads.kernel, transpose_a=True, stream=stream)
        if T > 1:
            gemm(rows(hs[:T - 1]), rows(dz_seq[1:]), grads.recurrent, transpose_a=True, stream=stream)
        else:
            pw.fill(grads.recurrent, 0.0, stream=stream)  # one step: h_{-1} = 0, no gradient
        column_sum(rows(dz_seq), grads.bias[0], stream=stream)  # db: (4H,) of the (1, 4H) buffer

    def input_products(self, state, layer, t0, t1, dx, stream):
        """dx for steps t0..t1-1 in one GEMM: dZ W^T."""
        dz_seq = state.lanes[layer].dz_seq
        gemm(rows(dz_seq[t0:t1]), state.layers[layer].kernel, rows(dx[t0:t1]), transpose_b=True, stream=stream)


STEP = BackwardCombinedWeights()
