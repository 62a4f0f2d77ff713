"""A forward pass recorded instead of run: the dry run behind ``fl.profile``. The step's own code
runs; launches go to the library's one recorder (``replay.recording``), streams and events are
stand-ins whose operations are recorded, uploads only allocate, and the pass is laid out for one
chip (``runtime.target.laid_out_for``: its blockings, SM count and compute capability, which
the "tf32" GEMM policy needs at 8.0 or newer). Stream 0 is the default stream.
"""

from __future__ import annotations

import contextlib

import numpy as np
from numba import cuda

from ...launches import patched
from ...replay import Recording, recording
from ...runtime.target import laid_out_for


class DryStream:
    """Stands in for ``cuda.stream()`` during a dry run."""

    def __init__(self, recording: Recording):
        self.number = recording.new_stream()

    def synchronize(self) -> None:
        pass


class DryEvent:
    """Stands in for ``cuda.event()`` during a dry run: ``record`` and ``wait`` are recorded."""

    def __init__(self, recording: Recording):
        self.recording = recording
        self.number = recording.new_event()

    def record(self, stream=0) -> None:
        self.recording.event_op("record", self, stream)

    def wait(self, stream=0) -> None:
        self.recording.event_op("wait", self, stream)

    def synchronize(self) -> None:
        pass


@contextlib.contextmanager
def dry_run(chip=None):
    """``with dry_run() as recording:`` run a step's setup and run; nothing is launched (the
    library's one recorder, ``replay.recording``, with stand-ins for streams, events and uploads)."""
    device_array = cuda.device_array

    def allocate_like(host, stream=0, copy=True, to=None):
        host = np.asarray(host)
        return to if to is not None else device_array(host.shape, dtype=host.dtype)

    with recording(perform=False) as rec:
        patches = [(cuda, "stream", lambda: DryStream(rec)),
                   (cuda, "event", lambda *args, **kwargs: DryEvent(rec)),
                   (cuda, "to_device", allocate_like)]
        laid_out = () if chip is None else (chip.sms, chip.name, chip.capability)
        with patched(patches), laid_out_for(*laid_out):
            yield rec


def default_stream_kind() -> str:
    """"legacy" (the default stream waits for every blocking stream and they for it) or
    "per-thread" (an ordinary stream), as Numba is configured."""
    from ...runtime.numba_compat import cuda_config

    config = cuda_config()  # numba-cuda's settings, or numba's own without it
    return "per-thread" if getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0) else "legacy"
