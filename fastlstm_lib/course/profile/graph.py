"""Which launch waits for which: the dependency graph of a recorded pass, and its longest chain.

CUDA orders work in three ways, and the graph has an edge for each:

- ``stream``: a launch starts after the one queued before it on the same stream ends;
- ``event``: ``event.wait(s)`` holds everything queued on s afterwards until the work queued
  before the matching ``event.record(s2)`` on s2 is done (a wait on an event never recorded
  waits for nothing);
- ``default-stream``: the legacy default stream (stream 0, Numba's default) waits for all work
  queued before on every blocking stream, and work queued afterwards on a blocking stream
  waits for it (every ``cuda.stream()`` is blocking). With a per-thread default stream there
  is no such edge.

Records and waits are zero-time nodes of the graph; each launch's dependencies are the launches
reached back through them. The host issues the operations in the order recorded, so every
dependency points to an earlier launch: that order is a topological order, and longest paths
take one pass.
"""

from __future__ import annotations

#: Which kind of edge wins when a launch is reached along several.
_PRECEDENCE = {"stream": 0, "event": 1, "default-stream": 2}


def _merge(into: dict, frontier: dict, kind: str | None = None) -> None:
    for launch, how in frontier.items():
        how = kind or how
        if launch not in into or _PRECEDENCE[how] < _PRECEDENCE[into[launch]]:
            into[launch] = how


def dependencies(ops, launch_streams, default_stream: str = "legacy") -> list[dict]:
    """For each launch, {earlier launch it waits for: "stream" | "event" | "default-stream"}.

    ``ops``: StreamOp records in issue order; ``launch_streams``: the stream of every launch.
    """
    if default_stream not in ("legacy", "per-thread"):
        raise ValueError(f"default_stream must be 'legacy' or 'per-thread', got {default_stream!r}")
    last: dict[int, dict] = {}  # per stream: the launches its most recent operation waits for
    recorded: dict[int, dict] = {}  # per event: the launches its most recent record waits for
    deps: list[dict] = [{} for _ in launch_streams]
    for op in ops:
        before: dict = {}
        _merge(before, last.get(op.stream, {}))
        if default_stream == "legacy":
            if op.stream == 0:
                for stream, frontier in last.items():
                    if stream != 0:
                        _merge(before, frontier, "default-stream")
            else:
                _merge(before, last.get(0, {}), "default-stream")
        if op.kind == "launch":
            for launch, how in before.items():
                deps[op.index][launch] = "stream" if launch_streams[launch] == op.stream else how
            last[op.stream] = {op.index: "stream"}
        elif op.kind == "record":
            recorded[op.index] = {launch: ("event" if how == "stream" else how) for launch, how in before.items()}
            last[op.stream] = before
        elif op.kind == "wait":
            _merge(before, recorded.get(op.index, {}), "event")
            last[op.stream] = before
        else:
            raise ValueError(f"unknown stream operation {op.kind!r}")
    return deps


def longest_path(deps: list[dict], weights=None) -> tuple[float, list[int]]:
    """(length, launches on it) of the heaviest chain of dependent launches; weight 1 per launch
    unless ``weights`` (a sequence, one per launch) says otherwise."""
    best: list[float] = []
    via: list[int | None] = []
    for i, before in enumerate(deps):
        if before and max(before) >= i:
            raise ValueError("dependencies must point to earlier launches")
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
