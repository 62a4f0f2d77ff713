"""The memory model of the trace: which device buffer an argument lies in, which of its elements
a view covers, and which arguments each library kernel reads and writes.

Works on both array kinds: the simulator's (a NumPy array inside) and a GPU's (the CUDA array
interface): an address, a shape and strides are all it needs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...kernels.versions import every

#: Arguments (by position) that each library kernel reads and writes (each version's ``Spec``
#: says it beside its kernel). A kernel that is not listed (one a learner wrote) counts as writing
#: all its array arguments and is not checked.
ACCESS = {spec.name: spec.access for spec in every() if spec.access is not None} | {"_empty_kernel": ((), ())}
#: What a buffer is called until the walk of the step's state finds where it is kept.
UNNAMED = "an unnamed array"


def device_layout(array):
    """(address, shape, strides in bytes, itemsize) of a device array; None for anything else."""
    if hasattr(array, "_ary") and isinstance(array._ary, np.ndarray):  # the simulator's arrays
        host = array._ary
        return host.__array_interface__["data"][0], host.shape, host.strides, host.itemsize
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        return None
    return interface["data"][0], array.shape, array.strides, array.dtype.itemsize


@dataclasses.dataclass
class Buffer:
    """One device allocation, by its name in the step: per element, whether this run wrote it and
    which launch wrote it last; and the launches that read it since."""

    name: str
    start: int
    itemsize: int
    shape: tuple
    scratch: bool  # read-before-write is checked only for scratch and the output

    def __post_init__(self):
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.written = np.zeros(self.size, dtype=bool)
        self.after_setup = self.written
        self.last_write = np.full(self.size, -1)
        self.readers: list[tuple[int, np.ndarray]] = []

    def contains(self, address: int) -> bool:
        return self.start <= address < self.start + self.size * self.itemsize

    def describe(self, elements: np.ndarray) -> str:
        """'state.x_seq[2]', 'state.x_seq[0:2]', 'part of state.z': which part of it that is."""
        if len(self.shape) < 2:
            return self.name if elements.size == self.size else f"part of {self.name}"
        per_lead = self.size // self.shape[0]
        leads = np.unique(elements // per_lead)
        whole_rows = elements.size == leads.size * per_lead
        if leads.size == self.shape[0]:
            where = self.name
        elif leads.size == 1:
            where = f"{self.name}[{leads[0]}]"
        elif leads[-1] - leads[0] + 1 == leads.size:
            where = f"{self.name}[{leads[0]}:{leads[-1] + 1}]"
        else:
            where = f"{self.name}[{', '.join(str(i) for i in leads)}]"
        return where if whole_rows else f"part of {where}"


def element_offsets(layout, buffer: Buffer) -> np.ndarray | None:
    """Flat indices, into ``buffer``, of the elements a view with ``layout`` covers (None if the
    view reaches outside the buffer: an array first seen through a smaller view; left untracked)."""
    start, shape, strides, itemsize = layout
    index = np.array((start - buffer.start) // itemsize)
    for extent, stride in zip(shape, strides):
        index = index[..., None] + np.arange(extent) * (stride // itemsize)
    index = index.ravel()
    return index if index.size == 0 or (index.min() >= 0 and index.max() < buffer.size) else None


class Memory:
    """Every buffer seen so far, found by address."""

    def __init__(self):
        self.buffers: list[Buffer] = []

    def buffer_of(self, array, scratch: bool) -> Buffer:
        """The buffer ``array`` lies in (registered now if new: a whole allocation, or a view of one)."""
        start, shape, strides, itemsize = device_layout(array)
        for buffer in self.buffers:
            if buffer.contains(start):
                return buffer
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) // itemsize if all(shape) else 0
        buffer = Buffer(f"{UNNAMED} #{len(self.buffers)}", start, itemsize,
                        tuple(shape) if extent == int(np.prod(shape)) else (extent,), scratch)
        self.buffers.append(buffer)
        return buffer
