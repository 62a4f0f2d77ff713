"""Step 03, combined GEMMs: the 4 gates' weights stacked, 2 GEMMs per layer-step instead of 8.

The baseline multiplied x_t by each gate's W_g (in x H) separately. Stacked, W (in x 4H) is one
matrix, and x_t @ W computes all four gates' pre-activations in one GEMM: 4x the work per
launch, the same FLOPs in total. Small GEMMs can't fill a big GPU (a 64 x 512 output is a handful
of blocks); a 64 x 2048 one has four times as many, and 3 fewer kernels are launched per operand.

What changes: ``gate_products`` only, now two named GEMMs that later steps move around. The
weights were already stored stacked (the baseline took one gate's rows as a view), and the
point-wise work is still the baseline's 17 kernels.

State added: none.
"""

from __future__ import annotations

from ..kernels.gemm import gemm
from .gemm_policy import policy_of
from .step02_baseline import Baseline


class CombinedGemms(Baseline):
    name = "combined_gemms"
    title = "4 gate matrices stacked: 1 input and 1 recurrent GEMM per layer-step"

    def gate_products(self, state, weights, x_t, h_prev):
        self.input_gemm(weights, x_t, state.x_gates, state.stream)
        self.recurrent_gemm(state, weights, h_prev)

    def input_gemm(self, weights, xs, x_gates, stream):
        """xs @ W for all 4 gates at once: (rows, in) -> (rows, 4H)."""
        policy = policy_of(weights)
        gemm(xs, weights.kernel, x_gates, transpose_b=weights.transposed, vector=policy.vector, tf32=policy.tf32,
             stream=stream)

    def recurrent_gemm(self, state, weights, h_prev):
        """h_prev @ U for all 4 gates at once: (B, H) -> state.h_gates (B, 4H)."""
        policy = policy_of(weights)
        gemm(h_prev, weights.recurrent, state.h_gates, transpose_b=weights.transposed, vector=policy.vector,
             tf32=policy.tf32, stream=state.stream)


STEP = CombinedGemms()
