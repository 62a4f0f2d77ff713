"""CUDA Graphs on the fake GPU: stream capture, instantiation and graph launches, with the rules a
driver enforces while a stream is being captured.

``cuStreamBeginCapture(stream)`` starts a capture on an ordinary stream (never the legacy default
stream). While it lasts, work queued on a capturing stream is not run but becomes a node of the
graph: launches (checked against the device's limits as they are queued, as a driver checks them
when the graph is instantiated), event records and waits. A stream that waits on an event recorded
in the capture joins it. What a driver refuses, the fake refuses too:

- any use of the legacy default stream while a blocking stream (created without
  CU_STREAM_NON_BLOCKING) is being captured: it would make that stream wait for it implicitly
  (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
- synchronising with a capturing stream, or the whole context (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
- a capturing stream waiting on an event recorded outside the capture
  (CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
- ending the capture from a stream other than the one that began it
  (CUDA_ERROR_STREAM_CAPTURE_UNMATCHED), or while a stream that joined it has work not joined
  back into the origin stream (CUDA_ERROR_STREAM_CAPTURE_UNJOINED).

``cuGraphLaunch`` logs each node's launch (api "cuGraphLaunch"), as a GPU would run them, so
``state.launches()`` counts the kernels a graph runs.
"""

from __future__ import annotations

import dataclasses
from ctypes import c_int, c_ulonglong, c_void_p

from .registry import P, DriverError, entry, put
from .store import FAKE_OPERATION_MS, Call

#: Stream handles that name the default stream: 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD.
DEFAULT_STREAMS = (None, 0, 1, 2)


@dataclasses.dataclass
class Capture:
    origin: int
    nodes: list = dataclasses.field(default_factory=list)  # ("launch", details) | ("record"/"wait", event)
    members: dict = dataclasses.field(default_factory=dict)  # stream -> joined back into the origin?
    events: dict = dataclasses.field(default_factory=dict)  # event -> (stream, node index) recorded in it


def capture_of(state, stream):
    """The capture ``stream`` belongs to, or None. Refuses the default stream during any capture."""
    captures = state.captures
    if not captures:
        return None
    if stream in DEFAULT_STREAMS:
        blocking = [s for c in captures.values() for s in (c.origin, *c.members) if s not in state.non_blocking]
        if blocking:
            raise DriverError("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "the legacy default stream was used while a "
                              "blocking stream (one that waits for it) is being captured")
        return None  # non-blocking capturing streams do not wait for it: the work is not captured
    for capture in captures.values():
        if stream == capture.origin or stream in capture.members:
            return capture
    return None


def captured_launch(state, stream, details: dict) -> bool:
    """True if the launch went into a graph being captured (then it does not run)."""
    capture = capture_of(state, stream)
    if capture is None:
        return False
    capture.nodes.append(("launch", details))
    if stream != capture.origin:
        capture.members[stream] = False
    return True


def captured_record(state, event, stream) -> bool:
    capture = capture_of(state, stream)
    if capture is None:
        return False
    capture.events[event] = (stream, len(capture.nodes))
    capture.nodes.append(("record", event))
    return True


def captured_wait(state, stream, event) -> bool:
    captures = state.captures
    capture = capture_of(state, stream)
    owner = next((c for c in captures.values() if event in c.events), None)
    if capture is None and owner is None:
        return False
    if owner is None:
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
                          "a capturing stream waited on an event recorded outside the capture")
    if capture is None:  # the stream joins the capture
        owner.members[stream] = False
        capture = owner
    recorded_on, _ = owner.events[event]
    if stream == capture.origin and recorded_on in capture.members:
        capture.members[recorded_on] = True  # joined back, until it queues more
    elif stream != capture.origin:
        capture.members[stream] = False
    capture.nodes.append(("wait", event))
    return True


def refuse_sync(state, stream=None) -> None:
    """Synchronising with a capturing stream (or the context, ``stream`` None) during a capture."""
    captures = state.captures
    if captures and (stream is None or any(stream == c.origin or stream in c.members for c in captures.values())):
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "synchronize while a stream is being captured")


@entry("cuStreamBeginCapture", c_void_p, c_int, aliases=("cuStreamBeginCapture_v2", "cuStreamBeginCapture_ptsz"))
def begin_capture(state, stream, mode):
    captures = state.captures
    if stream in DEFAULT_STREAMS:
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "capture cannot begin on the legacy default stream")
    if capture_of(state, stream) is not None:
        raise DriverError("CUDA_ERROR_ILLEGAL_STATE", "the stream is already being captured")
    captures[stream] = Capture(origin=stream)
    state.log("begin_capture", stream=stream, mode=mode)


@entry("cuStreamEndCapture", c_void_p, P(c_void_p))
def end_capture(state, stream, out):
    captures = state.captures
    capture = capture_of(state, stream)
    if capture is None:
        raise DriverError("CUDA_ERROR_ILLEGAL_STATE", "the stream is not being captured")
    if stream != capture.origin:
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture ended from a stream that did not begin it")
    del captures[capture.origin]
    unjoined = [member for member, joined in capture.members.items() if not joined]
    if unjoined:
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
                          f"{len(unjoined)} stream(s) that joined the capture were not joined back into its origin")
    handle = state.handle()
    state.graphs[handle] = capture.nodes
    put(out, handle)
    state.log("end_capture", stream=stream, nodes=len(capture.nodes),
              launches=sum(kind == "launch" for kind, _ in capture.nodes))


@entry("cuStreamIsCapturing", c_void_p, P(c_int))
def is_capturing(state, stream, out):
    put(out, int(capture_of(state, stream) is not None) if stream not in DEFAULT_STREAMS else int(bool(state.captures)))


@entry("cuGraphInstantiateWithFlags", P(c_void_p), c_void_p, c_ulonglong,
       aliases=("cuGraphInstantiate", "cuGraphInstantiate_v2"))
def instantiate(state, out, graph, flags):
    if graph not in state.graphs:
        raise DriverError("CUDA_ERROR_INVALID_VALUE", "not a graph")
    handle = state.handle()
    # What a launch of it logs, made once: the same records every launch (the log of a long run
    # stays small), in issue order, each launch as the kernel launch a GPU runs.
    state.execs[handle] = [Call("launch", {**details, "api": "cuGraphLaunch", "stream": "graph"})
                           for kind, details in state.graphs[graph] if kind == "launch"]
    put(out, handle)
    state.log("graph_instantiate", launches=len(state.execs[handle]))


@entry("cuGraphLaunch", c_void_p, c_void_p, aliases=("cuGraphLaunch_ptsz",))
def graph_launch(state, graph_exec, stream):
    if graph_exec not in state.execs:
        raise DriverError("CUDA_ERROR_INVALID_VALUE", "not an instantiated graph")
    if capture_of(state, stream) is not None:
        raise DriverError("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "graph launched into a capture")
    launches = state.execs[graph_exec]
    state.log("graph_launch", stream=stream, launches=len(launches))
    state.clock_ms += FAKE_OPERATION_MS * len(launches)
    if state.record:
        state.calls.extend(launches)


@entry("cuGraphDestroy", c_void_p)
def graph_destroy(state, graph):
    state.graphs.pop(graph, None)


@entry("cuGraphExecDestroy", c_void_p)
def graph_exec_destroy(state, graph_exec):
    state.execs.pop(graph_exec, None)
