"""Numba settings the course makes for itself: no low-occupancy warning at every small launch.

numba-cuda warns ``NumbaPerformanceWarning: Grid size N will likely result in GPU
under-utilization`` at every launch of fewer than 128 blocks. The course's grids are small on
purpose, the simulator never warns (stored outputs would differ between a GPU and a CPU), and
each warning costs host time in timed launches: it is turned off at ``import fastlstm_lib``,
unless ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` is set already.
"""

from __future__ import annotations

import os

from .numba_compat import cuda_config

VARIABLE = "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"


def quiet_low_occupancy_warnings() -> None:
    """Turn numba-cuda's low-occupancy warning off for this process (and its children), unless
    ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` is already set. Set in the environment too: Numba
    re-reads its configuration from the environment when a NUMBA_* variable changes (at the next
    compile), which would otherwise turn the warning back on."""
    if os.environ.get(VARIABLE, "").strip() == "":
        os.environ[VARIABLE] = "0"
    config = cuda_config()
    try:
        config.CUDA_LOW_OCCUPANCY_WARNINGS = int(os.environ[VARIABLE])
    except ValueError:  # not a number: Numba keeps its own reading of it
        pass
