"""Streams, events and the order they impose, as vector clocks: the trace's model of CUDA ordering.

A launch gets a clock, {stream: how many of its launches are guaranteed done before this one
starts}. CUDA's rules for ordinary (blocking) streams and the legacy default stream: work on one
stream runs in order; ``event.record(s)`` captures stream s's clock; ``event.wait(s)`` joins it
into s; the legacy default stream waits for every blocking stream, and they for it; a host
synchronisation orders everything before it before everything after. Launch A is ordered before
launch B when B's clock has counted A.
"""

from __future__ import annotations

import dataclasses

DEFAULT_STREAM = "the default stream"


@dataclasses.dataclass
class Launch:
    """One recorded kernel launch: its stream, its number there, and its clock."""

    index: int
    kernel: str
    stream: str
    seq: int
    clock: dict


def ordered(first: Launch, second: Launch) -> bool:
    """Whether ``first`` is guaranteed to finish before ``second`` starts."""
    return second.clock.get(first.stream, 0) >= first.seq


class TracedEvent:
    """A CUDA event that tells the trace where it is recorded and waited for."""

    def __init__(self, event, trace):
        self._event = event
        self._trace = trace
        self.clock = None  # what it orders after, once recorded

    def record(self, stream=0):
        self._trace.event_recorded(self, stream)
        self._event.record(stream)

    def wait(self, stream=0):
        self._trace.event_waited(self, stream)
        self._event.wait(stream)

    def synchronize(self):
        self._trace.host_waited(self.clock or {})
        self._event.synchronize()

    def __getattr__(self, name):
        return getattr(self._event, name)


def is_default_stream(stream) -> bool:
    """0, None, or a handle of the default stream (0, legacy 1, per-thread 2): the default stream."""
    if stream is None or isinstance(stream, int):
        return True
    handle = getattr(stream, "handle", None)  # the simulator's streams have none
    try:
        return handle is not None and int(getattr(handle, "value", handle) or 0) in (0, 1, 2)
    except (TypeError, ValueError):
        return False


def join(*clocks) -> dict:
    """The clock that has counted everything any of ``clocks`` has."""
    joined = {}
    for clock in clocks:
        for stream, seq in clock.items():
            joined[stream] = max(joined.get(stream, 0), seq)
    return joined
