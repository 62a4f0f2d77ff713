"""What a kernel's machine code (SASS) does in its main loop: the compile matrix's loop mix.

The cubin is disassembled by CUDA 13's nvdisasm into (address, opcode, branch target) triples:
sm_75 and newer only, since no disassembler on PyPI reads sm_52 any more (nvdisasm 13 dropped
it, CUDA 12's is no wheel), so sm_52's SASS columns stay empty. A loop is a backward branch: the
instructions from its target to the branch. The *main loop* is, of the innermost loops that do
FFMAs (no loop inside them does), the one with the most: the k loop of a GEMM, the dot-product
loop of the persistent kernel, or its time loop where the compiler unrolled the dot product
whole. The counts are of the loop's code as it stands (an inner loop's body counts once). A
kernel without a backward branch (the element-wise ones) has no loop: its loop columns are 0.

The *slab* of a blocked GEMM is one trip of the loop over K that holds the block barriers: the
main loop itself where the compiler unrolled the k loop, or the loop around it. Its counts
expand the loops inside it by their trip counts, which the compile job knows from the blocking
(``slab_mix``): the k loop bk x tm x tn / (its FFMAs) times, the cooperative loads of A and of B
ceil(bm x bk / threads) and ceil(bn x bk / threads) times. That is what one warp issues per
slab, and FFMA / instructions of it is what the timeline model's issue efficiency uses.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

from fastlstm_lib.course.sass import GLOBAL_LOADS, INTEGER, LOCAL, SHARED_LOADS, base  # the instruction classes, defined once

from .toolkits import tool, toolkit_of

LOOP_COLUMNS = ("loop_instructions", "loop_ffma", "loop_shared_loads", "loop_global_loads", "loop_local",
                "loop_integer", "loop_barriers")
SLAB_COLUMNS = ("slab_instructions", "slab_ffma")


class Instruction(NamedTuple):
    address: int
    opcode: str  # with its modifiers: "LDS.128", "FFMA"
    target: int | None  # a branch's destination address


_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
_LABEL = re.compile(r"^(\.L_x_\d+):")


def parse_nvdisasm(listing: str, entry: str) -> list[Instruction]:
    """The instructions of function ``entry`` in ``nvdisasm -c`` output, branch targets resolved."""
    if not isinstance(listing, str) or not isinstance(entry, str):
        raise TypeError("listing and entry must be str")
    lines, inside = [], False
    for line in listing.splitlines():
        words = line.split()
        if words and words[0] == ".section":
            inside = words[1].split(",")[0] == f".text.{entry}"
        elif inside:
            lines.append(line)
    if not lines:
        raise ValueError(f"function {entry!r} is not in the disassembly")
    labels, pending, raw = {}, [], []
    for line in lines:
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        found = _LINE.match(line)
        if found:
            address = int(found.group(1), 16)
            labels.update({name: address for name in pending})
            pending = []
            target = _TARGET.search(found.group(3))
            raw.append((address, found.group(2), target.group(1) if target else None))
    labels.update({name: raw[-1][0] + 16 for name in pending} if raw else {})
    return [Instruction(address, opcode, labels.get(target) if target else None) for address, opcode, target in raw]


def disassembly(cubin: Path, cc: tuple[int, int]) -> str | None:
    """``nvdisasm -c``'s listing of ``cubin``, built for ``cc``; None for sm_52, which no
    disassembler on PyPI reads (nvdisasm 13 dropped it, CUDA 12's is not a wheel)."""
    if toolkit_of(cc) == "12":
        return None
    done = subprocess.run([str(tool("13", "nvdisasm")), "-c", str(cubin)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm failed on {cubin.name}: {done.stderr[-2000:]}")
    return done.stdout


def disassemble(cubin: Path, cc: tuple[int, int], entry: str) -> list[Instruction] | None:
    """The instructions of kernel ``entry`` in ``cubin``, built for ``cc``; None for sm_52."""
    listing = disassembly(cubin, cc)
    return None if listing is None else parse_nvdisasm(listing, entry)


def main_loop_text(listing: str, entry: str) -> str:
    """The main loop of ``entry`` as nvdisasm wrote it, one instruction a line ("/*0a70*/ FFMA R8,
    R26, R20, R8 ;"), NOPs left out: what notebook 12 shows. Empty without a loop."""
    code = parse_nvdisasm(listing, entry)
    span = _main_loop(_spans(code))
    if span is None:
        return ""
    lines, inside = [], False
    for line in listing.splitlines():
        words = line.split()
        if words and words[0] == ".section":
            inside = words[1].split(",")[0] == f".text.{entry}"
            continue
        found = _LINE.match(line) if inside else None
        if found and span[0] <= int(found.group(1), 16) <= span[1] and base(found.group(2)) != "NOP":
            lines.append(" ".join(line.split(";", 1)[0].split()) + " ;")
    return "\n".join(lines) + "\n"


def loops(code: list[Instruction]) -> list[tuple[int, int]]:
    """(first, last) address of every loop: a branch back to an earlier instruction."""
    return sorted({(i.target, i.address) for i in code
                   if base(i.opcode) in ("BRA", "JMP") and i.target is not None and i.target < i.address})


def mix(code: list[Instruction]) -> dict[str, int]:
    """Counts by kind of the instructions in ``code`` (NOPs left out)."""
    names = [base(i.opcode) for i in code if base(i.opcode) != "NOP"]
    return {
        "loop_instructions": len(names),
        "loop_ffma": sum(n in ("FFMA", "FFMA32I") for n in names),
        "loop_shared_loads": sum(n in SHARED_LOADS for n in names),
        "loop_global_loads": sum(n in GLOBAL_LOADS for n in names),
        "loop_local": sum(n in LOCAL for n in names),
        "loop_integer": sum(n in INTEGER for n in names),
        "loop_barriers": sum(n == "BAR" for n in names),
    }


def _inside(inner, outer) -> bool:
    return inner != outer and outer[0] <= inner[0] and inner[1] <= outer[1]


def _spans(code: list[Instruction]) -> dict:
    """{(first, last): mix} of every loop of ``code``."""
    return {span: mix([i for i in code if span[0] <= i.address <= span[1]]) for span in loops(code)}


def _main_loop(spans: dict):
    """The main loop's span (see the module docstring), or None without a loop."""
    # The innermost loops that do FFMAs (none inside them does); without FFMAs, the innermost loops.
    with_ffma = {span for span, counts in spans.items() if counts["loop_ffma"]}
    pool = with_ffma or set(spans)
    candidates = [span for span in pool if not any(_inside(other, span) for other in pool)]
    return max(candidates, key=lambda span: (spans[span]["loop_ffma"], spans[span]["loop_instructions"], span),
               default=None)


def main_loop_mix(code: list[Instruction] | None) -> dict[str, int | str]:
    """The kernel's instruction count and its main loop's mix (zeros without a loop, empty
    strings without a disassembly)."""
    if code is None:
        return {column: "" for column in ("instructions",) + LOOP_COLUMNS}
    spans = _spans(code)
    best = _main_loop(spans)
    loop = spans[best] if best else {column: 0 for column in LOOP_COLUMNS}
    return {"instructions": sum(base(i.opcode) != "NOP" for i in code), **loop}


#: Where a run of loads stops without reaching shared memory: a change of control (a jump, or an
#: instruction a jump lands on). A block barrier does not stop it (loads stay in flight across
#: one: only an instruction that reads their registers waits), nor does the convergence
#: bookkeeping (BSSY, BSYNC, WARPSYNC), which neither waits on memory nor jumps.
_JUMPS = frozenset({"BRA", "JMP", "BRX", "JMX", "CALL", "RET", "EXIT"})


def staged_loads(code: list[Instruction] | None) -> int | str:
    """How many global loads the kernel's copies to shared memory keep in flight at once: the
    longest run of global loads (LDG, LD) issued one after another in straight-line code and ended
    by a store to shared memory (STS), with no branch between. A loop that loads one
    element and stores it before loading the next has 1: each element waits out a whole memory
    round trip. 0 where no run reaches shared memory; empty without a disassembly."""
    if code is None:
        return ""
    landings = {i.target for i in code if i.target is not None and base(i.opcode) in _JUMPS}
    best = run = 0
    for instruction in code:
        name = base(instruction.opcode)
        if instruction.address in landings or name in _JUMPS:
            run = 0
        if name == "STS":
            best, run = max(best, run), 0
        elif name in GLOBAL_LOADS:
            run += 1
    return best


def slab_mix(code: list[Instruction] | None, trips: dict | None) -> dict[str, int | str]:
    """``slab_instructions`` and ``slab_ffma`` of a blocked GEMM (see the module docstring), given
    ``trips`` = {"k": k loop trips x its FFMAs, i.e. bk x tm x tn; "loads": (A's trips, B's)};
    empty strings without a disassembly or trip counts, or where no slab loop is found."""
    empty = {column: "" for column in SLAB_COLUMNS}
    if code is None or not trips:
        return empty
    counts = _spans(code)
    spans = list(counts)
    main = _main_loop(counts)
    if main is None or not counts[main]["loop_ffma"]:
        return empty
    holders = [span for span in spans if (span == main or _inside(main, span)) and counts[span]["loop_barriers"]]
    if not holders:
        return empty
    slab = min(holders, key=lambda span: span[1] - span[0])  # the innermost loop around the k loop with barriers
    children = [span for span in spans if _inside(span, slab) and not any(_inside(span, o) and _inside(o, slab) for o in spans)]
    instructions, ffma = counts[slab]["loop_instructions"], counts[slab]["loop_ffma"]
    loads = iter(trips["loads"])
    for child in sorted(children):
        if counts[child]["loop_ffma"]:
            repeat = trips["k"] / counts[child]["loop_ffma"]
        elif counts[child]["loop_global_loads"]:
            repeat = next(loads, 1)
        else:
            repeat = 1
        instructions += (repeat - 1) * counts[child]["loop_instructions"]  # counted once already
        ffma += (repeat - 1) * counts[child]["loop_ffma"]
    return {"slab_instructions": round(instructions), "slab_ffma": round(ffma)}
