"""Numba settings the course makes for itself: no low-occupancy warning at every small launch.

On a GPU, numba-cuda (0.30.4: ``_LaunchConfiguration.__init__`` in ``numba/cuda/dispatcher.py``,
which every ``kernel[grid, block]`` builds) warns ``NumbaPerformanceWarning: Grid size N will
likely result in GPU under-utilization due to low occupancy`` at every launch of fewer than 128
blocks, unless ``numba.cuda.core.config.CUDA_LOW_OCCUPANCY_WARNINGS`` (``numba.core.config`` for numba's
built-in ``numba.cuda``: ``numba_compat.cuda_config``; environment variable
``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS``) is 0. The course turns it off, once, at ``import
fastlstm_lib``:

- its grids are small on purpose: the odd test sizes, the recurrent GEMM at the article's size
  (32 blocks for a 64 x 2048 output), the persistent grid sized to what the SMs hold at once;
  and it shows occupancy itself where it matters (notebook 09, ``gpus.occupancy``);
- the simulator never warns, so stored notebook outputs would differ between a GPU and a CPU;
- each warned launch costs host time (building the message, the warnings machinery), in the
  launches the course times from the host.

Whoever sets ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` themselves keeps their choice.
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
