"""What the fake driver holds and records: device memory, streams, events, kernels, the call log.

One ``State`` per process (``STATE``), made by ``fakegpu.activate``. Device memory
is host memory (NumPy buffers), so copies to and from the "device" keep their bytes and a
program's host logic runs as on a GPU; kernels are checked and recorded, never run, so what a
kernel would have written stays as it was (values are the simulator's job).

``calls`` is the log a test reads: one ``Call`` per recorded driver call (module loads,
launches with grid, block, dynamic shared memory, cooperative or not and stream, stream and
event operations, function attributes, copies), in order. ``driver_seconds`` adds up the time
spent inside the fake, so the host's own cost can be measured without it.
"""

from __future__ import annotations

import dataclasses
import functools
import threading

import numpy as np

from .cubin import KernelResources

#: Virtual GPU time each launch, copy or memset takes on the fake's clock (for events). Not a
#: measurement or a model: only so that elapsed times are finite and ordered.
FAKE_OPERATION_MS = 0.005


@dataclasses.dataclass(frozen=True)
class Call:
    """One recorded driver call: its API name and what it did."""

    api: str
    details: dict


@dataclasses.dataclass
class Kernel(KernelResources):
    """A kernel of a loaded library: what its cubin says it uses, and what the program set."""

    max_dynamic_shared: int = 0  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    library: int = 0
    arch: str = ""

    @functools.cached_property
    def short_name(self) -> str:
        """The Python name in numba's mangled one: _ZN<len><name>...<len><name>B2v1... -> the last <name>."""
        text, i, last = self.name, 3, self.name
        if not text.startswith("_ZN"):
            return text
        while i < len(text) and text[i].isdigit():
            j = i
            while text[j].isdigit():
                j += 1
            length = int(text[i:j])
            last, i = text[j:j + length], j + length
        return last


@dataclasses.dataclass
class State:
    """Everything the fake driver knows, for one process."""

    device: object
    driver_version: int = 13000
    calls: list = dataclasses.field(default_factory=list)
    memory: dict = dataclasses.field(default_factory=dict)  # device pointer -> NumPy buffer
    host_memory: dict = dataclasses.field(default_factory=dict)  # pinned host pointer -> buffer
    kernels: dict = dataclasses.field(default_factory=dict)  # handle -> Kernel
    libraries: dict = dataclasses.field(default_factory=dict)  # handle -> {name: kernel handle}
    streams: set = dataclasses.field(default_factory=set)
    non_blocking: set = dataclasses.field(default_factory=set)  # streams created CU_STREAM_NON_BLOCKING
    events: dict = dataclasses.field(default_factory=dict)  # handle -> virtual ms when recorded
    links: dict = dataclasses.field(default_factory=dict)
    captures: dict = dataclasses.field(default_factory=dict)  # origin stream -> graphs.Capture under way
    graphs: dict = dataclasses.field(default_factory=dict)  # graph handle -> its nodes
    execs: dict = dataclasses.field(default_factory=dict)  # instantiated graph handle -> its nodes
    clock_ms: float = 0.0
    driver_seconds: float = 0.0
    errors: list = dataclasses.field(default_factory=list)  # exceptions raised inside the fake
    refused: list = dataclasses.field(default_factory=list)  # (api, code, why) the driver would refuse
    next_handle: int = 0x1000
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    current: threading.local = dataclasses.field(default_factory=threading.local)
    record: bool = True

    def handle(self) -> int:
        with self.lock:
            self.next_handle += 0x10
            return self.next_handle

    def log(self, what: str, **details) -> None:
        if self.record:
            self.calls.append(Call(what, details))

    def allocate(self, size: int, table: dict) -> int:
        buffer = np.zeros(max(int(size), 1), dtype=np.uint8)  # cudaMalloc leaves it undefined: zeros is one such
        pointer = buffer.ctypes.data
        table[pointer] = buffer
        return pointer

    def find(self, pointer: int):
        """(base, buffer) of the device allocation that holds ``pointer``, or (None, None)."""
        if pointer in self.memory:
            return pointer, self.memory[pointer]
        for base, buffer in self.memory.items():
            if base <= pointer < base + buffer.nbytes:
                return base, buffer
        return None, None

    def launches(self) -> list:
        return [call for call in self.calls if call.api == "launch"]


STATE: State | None = None
