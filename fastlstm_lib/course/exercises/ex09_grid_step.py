"""Exercise (notebook 09): the body of the persistent layer kernel's time loop, and its grid barrier;
the solution is ``kernels/persistent/v1_layer.py`` for the same grid. On the simulator the grid is one
block (its blocks run one after the other); on a GPU, three.
"""

from __future__ import annotations

import numpy as np

from ...kernels import persistent
from ...runtime.device import DEVICE
from . import locate, mutants, symptoms
from .base import Mistake
from .kernel_runs import KernelExercise, Probe

BATCH, HIDDEN, STEPS, INPUTS = 3, 13, 3, 5
#: The grid the checker launches: every unit in one block on the simulator, 3 blocks on a GPU
#: (the last one only partly used).
UNITS = HIDDEN if DEVICE.small else 5
#: h_{t-1} staged 4 units at a time (a shorter last chunk): then, in a single block, the threads that
#: stage an element are not the ones that wrote it, and a missing grid barrier shows.
PLAN = persistent.Plan(HIDDEN, BATCH, units=UNITS, blocks=-(-HIDDEN // UNITS), splits=1, k_chunk=4)
ODD = f"batch {BATCH}, hidden {HIDDEN}, {STEPS} steps, {PLAN.blocks} block(s) of {PLAN.threads} threads"
AXES = ("step", "batch row", "unit")


def layer_inputs() -> dict:
    rng = np.random.default_rng(9)
    scale = 0.5 / np.sqrt(INPUTS + HIDDEN)  # like init_params: the gates stay in their steep middle
    x = rng.standard_normal((BATCH, STEPS, INPUTS))
    kernel = rng.standard_normal((INPUTS, 4 * HIDDEN)) * scale
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))  # (T, B, 4H), without the bias
    return {"x_gates": x_gates.astype(np.float32),
            "recurrent": (rng.standard_normal((HIDDEN, 4 * HIDDEN)) * scale).astype(np.float32),
            "bias": (rng.standard_normal(4 * HIDDEN) * 0.1).astype(np.float32),
            "hs": np.full((STEPS, BATCH, HIDDEN), np.nan, dtype=np.float32)}


def layer_outputs(inputs: dict, variant: mutants.Variant) -> np.ndarray:
    """hs (T, B, H) of the layer with ``variant``'s mistake."""
    input_part = inputs["x_gates"].astype(np.float64).transpose(1, 0, 2)
    h = mutants.layer(input_part, inputs["recurrent"].astype(np.float64), inputs["bias"].astype(np.float64), variant)
    return h.transpose(1, 0, 2)


def nan_from_step(first: int):
    """The output is right before step ``first`` and NaN everywhere from it on."""

    def detect(evidence):
        result = evidence.probe(ODD)
        if result.error is not None or result.order_dependent():
            return None
        nan = np.isnan(result.outputs["hs"])
        if nan[first:].all() and not nan[:first].any():
            right = f"; {locate.spans(range(first), STEPS, 'step')} right" if first else ""
            return f"hs: NaN from step {first} on, in every batch row and unit{right}"
        return None

    return detect


def launch(kernel, arrays: dict) -> None:
    # The library's kernel keeps its shared memory in one dynamic buffer; a learner's static arrays
    # need none of it, and the extra request costs them nothing.
    kernel[PLAN.blocks, PLAN.threads, 0, PLAN.shared_bytes](arrays["x_gates"], arrays["recurrent"], arrays["bias"],
                                                            arrays["hs"])


EXERCISE = KernelExercise(
    name="grid_step", notebook="09", difficulty="hard",
    title=("the time loop's body in persistent_layer: the dot products with h_{t-1}, the gates, c and h_t of "
           "this thread's (batch row, unit), then the grid barrier"),
    hints=(
        ("Step t needs every block's h_{t-1}. What does a block do before it may read it, and "
         'what is different at t = 0?'),
        ("At t = 0 there is no previous h. Otherwise each gate's pre-activation is a dot product "
         "of the previous step's h, which every block wrote, with one of this unit's columns of U "
         'in shared memory, plus the input product and the bias. After the cell update, which '
         'threads must reach the grid barrier?'),
        ('if t > 0: z_g += hs[t - 1, b, k] * u_s[g*UNITS + jj, k] over k in range(HIDDEN), for '
         'g = 0..3; z_g += x_gates[t, b, g*HIDDEN + j] + bias[g*HIDDEN + j]; c = sigmoidf(z_f) '
         '* c + sigmoidf(z_i) * math.tanh(z_c); if j < HIDDEN: hs[t, b, j] = sigmoidf(z_o) * '
         'math.tanh(c); then grid.sync(), reached by every thread'),
    ),
    solution=lambda: persistent.persistent_layer_kernel(*PLAN.kernel_key), listing=persistent.persistent_layer_kernel,
    source=("fastlstm_lib/kernels/persistent/v1_layer.py, for this grid (splits = 1: one thread per pair;\n"
            "# it also stages h_{t-1} in shared memory, 4 units at a time, which the exercise does not ask for)"),
    launch=launch, expected=lambda inputs: {"hs": layer_outputs(inputs, mutants.Variant())},
    outputs={"hs": AXES}, probes=(Probe(ODD, layer_inputs),),
    catalog=(
        Mistake("missing_grid_barrier", "no barrier between one step and the next",
                "grid.sync() at the end of every step (reached by every thread, even those with j >= HIDDEN): step "
                "t+1 reads all of h_t, written by every thread of every block",
                symptoms.order_dependent(ODD)),
        Mistake("no_first_step_case", "step 0 reads an h_{-1} that does not exist",
                "at t = 0 there is no recurrent term (h_{-1} = 0): skip the dot products; hs[t - 1] is hs[-1] there, "
                "the last step's slot, still NaN",
                nan_from_step(0)),
        Mistake("reads_current_step", "the recurrent term reads h_t instead of h_{t-1}",
                "step t reads hs[t - 1], the previous step's output; hs[t] is what this step writes",
                nan_from_step(1)),
        Mistake("c_reset_each_step", "c is reset at every step",
                "c lives across the whole sequence: set it to 0 once, before the time loop, and update it in place",
                symptoms.cell_variant(ODD, "c_not_carried", layer_outputs)),
        Mistake("gate_order", "the gates are taken in the wrong order",
                "gates i, f, c, o: column g*HIDDEN + j of x_gates, U and bias; c = f*c + i*tanh(z_c), h = o*tanh(c)",
                symptoms.cell_variant(ODD, "gate_order", layer_outputs)),
        Mistake("bias_twice", "the bias is added twice",
                "x_gates holds x_t @ W without the bias: add the bias once per gate",
                symptoms.cell_variant(ODD, "bias_twice", layer_outputs)),
    ),
)
