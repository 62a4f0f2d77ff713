"""Exercise (notebook 03): ``gate_products`` with the four gates' weights stacked, 2 GEMMs, not 8;
the solution is the library's ``CombinedGemms``."""

from __future__ import annotations

from ...config import LSTMConfig
from .base import Mistake
from .step_runs import StepExercise
from . import symptoms


EXERCISE = StepExercise(
    name="gate_products", notebook="03", difficulty="easy",
    title=("gate_products(self, state, weights, x_t, h_prev) in a subclass of Baseline: x_t @ W into "
           "state.x_gates and h_prev @ U into state.h_gates, one GEMM each for all four gates"),
    hints=(
        ("The four gates' weights are stacked in one matrix: what does one GEMM with all of "
         'them compute, and where does its result go?'),
        ('Two GEMMs where there were eight: which stacked matrix multiplies x_t, which one h_prev, '
         'and which of the state buffers is B x 4H for each product? Then look at how the '
         'uploaded weights are stored (print their shapes): which of the GEMM\'s flags reads them '
         'that way?'),
        ('gemm(x_t, weights.kernel, state.x_gates, transpose_b=True, stream=state.stream); '
         'gemm(h_prev, weights.recurrent, state.h_gates, transpose_b=True, stream=state.stream)'),
    ),
    step="combined_gemms", methods=("gate_products", "input_gemm", "recurrent_gemm"),
    cfg=LSTMConfig(batch=3, seq_len=2, input_size=5, hidden=7, layers=1),
    catalog=(
        Mistake(
            "no_transpose", "the GEMM reads the stacked weights without transposing them",
            "W is stored transposed, W^T (4H x in), one row per gate unit: x_t @ W needs the "
            "GEMM to read it transposed, transpose_b=True (weights.transposed says so)",
            symptoms.raised("ValueError", "don't chain")),
        Mistake(
            "per_gate_gemms", "still one GEMM per gate",
            "the point of stacking: weights.kernel holds all four gates' rows, so one GEMM of x_t with all of it "
            "fills all 4H columns of state.x_gates at once (and the same for h_prev and U)",
            symptoms.more_launches()),
    ),
)
