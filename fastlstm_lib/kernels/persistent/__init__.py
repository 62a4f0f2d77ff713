"""The persistent LSTM layer (notebook 09): one launch runs every time step of a layer.

Its versions are its files (``VERSIONS``; ``python -m fastlstm_lib.kernels persistent`` checks
and, on a GPU, times them): ``v1_layer`` (U in shared memory for the whole sequence, one grid
barrier a step), ``v2_registers`` (U in registers, h staged 128 bits at a time, 32-bit indices),
``v3_light_barrier`` (version 2 with a release/acquire grid barrier, ``barrier``, its cooperative
launch checked, a counter per launch and the 32-bit range checked).
What they share: ``layout`` (where a block keeps things in shared memory), ``grid`` (how a layer
is cut into a cooperative grid for a chip), ``registers`` (versions 2 and 3: the plan and the
kernel's body with U in registers), ``cooperative`` (the dynamic shared buffer, the
cooperative compile) and ``case`` (the runner's case: one layer's sequence against float64).
"""

from __future__ import annotations

from ..family import specs, versions
from .grid import TARGET_THREADS, PersistentLimitError, Plan, require_grid_barrier  # noqa: F401
from .layout import MAX_REGISTERS, MAX_ROWS  # noqa: F401
from .v1_layer import persistent_layer_kernel, persistent_limits, plan  # noqa: F401

#: The family's version modules, in order.
VERSIONS = versions(__name__)
SPECS = specs(VERSIONS)
