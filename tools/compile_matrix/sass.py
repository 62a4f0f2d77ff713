"""What a kernel's machine code (SASS) does in its main loop: the compile matrix's loop mix.

The cubin is disassembled by CUDA 13's nvdisasm into (address, opcode, branch target) triples:
sm_75 and newer only, since no disassembler on PyPI reads sm_52 any more (nvdisasm 13 dropped
it, CUDA 12's is no wheel), so sm_52's SASS columns stay empty. A loop is a backward branch: the
instructions from its target to the branch. The *main loop* is, of the innermost loops that do
FFMAs or tensor-core HMMAs (no loop inside them does), the one with the most: the k loop of a GEMM, the dot-product
loop of the persistent kernel, or its time loop where the compiler unrolled the dot product
whole. The counts are of the loop's code as it stands (an inner loop's body counts once). A
kernel without a backward branch (the element-wise ones) has no loop: its loop columns are 0.

The *slab* of a blocked GEMM is one trip of the loop over K that holds the block barriers: the
main loop itself where the compiler unrolled the k loop, or the loop around it. Its counts
expand the loops inside it by their trip counts, which the compile job knows from the blocking
(``slab_mix``): the k loop bk x tm x tn / (its FFMAs) times, the cooperative loads of A and of B
ceil(bm x bk / threads) and ceil(bn x bk / threads) times; a trip that holds several slabs (version
7's double buffer takes two) counts as its share of one. That is what one warp issues per slab,
and FFMA / instructions of it is what the timeline model's issue efficiency uses.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

from fastlstm_lib.course.sass import GLOBAL_LOADS, INTEGER, SHARED_LOADS, base  # the instruction classes, defined once

from .toolkits import tool, toolkit_of

#: Local memory (spills): loads and stores (only the compile matrix counts them).
LOCAL = frozenset({"LDL", "STL"})

LOOP_COLUMNS = ("loop_instructions", "loop_ffma", "loop_hmma", "loop_shared_loads", "loop_global_loads", "loop_local",
                "loop_integer", "loop_barriers")
SLAB_COLUMNS = ("slab_instructions", "slab_ffma", "slab_ffma_after_load")


class Instruction(NamedTuple):
    address: int
    opcode: str  # with its modifiers: "LDS.128", "FFMA"
    target: int | None  # a branch's destination address
    operands: str = ""  # as nvdisasm wrote them: "R24, desc[UR8][R86.64]"


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
            raw.append((address, found.group(2), target.group(1) if target else None, found.group(3).strip()))
    labels.update({name: raw[-1][0] + 16 for name in pending} if raw else {})
    return [Instruction(address, opcode, labels.get(target) if target else None, operands)
            for address, opcode, target, operands in raw]


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
        "loop_hmma": sum(n == "HMMA" for n in names),
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
    # The innermost loops that do FFMAs or HMMAs (none inside them does); without either, the innermost loops.
    with_ffma = {span for span, counts in spans.items() if counts["loop_ffma"] + counts["loop_hmma"]}
    pool = with_ffma or set(spans)
    candidates = [span for span in pool if not any(_inside(other, span) for other in pool)]
    return max(candidates, key=lambda span: (spans[span]["loop_ffma"] + spans[span]["loop_hmma"],
                                             spans[span]["loop_instructions"], span), default=None)


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
    by a store to shared memory (STS) of what a global load wrote, with no branch between (loads
    into registers that stay there, the persistent kernel's U, are no copy). A loop that loads one
    element and stores it before loading the next has 1: each element waits out a whole memory
    round trip. 0 where no run reaches shared memory; empty without a disassembly."""
    if code is None:
        return ""
    landings = {i.target for i in code if i.target is not None and base(i.opcode) in _JUMPS}
    best = run = 0
    loaded: set[int] = set()  # registers a global load wrote last
    for instruction in code:
        name = base(instruction.opcode)
        if instruction.address in landings or name in _JUMPS:
            run = 0
        data = _store_data(instruction) if name == "STS" else set()
        if data and data <= loaded:
            best, run = max(best, run), 0
        elif name in GLOBAL_LOADS:
            run += 1
        written = writes(instruction)
        loaded = (loaded | written) if name in GLOBAL_LOADS else (loaded - written)
    return best


def _store_data(instruction: Instruction) -> set[int]:
    """The registers whose values a store writes (not its address)."""
    operands = [part.strip() for part in instruction.operands.split(",")]
    return _registers(operands[-1], _width(instruction.opcode)) if len(operands) > 1 else set()


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
    slabs = max(1, round(ffma / trips["k"]))  # a trip of several slabs (version 7 takes two): one slab's share
    body = [i for i in code if slab[0] <= i.address <= slab[1]]
    weight = {id(i): trips["k"] / counts[child]["loop_ffma"] for child in children if counts[child]["loop_ffma"]
              for i in body if child[0] <= i.address <= child[1]}
    return {"slab_instructions": round(instructions / slabs), "slab_ffma": round(ffma / slabs),
            "slab_ffma_after_load": round(ffma_after_load(body, weight) / slabs)}


def ffma_after_load(body: list[Instruction], weight: dict | None = None) -> float:
    """Of the FFMAs in one trip of a loop, those issued after a global load and before the next
    block barrier, the loop taken as a cycle (its last stretch runs on into its first): the FFMAs
    that overlap the next slab's loads. A kernel that loads, stores to shared memory, waits at the
    barrier and only then computes has 0; one whose prefetch the compiler sank to the slab's end, few.
    ``weight``: how often an instruction runs per trip (one inside an inner k loop: its trips)."""
    weight = weight or {}
    names = [base(i.opcode) for i in body]
    if "BAR" in names:  # start at the first barrier: every stretch between two is then whole
        first = names.index("BAR")
        body, names = body[first:] + body[:first], names[first:] + names[:first]
    found, loaded = 0.0, False
    for instruction, name in zip(body, names):
        if name == "BAR":
            loaded = False
        elif name in GLOBAL_LOADS:
            loaded = True
        elif loaded and name in ("FFMA", "FFMA32I"):
            found += weight.get(id(instruction), 1)
    return found


# --------------------------------------------------------------------------------------------
# What the timeline model's latency hiding reads from the machine code (fastlstm_lib/course/timeline/blocks.py):
# how long the chains of dependent multiply-adds in one trip of its main loop are (``loop_ffma_chain``) and how many of its
# own instructions a thread issues between a global load and the first use of what it loaded
# (``load_use_distance``): the latency a warp hides by itself, before other warps must.

LATENCY_COLUMNS = ("loop_ffma_chain", "load_use_distance")
#: Opcodes whose first operand is not a register they write.
_NO_DESTINATION = frozenset({"STS", "STG", "ST", "STL", "RED", "BAR", "BRA", "JMP", "EXIT", "CALL", "RET", "MEMBAR",
                             "WARPSYNC", "BSSY", "BSYNC", "CCTL", "ERRBAR", "NOP", "YIELD", "DEPBAR"})
_STORES = frozenset({"STS", "STG", "ST", "STL", "RED"})
_REGISTER = re.compile(r"(?<![A-Za-z0-9_])R(\d+)((?:\.[A-Za-z0-9]+)*)")


def _width(opcode: str) -> int:
    """Registers one operand of ``opcode`` spans: 4 for a 128-bit access, 2 for a 64-bit one or a wide multiply."""
    parts = opcode.split(".")
    return 4 if "128" in parts else 2 if "64" in parts or "WIDE" in parts else 1


def _registers(text: str, width: int = 1) -> set[int]:
    """The general registers an operand text names; a register written R4.64 (an address) is a pair."""
    found = set()
    for match in _REGISTER.finditer(text):
        first = int(match.group(1))
        span = 2 if "64" in match.group(2).split(".") else width
        found.update(range(first, first + span))
    return found


def writes(instruction: Instruction) -> set[int]:
    """The registers ``instruction`` writes (its destination, widened for vector loads)."""
    name = base(instruction.opcode)
    first = instruction.operands.split(",", 1)[0].strip()
    if name in _NO_DESTINATION or not first.startswith("R"):
        return set()
    return _registers(first, _width(instruction.opcode))


def reads(instruction: Instruction) -> set[int]:
    """The registers ``instruction`` reads: every operand but its destination; a store's data widened."""
    name = base(instruction.opcode)
    operands = [part.strip() for part in instruction.operands.split(",")]
    if name in _STORES:
        return set().union(*(_registers(part, 1 if part.startswith("[") or "[" in part else _width(instruction.opcode))
                             for part in operands)) if operands else set()
    sources = operands[1:] if writes(instruction) else operands
    return set().union(*(_registers(part) for part in sources)) if sources else set()


def loop_ffma_chain(code: list[Instruction] | None) -> int | str:
    """The longest chain of dependent FFMAs in one trip of the main loop: each one waits for the
    result of the one before (a GEMM thread's accumulator, added to once per k), so one trip takes
    at least that many FFMA latencies unless other work fills them. Loop-FFMA / chain is how many
    independent chains (accumulators) a thread keeps. 0 without a loop or FFMA; empty without a
    disassembly."""
    if code is None:
        return ""
    span = _main_loop(_spans(code))
    if span is None:
        return 0
    depth: dict[int, int] = {}
    longest = 0
    for instruction in code:
        if not span[0] <= instruction.address <= span[1] or base(instruction.opcode) == "NOP":
            continue
        is_ffma = base(instruction.opcode) in ("FFMA", "FFMA32I")
        reached = max((depth.get(register, 0) for register in reads(instruction)), default=0) + is_ffma
        for register in writes(instruction):
            depth[register] = reached
        if is_ffma:
            longest = max(longest, reached)
    return longest


def _load_span(code: list[Instruction]):
    """Where the loads that feed the main loop are issued: the innermost loop that holds (or is) the
    main loop and loads from global memory; None (the whole kernel, run once) where none does."""
    spans = _spans(code)
    main = _main_loop(spans)
    if main is None:
        return None
    holders = [span for span in spans if (span == main or _inside(main, span)) and spans[span]["loop_global_loads"]]
    return min(holders, key=lambda span: span[1] - span[0], default=None)


def load_use_distance(code: list[Instruction] | None) -> int | str:
    """The fewest instructions a thread issues from a global load to the first one that reads what
    it loaded (1: the very next), over the loads of the loop that feeds the main loop (``_load_span``),
    following that loop around to its next trip; without such a loop, over the loads of the whole
    kernel, run once. While they issue, the load is in flight: a warp hides that much of the memory
    latency by itself. 0 where no global load is used; empty without a disassembly."""
    if code is None:
        return ""
    span = _load_span(code)
    body = [i for i in code if base(i.opcode) != "NOP" and (span is None or span[0] <= i.address <= span[1])]
    best = None
    for start, instruction in enumerate(body):
        if base(instruction.opcode) not in GLOBAL_LOADS:
            continue
        loaded = writes(instruction)
        steps = range(1, len(body)) if span is not None else range(1, len(body) - start)
        for distance in steps:
            later = body[(start + distance) % len(body)]
            if reads(later) & loaded:
                best = distance if best is None else min(best, distance)
                break
            loaded -= writes(later)  # overwritten before any use: that part was never needed
            if not loaded:
                break
    return best or 0


# --------------------------------------------------------------------------------------------
# What a copy from global to shared memory costs (the persistent kernels' staging of h_{t-1}).

#: What a straight-line copy interleaved with a multiply does not count as its own: the product.
BESIDE_A_COPY = frozenset({"FFMA", "HMMA", "LDS"})


def staging_per_float(code: list[Instruction] | None) -> float | str:
    """Instructions a kernel issues per float it copies from global to shared memory, in the copy
    it runs most often: the *staging stores* are the shared stores (STS) whose data a global load
    wrote; a copy is the innermost loop holding some of them where that loop does no FFMA (its
    whole body, every trip alike), else the straight-line stretch from the first load feeding them
    to the last of them (within their innermost loop), less the product's FFMAs, HMMAs and shared
    loads a copy interleaved with a multiply runs beside (persistent version 3's double-buffered
    chunks of h: the next chunk's loads and stores among this one's FFMAs). Its instructions over the floats its staging
    stores write (STS.128: 4), for the copy inside the most loops (the persistent kernel's staging
    of h at every step, not its preload of U once per launch); the worst of those. 0 where nothing
    is staged; empty without a disassembly."""
    if code is None:
        return ""
    body = [i for i in code if base(i.opcode) != "NOP"]
    loaded: dict[int, int] = {}  # register -> index in body of the global load that last wrote it
    stores = []  # (index, floats, index of its first feeding load)
    for index, instruction in enumerate(body):
        name = base(instruction.opcode)
        if name == "STS":
            data = _store_data(instruction)
            if data and all(register in loaded for register in data):
                stores.append((index, _width(instruction.opcode), min(loaded[r] for r in data)))
        written = writes(instruction)
        for register in written:
            loaded.pop(register, None)
        if name in GLOBAL_LOADS:
            loaded.update({register: index for register in written})
    if not stores:
        return 0
    spans = _spans(code)

    def innermost(address):
        holders = [span for span in spans if span[0] <= address <= span[1]]
        return min(holders, key=lambda span: span[1] - span[0], default=None)

    copies: dict = {}
    for index, floats, first_load in stores:
        loop = innermost(body[index].address)
        if loop is not None and not spans[loop]["loop_ffma"]:
            key = ("loop", loop)
        else:
            key = ("stretch", loop)
        entry = copies.setdefault(key, [len(body), 0, 0])
        entry[0], entry[1], entry[2] = min(entry[0], first_load), max(entry[1], index), entry[2] + floats
    found = []  # (loops around the copy, instructions per float)
    for (kind, loop), (first, last, floats) in copies.items():
        instructions = spans[loop]["loop_instructions"] if kind == "loop" else sum(
            base(i.opcode) not in BESIDE_A_COPY for i in body[first:last + 1])
        depth = sum(span[0] <= body[last].address <= span[1] for span in spans)
        found.append((depth, instructions / floats))
    return round(max(found)[1], 2)


_WIDE_OR_DIVIDE = re.compile(r"^\s*(?:@%!?p\d+\s+)?(mul\.lo\.[su]64|(?:div|rem)\.(?:full\.|approx\.)?(?:[su](?:16|32|64)))\b", re.M)


def int64_multiplies_divides(ptx: str) -> int:
    """64-bit integer multiplies (``mul.lo.s64``/``u64``) and integer divisions and remainders
    (``div``/``rem`` of any width) in a kernel's PTX: index arithmetic a kernel whose sizes are
    compile-time constants does in 32 bits, by shifts, multiply-highs and additions (a 64-bit one
    costs several instructions, a division a call to a routine)."""
    if not isinstance(ptx, str):
        raise TypeError("ptx must be str")
    return len(_WIDE_OR_DIVIDE.findall(ptx))
