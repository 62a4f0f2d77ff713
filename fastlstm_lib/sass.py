"""What each instruction of a GEMM's compiled main loop is for (notebook 12), read from the SASS
listings committed under ``data/kernel_sass/``.

The listings are written by the compile matrix (``python -m fastlstm_lib.compile_matrix``), which
compiles every kernel with numba-cuda's real path and pip's CUDA compilers and disassembles it
with nvdisasm: Linux only, no GPU. Reading them needs nothing but this module, on any machine.
Each line is one instruction as nvdisasm prints it: ``/*27c0*/ LDS R34, [R13+UR4] ;``.
"""

from __future__ import annotations

from pathlib import Path

from .compile_matrix_sass import GLOBAL_LOADS, INTEGER, SHARED_LOADS, base

LISTINGS = Path(__file__).resolve().parents[1] / "data" / "kernel_sass"

#: The purposes, in the order tables and charts show them.
PURPOSES = ("FFMA (the work)", "shared-memory loads", "global loads", "shared-memory stores",
            "index and address arithmetic", "compares and branches", "barriers", "other")
_COMPARES = frozenset({"ISETP", "ISET", "ICMP", "FSETP", "PLOP3", "SEL", "FSEL", "BRA", "JMP", "BSSY", "BSYNC", "EXIT"})


def purpose(instruction: str) -> str:
    """The purpose (one of ``PURPOSES``) of one listing line or opcode ("FFMA R8, R26, R20, R8")."""
    if not isinstance(instruction, str):
        raise TypeError(f"instruction must be a str, got {type(instruction).__name__}")
    words = instruction.split("*/", 1)[-1].split()
    if words and words[0].startswith("@"):  # a predicate guard: @P0 BRA ...
        words = words[1:]
    if not words:
        raise ValueError(f"instruction {instruction!r} has no opcode")
    name = base(words[0])
    if name in ("FFMA", "FFMA32I"):
        return PURPOSES[0]
    if name in SHARED_LOADS:
        return PURPOSES[1]
    if name in GLOBAL_LOADS:
        return PURPOSES[2]
    if name == "STS":
        return PURPOSES[3]
    if name in _COMPARES:
        return PURPOSES[5]
    if name in INTEGER:
        return PURPOSES[4]
    if name == "BAR":
        return PURPOSES[6]
    return PURPOSES[7]


def available() -> list[tuple[str, str]]:
    """(kernel, arch) of every committed listing."""
    return sorted(tuple(path.name.split(".")[:2]) for path in LISTINGS.glob("*.sass"))


def listing(kernel: str, arch: str) -> list[str]:
    """The main loop of ``kernel`` built for ``arch`` ("sm_75", "sm_90"), one instruction a line."""
    if not isinstance(kernel, str) or not isinstance(arch, str):
        raise TypeError(f"kernel and arch must be str, got {type(kernel).__name__} and {type(arch).__name__}")
    if (kernel, arch) not in available():
        raise ValueError(f"no SASS listing of kernel {kernel!r} on {arch!r}; data/kernel_sass/ has {available()}")
    text = (LISTINGS / f"{kernel}.{arch}.sass").read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def purposes(kernel: str, arch: str) -> dict[str, int]:
    """How many instructions of ``kernel``'s main loop on ``arch`` serve each purpose."""
    counts = dict.fromkeys(PURPOSES, 0)
    for line in listing(kernel, arch):
        counts[purpose(line)] += 1
    return counts
