"""Backward step 3, combined GEMMs: the 4 gates' products as one GEMM each, 5 per layer-step.

Step t's dz holds the 4 gates side by side, (B, 4H), exactly like the forward's pre-activations,
and W and U hold them side by side too. So each product covers all 4 gates at once, the
backward twin of notebook 03:

    dh_rec = dz_t U^T   (B, 4H) x (4H, H): the sum over the gates is the GEMM's own sum over k
    dx_t   = dz_t W^T
    dW    += x_t^T dz_t      (transpose_a: x_t is stored (B, in), read as (in, B))
    dU    += h_{t-1}^T dz_t
    db    += 1^T dz_t

20 GEMMs per layer-step become 5, each 4x wider (or, for dh_rec and dx, 4x deeper).

What changes: ``step_products`` only.

State added: none.
"""

from __future__ import annotations

from ..kernels.gemm import gemm
from .bwd02_fused_pointwise import BackwardFusedPointwise


class BackwardCombinedGemms(BackwardFusedPointwise):
    name = "bwd_combined_gemms"
    title = "all 4 gates in each GEMM: 5 GEMMs per layer-step instead of 20"

    def step_products(self, state, layer, t, xs, hs, dx, stream):
        lane, weights, grads = state.lanes[layer], state.layers[layer], state.grads[layer]
        dz = lane.dz_seq[t]
        if t > 0:
            self.recurrent_product(state, layer, t, stream)
        gemm(dz, weights.kernel, dx[t], transpose_b=True, stream=stream)
        gemm(xs[t], dz, grads.kernel, accumulate=True, transpose_a=True, stream=stream)
        if t > 0:
            gemm(hs[t - 1], dz, grads.recurrent, accumulate=True, transpose_a=True, stream=stream)
        gemm(state.ones[:, :xs.shape[1]], dz, grads.bias, accumulate=True, stream=stream)

    def recurrent_product(self, state, layer, t, stream):
        """dh_rec = dz_t U^T: the gradient that reaches h_{t-1} through the recurrence."""
        lane = state.lanes[layer]
        gemm(lane.dz_seq[t], state.layers[layer].recurrent, lane.dh_rec, transpose_b=True, stream=stream)


STEP = BackwardCombinedGemms()
