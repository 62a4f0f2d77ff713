"""The trace's launches and streams: the default stream's name, and how to tell it. The order
streams and events impose is the course's one model of CUDA stream ordering,
``profile/graph.Order`` (CUDA's rules for ordinary, blocking streams and the legacy default
stream; a host synchronisation orders everything before it before everything after).
"""

from __future__ import annotations

import dataclasses

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
