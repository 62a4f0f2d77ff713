"""A record of every launch, stream, event and buffer of a run, and the ordering mistakes in it.

On the simulator streams run one after the other, so a step whose side stream is not ordered
with its main stream still computes the right numbers there; on a GPU it races. The grader
therefore checks the order itself, not only the numbers. Inside ``Trace()``:

- every kernel launch is recorded with its stream and the memory its arguments cover (which
  arguments a library kernel reads and writes is known: ``memory.ACCESS``);
- every ``event.record`` / ``event.wait`` and host synchronisation is recorded (the library's one
  recorder, ``replay.recording``, tells the trace each operation as it is issued);
- every float buffer made with ``cuda.device_array`` starts as NaN (uninitialised scratch shows).

From that, with CUDA's rules for ordinary (blocking) streams and the legacy default stream, the
course's one model of stream ordering (``profile/graph.Order``) tells whether launch A is
guaranteed to finish before launch B starts.
Three findings come out, in launch order, the first of each kind kept:

- ``read_before_write``: a kernel reads scratch (or the output) that no kernel of this run wrote;
- ``race``: two launches touch the same elements, one writing, with nothing ordering them; the
  events around them say which usual mistake it is (``Finding.cause``);
- ``unwritten_output``: elements of the output that no kernel of this run wrote.

Buffers and streams are named after where the step keeps them (``state.x_seq[2]``,
``state.side``), found by walking the step's state after ``setup``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from types import SimpleNamespace

import numpy as np
from numba import cuda

from ...launches import patched  # the one place that patches Numba
from ...replay import recording
from ...runtime.numba_compat import function_name
from .memory import ACCESS, UNNAMED, Buffer, Memory, device_layout, element_offsets
from ..profile.graph import Order

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
    """(path, value) of everything ``value`` (a step's state) keeps, through lists, tuples and
    namespaces down to 4 levels: ("state.x_seq[2]", a device array), ("state.side", a stream)..."""
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
        self.memory = Memory()
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
                self.memory.buffer_of(array, scratch=True)
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
                    buffer = self.memory.buffer_of(item, scratch=False)
                    if buffer.start == device_layout(item)[0] and buffer.name.startswith(UNNAMED):
                        buffer.name = path
                elif isinstance(item, event_type):
                    self._events.append(item)
                    self._event_names.setdefault(id(item), path)
                elif isinstance(item, stream_type):
                    self._streams.setdefault(id(item), (item, path))

    def set_output(self, array) -> None:
        """The step's output: written in full by every run, never read before it is written."""
        self._output = self.memory.buffer_of(array, scratch=True)
        self._output.name = "out"

    def end_setup(self) -> None:
        for buffer in self.memory.buffers:
            buffer.after_setup = buffer.written.copy()

    def start_run(self) -> None:
        """Scratch written during setup stays written; everything else must be written again."""
        for buffer in self.memory.buffers:
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
        """The host waited for ``event`` (None: for all work): everything queued later is ordered after it."""
        self.order.host_waits(None if event is None else id(event))

    def _launch(self, kernel: str, stream, args) -> None:
        name = self.stream_name(stream)
        launch = Launch(self.order.launch(name), kernel, name)
        self.launches.append(launch)
        self.log.append(("launch", launch))
        arrays = [(i, a) for i, a in enumerate(args) if device_layout(a) is not None]
        if kernel not in ACCESS:  # a learner's kernel: assume it writes everything, check nothing
            for _, array in arrays:
                buffer = self.memory.buffer_of(array, scratch=False)
                elements = element_offsets(device_layout(array), buffer)
                if elements is not None:
                    buffer.written[elements] = True
            return
        reads, writes = ACCESS[kernel]
        if kernel.endswith("gemm") and len(args) > 3 and args[3]:
            reads = reads + (2,)  # C += A @ B reads C
        regions = {}
        for i, array in arrays:
            buffer = self.memory.buffer_of(array, scratch=False)
            elements = element_offsets(device_layout(array), buffer)
            if elements is not None:
                regions[i] = (buffer, elements)
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
