"""The library's one recorder of a pass, and the replay of a recorded pass.

**Recording.** Inside ``recording()`` every ``kernel[configuration](*args)`` (through the one
launch interceptor, ``launches.intercept``) and every event ``record``/``wait`` is written down in
issue order (a ``Recording``): launches (``LaunchCall``: kernel, grid, block, stream number, shared
bytes, arguments), stream operations (``StreamOp``: what the profile's dependency graph reads) and
the same operations as issued (``issued``: the objects themselves, what a replay re-issues).
Streams get numbers (0 the default stream, the others in order of first sight), events too.
``recording(perform=True)`` runs the pass and notes what would make it unreplayable (a copy
between host and device, a synchronisation); ``perform=False`` launches nothing: the profile's
dry run (``course/profile/dryrun.py``) adds its stand-ins for streams, events and uploads.

**Replay.** The steps' ``run`` methods are written to be read: before each launch they make views,
check shapes, choose a blocking and look the kernel up, Python the host repeats every pass on top
of numba-cuda's own dispatch, and on a GPU that Python sets the pace (issue 23). A pass recorded
for real gives its ``Replay`` (``Recording.replay()``), which issues exactly that list again: the
same kernels, configurations, arrays and streams, nothing made, checked or chosen in between: a
CUDA Graph done on the host (the GPU gets the same work, only the Python between launches is gone).

Only a pass of nothing but launches and stream ordering can be replayed, as a step's ``run`` must
be (``steps/base.py``); one that copies between host and device or synchronises is not
(``replay()`` returns None), and its runner runs the step's code every time.

Replay looks the kernel class's ``__getitem__`` up at every launch, so whatever intercepts
launches then (``fl.count_launches``, through ``launches.intercept``) still sees replayed
launches, and the simulator (whose kernels configure themselves in place) replays correctly.
"""

from __future__ import annotations

import contextlib
import dataclasses

from numba import cuda

from .launches import intercept, patched

#: Copies between host and device that make a pass unreplayable (as do the host's waits).
_ARRAY_COPIES = ("copy_to_device", "copy_to_host")


@dataclasses.dataclass(frozen=True)
class LaunchCall:
    """One recorded ``kernel[grid, block, stream, shared](*args)``."""

    kernel: object
    grid: tuple
    block: tuple
    stream: int
    shared_bytes: int
    args: tuple


@dataclasses.dataclass(frozen=True)
class StreamOp:
    """One operation queued on a stream, in issue order: a launch (``index`` into the launches),
    or an event's ``record`` / ``wait`` (``index`` = the event's number)."""

    kind: str
    stream: int
    index: int


def normalized_configuration(configuration) -> tuple:
    """(grid, block, stream, shared bytes) of a ``kernel[...]`` configuration, grid and block as 3-tuples."""
    from numba.cuda.errors import normalize_kernel_dimensions

    configuration = configuration if isinstance(configuration, tuple) else (configuration,)
    if len(configuration) < 2:
        raise ValueError(f"a launch needs a grid and a block, got {configuration!r}")
    grid, block = normalize_kernel_dimensions(configuration[0], configuration[1])
    stream = configuration[2] if len(configuration) > 2 else 0
    shared = configuration[3] if len(configuration) > 3 else 0
    return tuple(grid), tuple(block), stream, shared


class Recording:
    """What a pass queued: launches and stream operations, in the order the host issued them."""

    def __init__(self):
        self.launches: list[LaunchCall] = []
        self.ops: list[StreamOp] = []
        self.issued: list[tuple] = []  # ("launch", kernel, configuration, args) | ("record" | "wait", event, stream, None)
        self.refused: list[str] = []  # what made the pass unreplayable (copies, synchronisations)
        self.streams = 1  # stream 0, the default stream, always exists
        self.events = 0
        self._numbers: dict[int, int] = {}  # id of a stream or event -> its number
        self._seen: list = []  # every stream and event numbered: alive, so that no id is reused

    def replay(self) -> "Replay | None":
        """The pass recorded for real, to issue again; None if it copied between host and device or
        synchronised (then it cannot be replayed)."""
        return None if self.refused else Replay(self.issued)

    def _number(self, thing, new) -> int:
        """A stream's or an event's number: its own (the dry run's stand-ins number themselves), or
        ``new()`` at first sight."""
        number = getattr(thing, "number", None)
        if number is not None:
            return number
        if id(thing) not in self._numbers:
            self._numbers[id(thing)] = new()
            self._seen.append(thing)
        return self._numbers[id(thing)]

    def stream_number(self, stream) -> int:
        if stream is None or (isinstance(stream, int) and stream == 0):
            return 0
        return self._number(stream, self.new_stream)

    def new_stream(self) -> int:
        self.streams += 1
        return self.streams - 1

    def new_event(self) -> int:
        self.events += 1
        return self.events - 1

    def event_number(self, event) -> int:
        return self._number(event, self.new_event)

    def launch(self, kernel, configuration, args) -> None:
        grid, block, stream, shared = normalized_configuration(configuration)
        number = self.stream_number(stream)
        self.ops.append(StreamOp("launch", number, len(self.launches)))
        self.launches.append(LaunchCall(kernel, grid, block, number, int(shared), tuple(args)))
        self.issued.append(("launch", kernel, configuration, tuple(args)))

    def event_op(self, kind: str, event, stream=0) -> None:
        self.ops.append(StreamOp(kind, self.stream_number(stream), self.event_number(event)))
        self.issued.append((kind, event, stream, None))

    def host_wait(self, event=None) -> None:
        """The host waited for ``event`` (``event.synchronize()``), or for everything (None:
        ``cuda.synchronize()``). Its index is the event's number, -1 for everything."""
        self.ops.append(StreamOp("host", -1, -1 if event is None else self.event_number(event)))
        self.issued.append(("host", event, None, None))


@contextlib.contextmanager
def recording(perform: bool = True, listener=None):
    """``with recording() as pass_:`` every launch and event operation in the block, recorded; with
    ``perform`` they also run (and copies and synchronisations are noted in ``refused``; the
    host's waits are operations too), without it nothing is launched (the caller provides
    stand-ins for streams and events). ``listener(operation)``, if given, hears each operation
    as issued (``Recording.issued``'s form) before it runs: the exercises' trace checks it there."""
    rec = Recording()

    def heard() -> None:
        if listener is not None:
            listener(rec.issued[-1])

    def recording_launch(kernel, configuration, configure):
        configured = configure(kernel, configuration) if perform else None

        def launch(*args):
            rec.launch(kernel, configuration, args)
            heard()
            if perform:
                return configured(*args)

        return launch

    patches = []
    if perform:
        # the driver's Event and device array classes, or the simulator's
        events, arrays = type(cuda.event()), type(cuda.device_array(1, dtype="float32"))

        def noting(target, name, kind, refusal):
            """``target.name``, noted before it runs: as the stream operation ``kind`` ("record",
            "wait"), or a host wait ("host"), and ``refusal`` (what makes the pass unreplayable)."""
            original = getattr(target, name)

            def call(*args, **kwargs):
                if refusal is not None:
                    rec.refused.append(refusal)
                if kind == "host":
                    rec.host_wait(*args)
                elif kind is not None:
                    rec.event_op(kind, *args, **kwargs)
                if kind is not None:
                    heard()
                return original(*args, **kwargs)

            return call

        notes = [(events, "record", "record", None), (events, "wait", "wait", None),
                 (events, "synchronize", "host", "event.synchronize"), (cuda, "synchronize", "host", "synchronize"),
                 (cuda, "to_device", None, "to_device")] + [(arrays, name, None, name) for name in _ARRAY_COPIES]
        patches = [(target, name, noting(target, name, kind, refusal)) for target, name, kind, refusal in notes]
    with intercept(recording_launch), patched(patches):
        yield rec


class Replay:
    """A recorded pass. ``replay()`` issues it again; ``launches``: how many kernels it queues."""

    def __init__(self, ops: list):
        self.ops = ops  # ("launch", kernel, configuration, args) | ("record" | "wait", event, stream, None)
        self.launches = sum(op[0] == "launch" for op in ops)

    def __call__(self) -> None:
        for kind, target, how, args in self.ops:
            if kind == "launch":
                type(target).__getitem__(target, how)(*args)
            elif kind == "record":
                target.record(how)
            else:  # "wait": a pass with a host wait is never replayed
                target.wait(how)

    def __repr__(self) -> str:
        return f"<replay of {self.launches} launches, {len(self.ops) - self.launches} event operations>"
