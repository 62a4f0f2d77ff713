"""A record of every launch, stream, event and buffer of a step's run, and the ordering mistakes in it.

On the simulator streams run one after the other, so a step whose streams are not ordered still
computes the right numbers: the grader checks the order itself. Inside ``Trace()`` every launch
is recorded with its stream and the memory its arguments cover (``ACCESS``), every event record,
wait and host synchronisation (told by the library's one recorder, ``replay.recording``), and
every float ``cuda.device_array`` starts as NaN. CUDA's stream ordering (``profile/graph.Order``)
then gives three findings: ``read_before_write``, ``race`` (with its likely ``cause``) and
``unwritten_output``. Buffers and streams are named after where the step's state keeps them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from types import SimpleNamespace

import numpy as np
from numba import cuda

from ...launches import patched  # the one place that patches Numba
from ...replay import recording
from ...kernels.versions import every
from ...runtime.numba_compat import function_name
from ..profile.graph import Order

#: Arguments (by position) each library kernel reads and writes (its ``Spec`` says); a learner's
#: kernel counts as writing all its arrays.
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
    """One device allocation: per element, whether this run wrote it and which launch last did."""

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
    """Flat indices into ``buffer`` of the elements a view covers (None: it reaches outside)."""
    start, shape, strides, itemsize = layout
    index = np.array((start - buffer.start) // itemsize)
    for extent, stride in zip(shape, strides):
        index = index[..., None] + np.arange(extent) * (stride // itemsize)
    index = index.ravel()
    return index if index.size == 0 or (index.min() >= 0 and index.max() < buffer.size) else None


DEFAULT_STREAM = "the default stream"


@dataclasses.dataclass
class Launch:
    """One recorded kernel launch: its number (in ``Order``), its kernel and its stream's name."""

    index: int
    kernel: str
    stream: str


def is_default_stream(stream) -> bool:
    """0, None, or a handle of the default stream (0, legacy 1, per-thread 2): the default stream."""
    if stream is None or isinstance(stream, int):
        return True
    handle = getattr(stream, "handle", None)  # the simulator's streams have none
    try:
        return handle is not None and int(getattr(handle, "value", handle) or 0) in (0, 1, 2)
    except (TypeError, ValueError):
        return False


def state_items(value, path: str, depth: int = 0):
    """("state.x_seq[2]", a device array)...: everything a step's state keeps, 4 levels down."""
    if depth < 4 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from state_items(item, f"{path}[{i}]", depth + 1)
    elif depth < 4 and isinstance(value, SimpleNamespace):
        for key, item in vars(value).items():
            yield from state_items(item, f"{path}.{key}", depth + 1)
    else:
        yield path, value


@dataclasses.dataclass
class Finding:
    kind: str  # "read_before_write", "race" or "unwritten_output"
    text: str
    cause: str = ""  # races: which ordering mistake the events point to
    buffer: str = ""  # the buffer concerned, by the name the step keeps it under
    elements: np.ndarray | None = None  # unwritten_output: flat indices into the output


class Trace:
    """``with Trace() as trace:`` records launches, events and allocations (see the module doc)."""

    def __init__(self):
        self.buffers: list[Buffer] = []  # every buffer seen so far, found by address
        self.launches: list[Launch] = []
        self.log: list[tuple] = []  # ("launch", Launch) / ("record" | "wait", event name, stream)
        self.findings: list[Finding] = []
        self.order = Order("legacy", default=DEFAULT_STREAM)
        self._events: list = []  # every event seen, kept alive: the order knows them by id
        self._streams: dict[int, tuple] = {}  # id -> (stream object, name)
        self._event_names: dict[int, str] = {}
        self._output: Buffer | None = None
        self._patches = contextlib.ExitStack()  # what __exit__ puts back

    # ---- setting up ------------------------------------------------------------------------

    def __enter__(self):
        original_alloc = cuda.device_array

        def poisoned_device_array(*args, **kwargs):
            array = original_alloc(*args, **kwargs)
            if np.dtype(array.dtype).kind == "f":
                array.copy_to_device(np.full(array.shape, np.nan, dtype=array.dtype))
                self.buffer_of(array, scratch=True)
            return array

        self._patches.enter_context(patched([(cuda, "device_array", poisoned_device_array)]))
        self._patches.enter_context(recording(listener=self._heard))  # the library's one recorder
        return self

    def _heard(self, operation) -> None:
        """One operation of the run, as the recorder issues it, before it runs."""
        kind, target, how, args = operation
        if kind == "launch":  # kernel[grid, block, stream, ...]
            self._launch(function_name(target), how[2] if isinstance(how, tuple) and len(how) > 2 else 0, args)
        elif kind in ("record", "wait"):
            self.event_used(kind, target, how)
        elif kind == "host":
            self.host_waited(target)

    def __exit__(self, *exc):
        self._patches.close()
        return False

    def name_things(self, roots: dict) -> None:
        """Name buffers, streams and events after where ``roots`` keep them ({"state": state, ...})."""
        stream_type, event_type = type(cuda.default_stream()), type(cuda.event())
        for root, value in roots.items():
            for path, item in state_items(value, root):
                if device_layout(item) is not None:
                    buffer = self.buffer_of(item, scratch=False)
                    if buffer.start == device_layout(item)[0] and buffer.name.startswith(UNNAMED):
                        buffer.name = path
                elif isinstance(item, event_type):
                    self._events.append(item)
                    self._event_names.setdefault(id(item), path)
                elif isinstance(item, stream_type):
                    self._streams.setdefault(id(item), (item, path))

    def set_output(self, array) -> None:
        """The step's output: written in full by every run, never read before it is written."""
        self._output = self.buffer_of(array, scratch=True)
        self._output.name = "out"

    def end_setup(self) -> None:
        for buffer in self.buffers:
            buffer.after_setup = buffer.written.copy()

    def start_run(self) -> None:
        """Scratch written during setup stays written; everything else must be written again."""
        for buffer in self.buffers:
            buffer.written = buffer.after_setup.copy()
        if self._output is not None:
            self._output.written[:] = False

    def end_run(self) -> None:
        output = self._output
        if output is not None and not output.written.all():
            missing = np.flatnonzero(~output.written)
            self._add(Finding("unwritten_output", f"{missing.size} of {output.size} elements of the output "
                                                  "were never written", elements=missing))

    # ---- what happens ----------------------------------------------------------------------

    def buffer_of(self, array, scratch: bool) -> Buffer:
        """The buffer ``array`` lies in (registered now if new)."""
        start, shape, strides, itemsize = device_layout(array)
        for buffer in self.buffers:
            if buffer.contains(start):
                return buffer
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) // itemsize if all(shape) else 0
        buffer = Buffer(f"{UNNAMED} #{len(self.buffers)}", start, itemsize,
                        tuple(shape) if extent == int(np.prod(shape)) else (extent,), scratch)
        self.buffers.append(buffer)
        return buffer

    def stream_name(self, stream) -> str:
        if is_default_stream(stream):
            return DEFAULT_STREAM
        if id(stream) not in self._streams:
            self._streams[id(stream)] = (stream, f"stream #{len(self._streams) + 1}")
        return self._streams[id(stream)][1]

    def _event_name(self, event) -> str:
        return self._event_names.setdefault(id(event), f"event #{len(self._event_names) + 1}")

    def event_used(self, kind: str, event, stream) -> None:
        """``event.record(stream)`` (``kind`` "record") or ``event.wait(stream)`` ("wait")."""
        name = self.stream_name(stream)
        self._events.append(event)
        getattr(self.order, kind)(id(event), name)
        self.log.append((kind, self._event_name(event), name))

    def host_waited(self, event) -> None:
        """The host waited for ``event`` (None: for all work)."""
        self.order.host_waits(None if event is None else id(event))

    def _launch(self, kernel: str, stream, args) -> None:
        name = self.stream_name(stream)
        launch = Launch(self.order.launch(name), kernel, name)
        self.launches.append(launch)
        self.log.append(("launch", launch))
        regions = {}
        for i, array in enumerate(args):
            if device_layout(array) is not None:
                buffer = self.buffer_of(array, scratch=False)
                elements = element_offsets(device_layout(array), buffer)
                if elements is not None:
                    regions[i] = (buffer, elements)
        if kernel not in ACCESS:  # a learner's kernel: assume it writes everything, check nothing
            for buffer, elements in regions.values():
                buffer.written[elements] = True
            return
        reads, writes = ACCESS[kernel]
        if kernel.endswith("gemm") and len(args) > 3 and args[3]:
            reads = reads + (2,)  # C += A @ B reads C
        for i in reads:
            if i in regions:
                self._check_read(launch, *regions[i])
        for i in writes:
            if i in regions:
                self._check_write(launch, *regions[i])

    def _check_read(self, launch, buffer, elements) -> None:
        if buffer.scratch and not buffer.written[elements].all():
            unwritten = elements[~buffer.written[elements]]
            self._add(Finding("read_before_write", f"{launch.kernel} on {launch.stream} reads "
                                                   f"{buffer.describe(unwritten)} before any kernel of this run wrote it",
                              buffer=buffer.name))
        for writer in np.unique(buffer.last_write[elements]):
            if writer >= 0 and not self.order.ordered(writer, launch.index):
                where = elements[buffer.last_write[elements] == writer]
                self._race(self.launches[writer], launch, buffer, where, "reads")
        buffer.readers.append((launch.index, elements))

    def _check_write(self, launch, buffer, elements) -> None:
        for writer in np.unique(buffer.last_write[elements]):
            if writer >= 0 and writer != launch.index and not self.order.ordered(writer, launch.index):
                where = elements[buffer.last_write[elements] == writer]
                self._race(self.launches[writer], launch, buffer, where, "overwrites")
        for reader, read in buffer.readers:
            if reader != launch.index and not self.order.ordered(reader, launch.index):
                both = np.intersect1d(read, elements)
                if both.size:
                    self._race(self.launches[reader], launch, buffer, both, "overwrites, while it may still be read,")
        buffer.last_write[elements] = launch.index
        buffer.written[elements] = True

    def _race(self, first: Launch, second: Launch, buffer: Buffer, elements, verb: str) -> None:
        if self.first("race"):
            return  # only the first race is reported: the rest usually follow from it
        self._add(Finding("race", f"{second.kernel} on {second.stream} {verb} {buffer.describe(elements)}, which "
                                  f"{first.kernel} on {first.stream} {'reads' if 'read,' in verb else 'writes'} just "
                                  f"before, and nothing makes {second.stream} wait for it",
                          cause=self._cause(first, second), buffer=buffer.name))

    def _cause(self, first: Launch, second: Launch) -> str:
        """Which ordering mistake the events around two unordered launches point to."""
        start, end = (next(i for i, e in enumerate(self.log) if e[0] == "launch" and e[1] is launch)
                      for launch in (first, second))
        for at in range(start + 1, end):
            if self.log[at][0] != "record" or self.log[at][2] != first.stream:
                continue  # look at the events recorded after the first launch, on its stream
            event = self.log[at][1]
            waits = [e[2] for e in self.log[at + 1:end] if e[0] == "wait" and e[1] == event]
            if not waits:
                previous = max((i for i in range(at) if self.log[i][:2] == ("record", event)), default=-1)
                early = any(e[:3] == ("wait", event, second.stream) for e in self.log[previous + 1:at])
                return "wait_before_record" if early else "missing_wait"
            if second.stream not in waits:
                return "wait_on_wrong_stream"
        waited = {e[1] for e in self.log[start + 1:end] if e[0] == "wait" and e[2] == second.stream}
        if any(e[0] == "record" and e[1] in waited for e in self.log[start + 1:end]):
            return "event_on_wrong_stream"
        return "streams_unordered"

    def _add(self, finding: Finding) -> None:
        if not any(f.kind == finding.kind for f in self.findings):
            self.findings.append(finding)

    def first(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)
