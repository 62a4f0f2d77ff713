"""Step 03, combined GEMMs: the 4 gates' weights stacked, 2 GEMMs per layer-step instead of 8.

The baseline multiplied x_t by each gate's W_g (H x in) separately. Stacked, W (4H x in) is one
matrix, and x_t @ W^T computes all four gates' pre-activations in one GEMM: 4x the work per
launch, the same FLOPs in total. Small GEMMs can't fill a big GPU (a 64 x 512 output is a handful
of blocks); a 64 x 2048 one fills four times as many SMs, and launches 3 fewer kernels per operand.

What changes: ``gate_products`` only. The weights were already stored stacked (the baseline took
one gate's rows as a view), and the point-wise work is still the baseline's 17 kernels.
"""

from __future__ import annotations

from ..kernels.gemm import gemm
from .step02_baseline import Baseline


class CombinedGemms(Baseline):
    name = "combined_gemms"
    title = "4 gate matrices stacked: 1 input and 1 recurrent GEMM per layer-step"

    def gate_products(self, s, w, x_t, h_prev):
        self.input_gemm(w, x_t, s.x_gates, s.stream)
        self.recurrent_gemm(s, w, h_prev)

    def input_gemm(self, w, xs, x_gates, stream):
        """xs @ W^T for all 4 gates at once: (rows, in) -> (rows, 4H)."""
        gemm(xs, w.kernel, x_gates, transpose_b=w.transposed, stream=stream)

    def recurrent_gemm(self, s, w, h_prev):
        """h_prev @ U^T for all 4 gates at once: (B, H) -> s.h_gates (B, 4H)."""
        gemm(h_prev, w.recurrent, s.h_gates, transpose_b=w.transposed, stream=s.stream)


STEP = CombinedGemms()
