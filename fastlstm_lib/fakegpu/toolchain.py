"""The CUDA compilers from pip that build for each GPU: CUDA 13 from sm_75, CUDA 12 below it.

CUDA 13 dropped compute capabilities below 7.5 (Maxwell, Pascal, Volta) from NVVM, ptxas and
nvJitLink, so an M40 (sm_52) is built with CUDA 12.9's NVVM, libdevice and ptxas (the
``nvidia-cuda-nvcc-cu12`` wheel). The wheels install under ``site-packages/nvidia``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

#: The oldest compute capability CUDA 13's compilers accept.
CUDA13_MINIMUM = (7, 5)


class ToolchainMissing(RuntimeError):
    """A compiler the fake GPU needs is not installed (``pip install -e .[test]`` brings them, on Linux)."""


@functools.lru_cache(maxsize=1)
def nvidia_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        raise ToolchainMissing("no NVIDIA wheels installed: pip install -e '.[test]' (Linux) brings the CUDA compilers")
    return Path(list(spec.submodule_search_locations)[0])


def uses_cuda12(compute_capability: tuple[int, int]) -> bool:
    return tuple(compute_capability) < CUDA13_MINIMUM


def _existing(path: Path, what: str) -> str:
    if not path.exists():
        raise ToolchainMissing(f"{what} not found at {path}: pip install -e '.[test]' brings it (Linux)")
    return str(path)


def ptxas(compute_capability: tuple[int, int]) -> str:
    root = nvidia_root()
    if uses_cuda12(compute_capability):
        return _existing(root / "cuda_nvcc" / "bin" / "ptxas", "CUDA 12's ptxas")
    return _existing(root / "cu13" / "bin" / "ptxas", "CUDA 13's ptxas")


def nvvm_library(compute_capability: tuple[int, int]) -> str:
    root = nvidia_root()
    if uses_cuda12(compute_capability):
        return _existing(root / "cuda_nvcc" / "nvvm" / "lib64" / "libnvvm.so", "CUDA 12's libnvvm")
    return _existing(root / "cu13" / "lib" / "libnvvm.so.4", "CUDA 13's libnvvm")


def bin_dir(compute_capability: tuple[int, int]) -> str:
    return os.path.dirname(ptxas(compute_capability))


def select_compilers(compute_capability: tuple[int, int]) -> None:
    """Make numba-cuda compile with the CUDA release that supports this GPU.

    cuda-pathfinder, which numba-cuda asks for libnvvm and libdevice, takes a library that is
    already loaded in the process: loading the right libnvvm first is enough. CUDA 12 gets its
    libdevice through CUDA_HOME-style lookup, so its nvcc folder is named too.
    """
    import ctypes

    ctypes.CDLL(nvvm_library(compute_capability), mode=ctypes.RTLD_GLOBAL)
    if uses_cuda12(compute_capability):
        os.environ["CUDA_HOME"] = str(nvidia_root() / "cuda_nvcc")
