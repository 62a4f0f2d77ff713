"""Which launch waits for which: the dependency graph of a recorded pass, and its longest chain.
Edges: ``stream``, ``event``, ``default-stream`` (the legacy default stream) and ``host`` (the
exercises' trace). Dependencies point to earlier launches: issue order is a topological order.
"""

from __future__ import annotations

#: Which kind of edge wins when a launch is reached along several.
_PRECEDENCE = {"stream": 0, "event": 1, "default-stream": 2, "host": 3}


def _merge(into: dict, frontier: dict, kind: str | None = None) -> None:
    for launch, how in frontier.items():
        how = kind or how
        if launch not in into or _PRECEDENCE[how] < _PRECEDENCE[into[launch]]:
            into[launch] = how


class Order:
    """CUDA's ordering of the work a host issues, built one operation at a time: the course's one
    model of stream ordering (the profile's graph, the exercises' race checks). ``launch``,
    ``record``, ``wait`` and ``host_waits`` add operations; ``deps`` and ``ordered`` answer.
    Streams and events are any hashable keys; ``default`` is the default stream's."""

    def __init__(self, default_stream: str = "legacy", default=0):
        if default_stream not in ("legacy", "per-thread"):
            raise ValueError(f"default_stream must be 'legacy' or 'per-thread', got {default_stream!r}")
        self.legacy = default_stream == "legacy"
        self.default = default
        self.deps: list[dict] = []  # per launch: {earlier launch it waits for: how}
        self.streams: list = []  # per launch: its stream
        self._ancestors: list[set] = []  # per launch: every earlier launch it waits for, through any chain
        self._last: dict = {}  # per stream: the launches its most recent operation waits for
        self._recorded: dict = {}  # per event: the launches its most recent record waits for
        self._host: dict = {}  # what the host has waited for: everything issued later waits for it

    def _before(self, stream) -> dict:
        before: dict = {}
        _merge(before, self._host, "host")
        _merge(before, self._last.get(stream, {}))
        if self.legacy:
            if stream == self.default:
                for other, frontier in self._last.items():
                    if other != self.default:
                        _merge(before, frontier, "default-stream")
            else:
                _merge(before, self._last.get(self.default, {}), "default-stream")
        return before

    def launch(self, stream) -> int:
        """A launch on ``stream``: its number (0, 1, ...)."""
        index = len(self.deps)
        before = self._before(stream)
        deps = {launch: "stream" if self.streams[launch] == stream else how for launch, how in before.items()}
        ancestors = set(deps)
        for launch in deps:
            ancestors |= self._ancestors[launch]
        self.deps.append(deps)
        self.streams.append(stream)
        self._ancestors.append(ancestors)
        self._last[stream] = {index: "stream"}
        return index

    def record(self, event, stream) -> None:
        before = self._before(stream)
        self._recorded[event] = {launch: ("event" if how == "stream" else how) for launch, how in before.items()}
        self._last[stream] = before

    def wait(self, event, stream) -> None:
        """A wait on an event never recorded waits for nothing."""
        before = self._before(stream)
        _merge(before, self._recorded.get(event, {}), "event")
        self._last[stream] = before

    def host_waits(self, event=None) -> None:
        """The host waited for ``event`` (what its record waits for), or for all work issued (None)."""
        if event is not None:
            _merge(self._host, self._recorded.get(event, {}))
            return
        for frontier in self._last.values():  # each stream's latest work, and through it all before
            _merge(self._host, frontier)

    def ordered(self, first: int, second: int) -> bool:
        """Whether launch ``first`` is guaranteed to finish before launch ``second`` starts."""
        return first in self._ancestors[second]


def dependencies(ops, launch_streams, default_stream: str = "legacy") -> list[dict]:
    """For each launch, {earlier launch it waits for: kind}, from ``ops`` (StreamOps in issue
    order) and ``launch_streams`` (each launch's stream)."""
    order = Order(default_stream)
    for op in ops:
        if op.kind == "launch":
            if order.launch(op.stream) != op.index or launch_streams[op.index] != op.stream:
                raise ValueError(f"launch {op.index} is out of issue order or on another stream")
        elif op.kind == "record":
            order.record(op.index, op.stream)
        elif op.kind == "wait":
            order.wait(op.index, op.stream)
        elif op.kind == "host":
            order.host_waits(None if op.index < 0 else op.index)
        else:
            raise ValueError(f"unknown stream operation {op.kind!r}")
    return order.deps


def longest_path(deps: list[dict], weights=None) -> tuple[float, list[int]]:
    """(length, launches on it) of the heaviest chain of dependent launches; weight 1 per launch
    unless ``weights`` (a sequence, one per launch) says otherwise."""
    best: list[float] = []
    via: list[int | None] = []
    for i, before in enumerate(deps):  # each pointing to earlier launches (``dependencies``)
        weight = 1 if weights is None else weights[i]
        previous = max(before, key=lambda j: best[j], default=None)
        best.append(weight + (best[previous] if previous is not None else 0))
        via.append(previous)
    if not best:
        return 0, []
    end = max(range(len(best)), key=best.__getitem__)
    path = []
    while end is not None:
        path.append(end)
        end = via[end]
    return best[path[0]], path[::-1]
