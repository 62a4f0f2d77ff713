"""CUDA Graphs: a runner's recorded pass (``replay.py``) captured into one graph, launched whole.

Replaying a pass removes our Python between launches, but numba-cuda's own dispatch stays (about
90 us a launch; the baseline makes 10,004 a pass). ``PassGraph(replay)`` issues the recorded pass
once more under CUDA stream capture, onto non-blocking streams forked from and joined back into
an origin stream, and instantiates the graph; ``launch()`` is then one ``cuGraphLaunch`` on the
default stream, ordered with the harness's events and copies. A graph reads and writes the same
device arrays every time (``Runner.set_input`` copies a new input in). The simulator has no graph
API: asking for one there is a ValueError.
"""

from __future__ import annotations

import contextlib
import weakref

from numba import cuda

from .device import DEVICE


def checked_graph(graph) -> bool:
    """The ``graph`` option: True or False (a TypeError otherwise); True only where graphs exist
    (a ValueError on the simulator)."""
    if not isinstance(graph, bool):
        raise TypeError(f"graph must be True or False, got {graph!r}")
    if graph and DEVICE.small:
        raise ValueError("graph=True needs a GPU: CUDA Graphs are captured and launched by the CUDA driver, and "
                         "Numba's CUDA simulator (running here) has no graph API; leave graph out here")
    return graph


def _driver():
    from numba.cuda.cudadrv.driver import binding, driver

    return driver, binding


def _capture_stream():
    """A new non-blocking stream (it never waits for the legacy default stream, nor it for it)."""
    driver, binding = _driver()
    handle = driver.cuStreamCreate(binding.CUstream_flags.CU_STREAM_NON_BLOCKING.value)
    stream = cuda.external_stream(int(handle))
    weakref.finalize(stream, driver.cuStreamDestroy, handle)
    return stream


def _is_default(stream) -> bool:
    """0, None, or a Stream object of the default stream (legacy or per-thread)."""
    return not stream or int(getattr(stream, "handle", 0) or 0) in (0, 1, 2)


def _launch_stream(configuration):
    return configuration[2] if isinstance(configuration, tuple) and len(configuration) > 2 else 0


class PassGraph:
    """One recorded pass, captured and instantiated. ``launch()`` runs the whole pass."""

    def __init__(self, replay):
        checked_graph(True)
        driver, binding = _driver()
        streams: dict = {}

        def mapped(stream):
            key = 0 if _is_default(stream) else id(stream)
            if key not in streams:
                streams[key] = _capture_stream()
            return streams[key]

        origin = mapped(0)
        for kind, _, how, _ in replay.ops:  # every stream of the pass, before any work is captured
            mapped(_launch_stream(how) if kind == "launch" else how)
        others = [stream for key, stream in streams.items() if key != 0]
        fork = cuda.event(timing=False)
        joins = [cuda.event(timing=False) for _ in others]
        recorded: set = set()  # events recorded so far in the capture
        driver.cuStreamBeginCapture(origin.handle, binding.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL)
        try:
            fork.record(origin)
            for stream in others:
                fork.wait(stream)
            for kind, target, how, args in replay.ops:
                if kind == "launch":
                    configuration = tuple(how[:2]) + (mapped(_launch_stream(how)),) + tuple(how[3:])
                    type(target).__getitem__(target, configuration)(*args)
                elif kind == "record":
                    target.record(mapped(how))
                    recorded.add(id(target))
                elif id(target) in recorded:
                    target.wait(mapped(how))
                # else: a wait on an event the previous pass recorded (the wavefront's lanes wait for
                # the last pass to be done with their buffers). A capture may not depend on work
                # outside it, and needs not: graph launches on one stream run one after another.
            for stream, join in zip(others, joins):
                join.record(stream)
                join.wait(origin)
        except BaseException:
            with contextlib.suppress(Exception):  # leave no capture behind; the first error is the one to see
                driver.cuStreamEndCapture(origin.handle)
            raise
        graph = driver.cuStreamEndCapture(origin.handle)
        try:
            self.handle = driver.cuGraphInstantiate(graph, 0)
        finally:
            driver.cuGraphDestroy(graph)  # the instantiated graph keeps what it needs
        weakref.finalize(self, driver.cuGraphExecDestroy, self.handle)
        self.launches = replay.launches
        self.streams = len(streams)
        self._launch = driver.cuGraphLaunch
        self._stream = cuda.default_stream().handle  # looked up once: a pass is then one driver call

    def launch(self) -> None:
        """The whole pass, one driver call, queued on the default stream."""
        self._launch(self.handle, self._stream)

    def __repr__(self) -> str:
        return f"<CUDA graph of {self.launches} launches on {self.streams} streams>"
