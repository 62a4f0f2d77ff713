"""Exercise (notebook 05): the fused cell kernel ``lstm_cell(x_gates, h_gates, bias, c, h)``: bias,
activations, c and h in one launch; the solution is ``kernels/pointwise._lstm_cell``."""

from __future__ import annotations

import numpy as np

from ...kernels import pointwise
from ...kernels.geometry import POINTWISE_THREADS
from . import mutants, symptoms
from .base import Mistake
from .kernel_runs import KernelExercise, Probe, pointwise_launch

BATCH = 3
#: Hidden units: odd, and enough that BATCH x HIDDEN threads need a second, partly used block.
HIDDEN = POINTWISE_THREADS // BATCH + (3 if (POINTWISE_THREADS // BATCH) % 2 == 0 else 4)
ODD = f"batch {BATCH}, hidden {HIDDEN}: a block of {POINTWISE_THREADS} threads and part of a second"


def cell_inputs() -> dict:
    rng = np.random.default_rng(7)
    bias = rng.standard_normal(4 * HIDDEN).astype(np.float32)
    return {"x_gates": rng.standard_normal((BATCH, 4 * HIDDEN)).astype(np.float32),
            "h_gates": rng.standard_normal((BATCH, 4 * HIDDEN)).astype(np.float32),
            "bias": bias,
            "c": rng.standard_normal((BATCH, HIDDEN)).astype(np.float32),
            "h": np.full((BATCH, HIDDEN), np.nan, dtype=np.float32)}


def cell_outputs(inputs: dict, variant: mutants.Variant) -> np.ndarray:
    """c and h (flattened, stacked) of the cell with ``variant``'s mistake."""
    z = inputs["x_gates"].astype(np.float64) + variant.bias * inputs["bias"]
    if variant.recurrent:
        z = z + inputs["h_gates"]
    c, h = mutants.cell(z, inputs["c"].astype(np.float64), variant)
    return np.concatenate([c.ravel(), h.ravel()])


def _variant(name):
    return symptoms.cell_variant(ODD, name, cell_outputs)


def expected(inputs: dict) -> dict:
    both = cell_outputs(inputs, mutants.Variant())
    return {"c": both[:BATCH * HIDDEN].reshape(BATCH, HIDDEN), "h": both[BATCH * HIDDEN:].reshape(BATCH, HIDDEN)}


EXERCISE = KernelExercise(
    name="fused_cell", notebook="05", difficulty="medium",
    title=("the kernel lstm_cell(x_gates, h_gates, bias, c, h): one thread per (batch row, unit) does the "
           "bias, the four gates, c = f*c + i*g (in place) and h = o*tanh(c)"),
    hints=(
        ('One thread per (batch row, unit): which four columns of the gate matrices belong to '
         'one unit, and what does the thread keep and write?'),
        ('One thread per element of c: which columns of x_gates, h_gates and bias hold gate g of '
         "this thread's unit (the gates come in the order i, f, c, o)? Everything the 17 kernels "
         "did then happens in the thread's own variables, and c is updated in place."),
        ('i = cuda.grid(1); hidden = c.shape[1]; if i < c.size: r, j = i // hidden, i % hidden; '
         'z_g = x_gates[r, g*hidden + j] + h_gates[r, g*hidden + j] + bias[g*hidden + j] for g '
         '= 0..3; c[r, j] = sigmoidf(z_f) * c[r, j] + sigmoidf(z_i) * math.tanh(z_c); h[r, j] = '
         'sigmoidf(z_o) * math.tanh(c[r, j])  (sigmoidf: fastlstm_lib.kernels.pointwise)'),
    ),
    solution=lambda: pointwise._lstm_cell, source="fastlstm_lib/kernels/pointwise/v2_cell.py",
    launch=pointwise_launch("c", "x_gates", "h_gates", "bias", "c", "h"), expected=expected,
    outputs={"c": ("batch row", "unit"), "h": ("batch row", "unit")},
    probes=(Probe(ODD, cell_inputs),),
    catalog=(
        Mistake("unguarded_tail", "threads past the last (row, unit) are not guarded",
                "the last block has more threads than pairs left: `if i < c.size:` around the body",
                symptoms.past_edge(ODD, "c")),
        Mistake("same_elements_every_block", "every block computes the same (row, unit) pairs",
                "number the threads across the grid: cuda.grid(1), not cuda.threadIdx.x",
                symptoms.written_only(ODD, "h", symptoms.first(POINTWISE_THREADS))),
        Mistake("c_not_stored", "the new c is not written back",
                "c is updated in place: c[r, j] = c_new, so that the next step reads it",
                symptoms.equals(ODD, "c", lambda inputs: inputs["c"], "its old values")),
        Mistake("gate_order", "the gates are taken in the wrong order",
                "Keras' order, and the library's: columns [0, H) are i, [H, 2H) f, [2H, 3H) c (the candidate), "
                "[3H, 4H) o; c = f*c + i*g, h = o*tanh(c)",
                _variant("gate_order")),
        Mistake("bias_missing", "the bias is not added", "z = x_gates + h_gates + bias, for each of the four gates",
                _variant("bias_missing")),
        Mistake("bias_twice", "the bias is added twice",
                "the bias goes in once; if your GEMM results already include it (they don't here), don't add it again",
                _variant("bias_twice")),
        Mistake("recurrent_product_ignored", "h_gates (the recurrent product) is not added",
                "z = x_gates + h_gates + bias: the recurrent GEMM's result is what carries h from step to step",
                _variant("recurrent_missing")),
        Mistake("forget_gate_ignored", "c_{t-1} is not carried (c = i*g)",
                "c_new = f * c_old + i * g: the forget gate decides how much of the old c stays",
                _variant("c_not_carried")),
        Mistake("candidate_sigmoid", "the candidate gate goes through a sigmoid",
                "i, f and o are sigmoids; the candidate g (the c block) is a tanh",
                _variant("candidate_sigmoid")),
        Mistake("h_without_tanh", "h = o * c, without the tanh", "h = o * tanh(c_new)",
                _variant("h_without_tanh")),
        Mistake("h_from_old_c", "h is computed from the old c",
                "compute c_new first, then h = o * tanh(c_new) (reading c[r, j] before the store gives the old c)",
                _variant("h_from_old_c")),
    ),
)
