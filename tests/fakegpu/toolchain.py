"""The CUDA compilers from pip that build for each GPU: CUDA 13 from sm_75, CUDA 12 below it.

CUDA 13 dropped compute capabilities below 7.5 (Maxwell, Pascal, Volta) from NVVM, NVRTC, ptxas
and nvJitLink, so an M40 (sm_52) is built with CUDA 12.9's (the ``nvidia-cuda-nvcc-cu12``,
``-nvrtc-cu12`` and ``nvidia-nvjitlink-cu12`` wheels). The wheels install under
``site-packages/nvidia``.
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
    """Make numba-cuda compile and link with the CUDA release that supports this GPU.

    cuda-pathfinder, which numba-cuda asks for libnvvm, NVRTC (its list of supported
    architectures) and nvJitLink, takes a library that is already loaded in the process:
    loading CUDA 12's first is enough for sm_52. (numba-cuda already takes libdevice from the
    CUDA 12 wheel when it is installed; NVVM 13 reads it too.)
    """
    import ctypes

    root = nvidia_root()
    libraries = [nvvm_library(compute_capability)]
    if uses_cuda12(compute_capability):
        libraries += [_existing(root / "cuda_nvrtc" / "lib" / "libnvrtc.so.12", "CUDA 12's NVRTC"),
                      _existing(root / "nvjitlink" / "lib" / "libnvJitLink.so.12", "CUDA 12's nvJitLink")]
    for library in libraries:
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
