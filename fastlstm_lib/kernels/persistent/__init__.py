"""The persistent LSTM layer (notebook 09): one launch runs every time step of a layer.

Its versions are its files (``VERSIONS``; ``python -m fastlstm_lib.kernels persistent`` checks
and, on a GPU, times them): ``v1_layer`` (U in shared memory for the whole sequence, one grid
barrier a step), ``v2_registers`` (U in registers, h staged 128 bits at a time, 32-bit indices).
What they share: ``layout`` (where a block keeps things in shared memory), ``grid`` (how a layer
is cut into a cooperative grid for a chip), ``cooperative`` (the dynamic shared buffer, the
cooperative compile) and ``runner`` (the runner's case: one layer's sequence against float64).
"""

from __future__ import annotations

from ..family import specs, versions
from .grid import (GPU_TARGET_THREADS, MAX_SPLITS, MAX_THREADS, SIMULATOR_TARGET_THREADS, TARGET_THREADS,  # noqa: F401
                   PersistentLimitError, Plan, choose_rows, choose_splits, largest_k_chunk, require_grid_barrier)
from .layout import (MAX_REGISTERS, MAX_ROWS, STAGE_LOADS, STATIC_SHARED_BYTES, VECTOR, SharedLayout,  # noqa: F401
                     check_layout, lds128_conflicts)
from . import v1_layer, v2_registers
from .v1_layer import (COMPILED_PLANS, SHAPES, launch_signature, persistent_layer_kernel,  # noqa: F401
                       persistent_limits, persistent_traffic, plan, prepared)
from .v2_registers import RegisterPlan  # noqa: F401

#: The family's version modules, in order.
VERSIONS = versions(__name__)
SPECS = specs(VERSIONS)


def launch(plan_, x_gates, recurrent, bias, hs, stream=0) -> None:
    """One launch of the version ``plan_`` was made for: version 2's ``RegisterPlan``
    (``v2_registers.plan``), else version 1's ``Plan`` (``plan``)."""
    version = v2_registers if isinstance(plan_, RegisterPlan) else v1_layer
    version.launch(plan_, x_gates, recurrent, bias, hs, stream=stream)
