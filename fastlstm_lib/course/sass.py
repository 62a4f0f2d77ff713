"""What the compile matrix (``tools/compile_matrix/``) found, read back on any machine: the kernels'
registers and loop mix (``read_table``) and the GEMMs' SASS main loops by purpose (notebook 12).
"""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
#: The compile matrix's table: one row per (kernel, architecture), a ``#`` header saying what each column holds.
TABLE = DATA / "kernel_resources.csv"
LISTINGS = DATA / "kernel_sass"
#: The main loops kept as SASS text, for notebook 12: the checked GEMM (2), its exact-tile twin (3),
#: the 128 x 128 patch of 3 and its vector-load version (5), on a T4's and an H100's architecture.
LISTED = {(kernel, arch) for kernel in ("blocked_gemm", "exact_gemm", "exact_gemm_wide", "vector_gemm_wide")
          for arch in ("sm_75", "sm_90")}

#: Integer and address arithmetic (a leading U, Turing's uniform datapath, counts too).
INTEGER = frozenset({
    "IADD", "IADD3", "IADD32I", "IMAD", "IMAD32I", "IMADSP", "IMUL", "IMUL32I", "ISCADD", "ISCADD32I", "XMAD", "LEA",
    "SHF", "SHL", "SHR", "LOP", "LOP3", "LOP32I", "ISETP", "ISET", "ICMP", "IMNMX", "IABS", "BFE", "BFI", "PRMT",
    "SEL", "POPC", "FLO", "BREV", "SGXT", "IDP",
})
#: Loads: shared (LDS, Turing's LDSM), global (LDG, and LD: a generic address, global in our kernels).
SHARED_LOADS = frozenset({"LDS", "LDSM"})
GLOBAL_LOADS = frozenset({"LDG", "LD"})


def base(opcode: str) -> str:
    """The opcode without modifiers or the uniform-datapath U: "LDS.U.128" -> "LDS", "UIADD3" -> "IADD3"."""
    name = opcode.split(".", 1)[0]
    return name[1:] if name.startswith("U") and name[1:] in INTEGER else name


def read_table(path: Path = TABLE) -> list[dict]:
    """The committed table's rows (strings), without its header."""
    lines = [line for line in Path(path).read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


#: The purposes, in the order tables and charts show them.
PURPOSES = ("FFMA (the work)", "shared-memory loads", "global loads", "shared-memory stores",
            "index and address arithmetic", "compares and branches", "barriers", "other")
_COMPARES = frozenset({"ISETP", "ISET", "ICMP", "FSETP", "PLOP3", "SEL", "FSEL", "BRA", "JMP", "BSSY", "BSYNC", "EXIT"})
#: The opcodes of each purpose, tried in this order (compares before integer arithmetic: SEL is both).
_BY_PURPOSE = ((PURPOSES[0], {"FFMA", "FFMA32I"}), (PURPOSES[1], SHARED_LOADS), (PURPOSES[2], GLOBAL_LOADS),
               (PURPOSES[3], {"STS"}), (PURPOSES[5], _COMPARES), (PURPOSES[4], INTEGER), (PURPOSES[6], {"BAR"}))


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
    return next((found for found, names in _BY_PURPOSE if name in names), PURPOSES[7])


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
