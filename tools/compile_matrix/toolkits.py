"""The CUDA compilers of the compile matrix (``compile_matrix``): where pip put them, their versions,
and ``ptxas -v``'s resource report.

Two toolkits come from pip as test dependencies (Linux only, no GPU or driver needed):
CUDA 13.0 (NVVM, libdevice and ptxas; nvdisasm 13.2) for sm_75 and newer, and CUDA 12.9's NVVM,
libdevice and ptxas for sm_52 (CUDA 13 dropped Maxwell). ``ARCHS`` says which builds what.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

#: The architectures of the matrix: compute capability -> toolkit ("12" or "13").
ARCHS = {(5, 2): "12", (7, 5): "13", (8, 0): "13", (8, 9): "13", (9, 0): "13"}

#: For each toolkit: tool -> (pip distribution, path inside site-packages).
_FILES = {
    "12": {
        "nvvm": ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"),
        "libdevice": ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"),
        "ptxas": ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/bin/ptxas"),
    },
    "13": {
        "nvvm": ("nvidia-nvvm", "nvidia/cu13/lib/libnvvm.so.4"),
        "libdevice": ("nvidia-nvvm", "nvidia/cu13/nvvm/libdevice/libdevice.10.bc"),
        "ptxas": ("nvidia-cuda-nvcc", "nvidia/cu13/bin/ptxas"),
        "nvdisasm": ("nvidia-cuda-nvdisasm", "nvidia/cu13/bin/nvdisasm"),
    },
}
_NUMBA_DISTRIBUTIONS = ("numba", "numba-cuda")


class ToolkitMissingError(RuntimeError):
    """A compiler of the matrix is not installed; the message says which and how to get it."""


def arch_name(cc: tuple[int, int]) -> str:
    """``sm_90`` for (9, 0)."""
    if not (isinstance(cc, tuple) and len(cc) == 2 and all(isinstance(part, int) for part in cc)):
        raise TypeError(f"cc must be a (major, minor) tuple of ints, got {cc!r}")
    return f"sm_{cc[0]}{cc[1]}"


def toolkit_of(cc: tuple[int, int]) -> str:
    """The toolkit ("12" or "13") that builds compute capability ``cc``."""
    if cc not in ARCHS:
        raise ValueError(f"cc must be one of {sorted(ARCHS)}, got {cc!r}")
    return ARCHS[cc]


def tool(toolkit: str, name: str) -> Path:
    """The path of one file of a toolkit (``tool("13", "ptxas")``); raises ToolkitMissingError."""
    if toolkit not in _FILES or name not in _FILES[toolkit]:
        raise ValueError(f"toolkit/name must be one of {[(t, n) for t in _FILES for n in _FILES[t]]}, "
                         f"got {(toolkit, name)!r}")
    if not sys.platform.startswith("linux"):
        raise ToolkitMissingError("the CUDA compilers of the compile matrix come as Linux wheels only")
    distribution, relative = _FILES[toolkit][name]
    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.exists():
        raise ToolkitMissingError(f"{relative} not found: `pip install -e \".[test]\"` installs {distribution}")
    return path


def versions() -> dict[str, str]:
    """pip distribution -> version, for every distribution the matrix's output depends on."""
    names = sorted({dist for files in _FILES.values() for dist, _ in files.values()} | set(_NUMBA_DISTRIBUTIONS))
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


def version_line() -> str:
    """The compilers in one line, for the table's header."""
    v = versions()
    return (f"CUDA 13 (NVVM {v['nvidia-nvvm']}, ptxas {v['nvidia-cuda-nvcc']}, nvdisasm {v['nvidia-cuda-nvdisasm']}) "
            f"for sm_75+; CUDA 12 (NVVM and ptxas {v['nvidia-cuda-nvcc-cu12']}) for sm_52; "
            f"numba {v['numba']}, numba-cuda {v['numba-cuda']}")


def assemble(ptx: Path, cc: tuple[int, int], cubin: Path, *, relocatable: bool,
             max_registers: int | None) -> str:
    """Run ptxas -v on ``ptx`` as the driver's JIT would (-O3, ``--maxrregcount`` when the kernel
    has a cap; ``-c`` when it calls into the device runtime); returns ptxas's report."""
    if max_registers is not None and (not isinstance(max_registers, int) or max_registers <= 0):
        raise ValueError(f"max_registers must be a positive int or None, got {max_registers!r}")
    command = [str(tool(toolkit_of(cc), "ptxas")), f"-arch={arch_name(cc)}", "-v", str(ptx), "-o", str(cubin)]
    if relocatable:
        command.insert(1, "-c")
    if max_registers:
        command += ["--maxrregcount", str(max_registers)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "LC_ALL": "C"})
    if done.returncode != 0:
        raise RuntimeError(f"ptxas failed on {ptx.name} for {arch_name(cc)}:\n{done.stderr[-3000:]}")
    return done.stderr + done.stdout


def resources(report: str, entry: str) -> dict[str, int]:
    """registers, spill stores/loads, stack frame and static shared memory (bytes) of the kernel
    ``entry`` in ptxas's -v ``report``."""
    start = report.find(f"Compiling entry function '{entry}'")
    if start < 0:
        raise ValueError(f"entry {entry!r} is not in ptxas's report")
    block = report[start:]
    block = block[: block.find("Compile time") if "Compile time" in block else len(block)]

    def number(pattern: str) -> int:
        found = re.search(pattern, block)
        return int(found.group(1)) if found else 0

    return {
        "registers": number(r"Used (\d+) registers"),
        "spill_stores": number(r"(\d+) bytes spill stores"),
        "spill_loads": number(r"(\d+) bytes spill loads"),
        "stack_frame": number(r"(\d+) bytes stack frame"),
        "static_shared": number(r"(\d+) bytes smem"),
    }
