"""What a loaded module's kernels use, read from the cubin (ELF) the way the driver reads it.

A kernel's registers, stack frame (spills and calls), static shared memory, constant memory
and the external functions it calls are all in the cubin's ELF sections:

- ``.nv.info`` holds per-function records, among them EIATTR_REGCOUNT (0x2f) and
  EIATTR_FRAME_SIZE (0x11), each naming the function by its symbol index;
- ``.nv.info.<kernel>`` holds the kernel's own records, EIATTR_EXTERNS (0x0f) among them: the
  symbols it calls outside itself (a grid barrier's ``cudaCGSynchronize``, or its system call);
- ``.nv.shared.<kernel>`` is the kernel's static shared memory (its size is the bytes);
- ``.nv.constant0.<kernel>`` its parameter bank.

Records are (format, attribute, payload): format 4 (EIFMT_SVAL) has a 16-bit size and that
many bytes; formats 2 and 3 carry their value in the next bytes; format 1 nothing. The codes
were checked against ``cuobjdump -elf`` and ``cuobjdump -res-usage`` of the same cubins
(tests/test_fake_gpu.py compares the figures with ptxas's report).
"""

from __future__ import annotations

import dataclasses
import struct

EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
EIATTR_EXTERNS = 0x0F
#: What a grid barrier (``cuda.cg.this_grid().sync()``) calls: the device runtime's
#: ``cudaCGSynchronize`` before linking, its system call once libcudadevrt is linked in.
GRID_SYNC_SYMBOLS = ("cudaCGSynchronize", "__cuda_syscall_CGS_sync")


@dataclasses.dataclass
class KernelResources:
    """What one kernel of a cubin uses, per thread (registers, local) or per block (shared)."""

    name: str
    registers: int
    local_bytes: int
    static_shared_bytes: int
    const_bytes: int
    grid_sync: bool


def _sections(data: bytes) -> dict[str, tuple[int, int, int, int]]:
    """{section name: (type, offset, size, link)} of an ELF64 little-endian image."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF image (a cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names_offset = raw[names_index][4]
    out = {}
    for name, kind, _flags, _addr, offset, size, link, _info, _align, _ent in raw:
        start = names_offset + name
        out[data[start:data.index(b"\0", start)].decode()] = (kind, offset, size, link)
    return out


def image_size(data_pointer: int) -> int:
    """The size of a cubin in memory, from its ELF header (the driver is handed a pointer only)."""
    import ctypes

    header = ctypes.string_at(data_pointer, 64)
    shoff, = struct.unpack_from("<Q", header, 0x28)
    entsize, count = struct.unpack_from("<HH", header, 0x3A)
    return shoff + entsize * count


def _records(blob: bytes):
    i = 0
    while i + 4 <= len(blob):
        fmt, attribute = blob[i], blob[i + 1]
        if fmt == 4:
            size, = struct.unpack_from("<H", blob, i + 2)
            yield attribute, blob[i + 4:i + 4 + size]
            i += 4 + size
        else:
            yield attribute, blob[i + 2:i + 4]
            i += 4


def _symbols(data: bytes, sections) -> list[str]:
    kind, offset, size, link = sections[".symtab"]
    strings = list(sections.values())[link][1]
    names = []
    for i in range(size // 24):
        name, = struct.unpack_from("<I", data, offset + 24 * i)
        start = strings + name
        names.append(data[start:data.index(b"\0", start)].decode())
    return names


def kernels(data: bytes) -> dict[str, KernelResources]:
    """Every kernel (entry function) in a cubin, by its mangled name."""
    sections = _sections(data)
    symbols = _symbols(data, sections)
    per_function: dict[str, dict[int, int]] = {}
    kind, offset, size, _ = sections.get(".nv.info", (0, 0, 0, 0))
    for attribute, payload in _records(data[offset:offset + size]):
        if attribute in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(payload) == 8:
            index, value = struct.unpack("<II", payload)
            per_function.setdefault(symbols[index], {})[attribute] = value
    found = {}
    for section, (kind, offset, size, _) in sections.items():
        if not section.startswith(".nv.info."):
            continue
        name = section[len(".nv.info."):]
        if f".text.{name}" not in sections or f".nv.constant0.{name}" not in sections:
            continue  # a device function, not a kernel
        externs = set()
        for attribute, payload in _records(data[offset:offset + size]):
            if attribute == EIATTR_EXTERNS:
                externs.update(symbols[i] for i in struct.unpack(f"<{len(payload) // 4}I", payload))
        figures = per_function.get(name, {})
        found[name] = KernelResources(
            name=name, registers=figures.get(EIATTR_REGCOUNT, 0), local_bytes=figures.get(EIATTR_FRAME_SIZE, 0),
            static_shared_bytes=sections.get(f".nv.shared.{name}", (0, 0, 0, 0))[2],
            const_bytes=sections[f".nv.constant0.{name}"][2], grid_sync=any(symbol in externs for symbol in GRID_SYNC_SYMBOLS))
    return found
