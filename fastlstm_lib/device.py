"""What we are running on, recorded with every measurement."""

from __future__ import annotations

import platform

import numpy as np
import numba
from numba import cuda

from . import _device


def _version(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def device_info() -> dict:
    """Device name, simulator or not, compute capability, SM count and software versions."""
    info = {
        "name": "Numba CUDA simulator (CPU)",
        "simulator": _device.SIMULATOR,
        "compute_capability": None,
        "multiprocessors": None,
        "cuda_driver": None,
        "numba": numba.__version__,
        "numba_cuda": _version("numba-cuda"),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host": platform.machine(),
    }
    if _device.SIMULATOR:
        return info
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
    return _device.SIMULATOR
