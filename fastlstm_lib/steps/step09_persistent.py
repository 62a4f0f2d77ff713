"""Step 09, beyond cuDNN 5: a persistent kernel that keeps the recurrent weights on chip.

After the whole ladder, every layer-step still (1) launches two kernels from the host and (2)
reads all of U (H x 4H floats, 4 MiB at hidden 512) from memory for a GEMM that is only batch
rows tall. At batch 4 that is ~1 FLOP per byte: the step is bound by memory and launches, not by
arithmetic. Persistent RNNs (Diamos et al., 2016; cuDNN's PERSIST algorithms later) turn this
around: ONE launch per layer runs every step, each block holds its slice of U in shared memory
for the whole sequence, and a grid-wide barrier separates the steps.

Per layer: one GEMM for every step's input product (step 07), then one cooperative launch of
``kernels/persistent/``. It builds on combined_inputs, with layers one after the other (each
layer's persistent grid already occupies the whole GPU).

What changes: ``setup`` (plan the grid, or say plainly why the layer does not fit) and
``run_layer`` (2 launches per layer instead of 2 per layer-step). Under the "fast" policy
(``gemm_policy.py``) the kernel is version 2, U in registers, where its plan fits the GPU; under
"tf32" too, with the input GEMM on tensor cores where version 9 fits (the recurrence stays FP32).

Option ``chip``: plan the grid for a GPU named in data/gpus.csv ("H100") instead of this device.

State added: ``plan``, the persistent grid (blocks, threads, units per block, shared memory).
"""

from __future__ import annotations

from ..kernels import persistent
from .gemm_policy import offered_policy
from .resources import rows
from .step07_combined_inputs import CombinedInputs


def grid_plan(cfg, chip, registers: bool):
    """Version 2's plan (U in registers) where ``registers`` and it fits, else version 1's."""
    if registers:
        try:
            return persistent.v2_registers.plan(cfg.hidden, cfg.batch, chip=chip)
        except persistent.PersistentLimitError:
            pass  # U does not fit the register file: version 1 keeps it in shared memory
    return persistent.plan(cfg.hidden, cfg.batch, chip=chip)


class Persistent(CombinedInputs):
    name = "persistent"
    title = "one cooperative launch per layer, weights kept in shared memory"
    #: The recurrence runs inside the persistent kernel: no recurrent GEMM to split (step 06).
    split_recurrent = False

    def setup(self, params, cfg, chip=None, **options):
        # Fails here, before anything is launched, if the chip can't hold the layer. ``chip``: plan
        # for a GPU named in data/gpus.csv instead of this device; what fl.profile's dry run needs
        # on the simulator, which plans a single block (a real simulated run of a multi-block plan
        # gives wrong results there: its blocks run one after another).
        grid = grid_plan(cfg, chip, registers=offered_policy(options.get("gemms")).registers)
        state = super().setup(params, cfg, **options)
        state.plan = grid
        return state

    def run_layer(self, state, weights, xs, hs):
        self.input_gemm(weights, rows(xs), rows(state.x_seq), state.stream)  # every step at once
        state.plan.launch(state.x_seq, weights.recurrent, weights.bias, hs, stream=state.stream)


STEP = Persistent()
