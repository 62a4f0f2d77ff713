"""What we are running on (recorded with every measurement), and installed package versions
(``numba_compat.package_version``)."""

from __future__ import annotations

import functools
import platform

import numpy as np
import numba
from numba import cuda

from . import numba_compat, simulator


def device_info() -> dict:
    """Device name, simulator or not, compute capability, SM count and software versions, and which
    Numba CUDA runs the kernels (``numba_cuda_in_use``: "numba-cuda 0.30.4", or "numba 0.68.1's
    built-in simulator" where numba-cuda is not installed, as on macOS)."""
    simulator.announce()
    info = {
        "name": "Numba CUDA simulator (CPU)",
        "simulator": simulator.SIMULATOR,
        "compute_capability": None,
        "multiprocessors": None,
        "cuda_driver": None,
        "numba": numba.__version__,
        "numba_cuda": numba_compat.NUMBA_CUDA_VERSION,
        "numba_cuda_in_use": numba_compat.describe(simulator.SIMULATOR),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host": platform.machine(),
    }
    if simulator.SIMULATOR:
        return info
    if simulator.FAKE_GPU:  # the fake-GPU test mode: say so wherever the device is shown
        info["fake_gpu"] = "test mode: kernels compiled and launches checked, nothing runs"
    device = cuda.get_current_device()
    name = device.name
    info["name"] = name.decode() if isinstance(name, bytes) else str(name)
    info["compute_capability"] = "{}.{}".format(*device.compute_capability)
    info["multiprocessors"] = int(device.MULTIPROCESSOR_COUNT)
    try:
        info["cuda_driver"] = "{}.{}".format(*cuda.cudadrv.driver.driver.get_version())
    except Exception:  # informational only; never fail a measurement over it
        pass
    return info


def is_simulator() -> bool:
    return simulator.SIMULATOR


@functools.lru_cache(maxsize=1)
def multiprocessors() -> int:
    """SMs of the current GPU (1 on the simulator, whose blocks run one at a time)."""
    return 1 if simulator.SIMULATOR else int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
