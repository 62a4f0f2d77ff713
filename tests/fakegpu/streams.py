"""The driver's functions for streams, events and host callbacks, on the fake GPU.

Nothing runs, so every stream is always idle: a synchronize returns at once, a host callback is
called at once, and events take the fake's virtual clock (``store.FAKE_OPERATION_MS`` per
operation), so elapsed times are finite and ordered but measure nothing.
"""

from __future__ import annotations

import ctypes
from ctypes import c_float, c_int, c_uint, c_void_p

from .api import CONTEXT
from .graphs import captured_record, captured_wait, refuse_sync
from .registry import P, DriverError, entry, put


@entry("cuStreamCreate", P(c_void_p), c_uint)
def stream_create(state, out, flags, priority=0):
    handle = state.handle()
    state.streams.add(handle)
    if flags & 1:  # CU_STREAM_NON_BLOCKING: never waits for the legacy default stream, nor it for it
        state.non_blocking.add(handle)
    put(out, handle)
    state.log("stream_create", stream=handle)


entry("cuStreamCreateWithPriority", P(c_void_p), c_uint, c_int)(stream_create)


@entry("cuStreamDestroy", c_void_p)
def stream_destroy(state, stream):
    state.streams.discard(stream)


@entry("cuStreamSynchronize", c_void_p, aliases=("cuStreamQuery",))
def stream_synchronize(state, stream):
    refuse_sync(state, stream)
    state.log("stream_synchronize", stream=stream)


@entry("cuStreamGetCtx", c_void_p, P(c_void_p))
def stream_context(state, stream, out):
    put(out, CONTEXT)


@entry("cuStreamGetFlags", c_void_p, P(c_uint))
def stream_flags(state, stream, out):
    put(out, int(stream in state.non_blocking))


@entry("cuStreamGetPriority", c_void_p, P(c_int))
def stream_priority(state, stream, out):
    put(out, 0)


@entry("cuStreamWaitEvent", c_void_p, c_void_p, c_uint)
def stream_wait(state, stream, event, flags):
    if captured_wait(state, stream, event):
        return
    state.log("stream_wait_event", stream=stream, event=event)


STREAM_CALLBACK = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_void_p)
HOST_FUNCTION = ctypes.CFUNCTYPE(None, c_void_p)


@entry("cuStreamAddCallback", c_void_p, c_void_p, c_void_p, c_uint)
def stream_callback(state, stream, callback, data, flags):
    STREAM_CALLBACK(callback)(stream, 0, data)  # the stream is always idle: call it now


@entry("cuLaunchHostFunc", c_void_p, c_void_p, c_void_p)
def host_function(state, stream, function, data):
    HOST_FUNCTION(function)(data)


@entry("cuEventCreate", P(c_void_p), c_uint)
def event_create(state, out, flags):
    handle = state.handle()
    state.events[handle] = None
    put(out, handle)


@entry("cuEventDestroy", c_void_p)
def event_destroy(state, event):
    state.events.pop(event, None)


@entry("cuEventRecord", c_void_p, c_void_p)
def event_record(state, event, stream, flags=0):
    if captured_record(state, event, stream):
        return
    state.events[event] = state.clock_ms
    state.log("event_record", event=event, stream=stream)


entry("cuEventRecordWithFlags", c_void_p, c_void_p, c_uint)(event_record)


@entry("cuEventSynchronize", c_void_p, aliases=("cuEventQuery",))
def event_synchronize(state, event):
    if state.events.get(event, 0) is None:
        raise DriverError("CUDA_ERROR_INVALID_HANDLE", "an event that was never recorded")


@entry("cuEventElapsedTime", P(c_float), c_void_p, c_void_p, aliases=("cuEventElapsedTime_v2",))
def event_elapsed(state, out, start, end):
    if state.events.get(start) is None or state.events.get(end) is None:
        raise DriverError("CUDA_ERROR_INVALID_HANDLE", "elapsed time between events not both recorded")
    put(out, state.events[end] - state.events[start])
