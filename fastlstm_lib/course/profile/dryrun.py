"""A forward pass recorded instead of run: the dry run behind ``fl.profile``.

Inside ``dry_run()`` a step's own ``setup`` and ``run`` code runs unchanged, but:

- ``kernel[grid, block, stream, shared](*args)`` records the launch and launches nothing (the
  library's one recorder, ``replay.recording``, which intercepts Numba's kernel class through
  ``launches.intercept``, as ``fl.count_launches`` does, so every kernel of every step is seen; a
  ``count_launches`` inside the block counts what is recorded, one around it counts nothing);
- ``cuda.stream()`` and ``cuda.event()`` return stand-ins: an event's ``record(stream)`` and
  ``wait(stream)`` are recorded, in issue order, beside the launches;
- ``cuda.to_device(host)`` allocates an uninitialised device array of the same shape instead of
  uploading: no kernel runs, so no value is needed (on the simulator an untouched NumPy buffer
  costs no memory);
- the pass is laid out for one target (``runtime.target.laid_out_for``), the one value the
  kernels' launchers and plans read: with a ``chip`` (a ``gpus.Chip``), the GEMM blockings, the
  element-wise block size and the column sum's threads per column are a GPU's, and the chip's SM
  count picks between the GEMM blockings and the recurrent GEMM's parts of K, as ``gemm()`` and
  ``gemm.choose_splits`` do on it, and its compute capability what the GEMM policy may use (the
  "tf32" policy refuses a chip older than 8.0); and no kernel is compiled (on a GPU a persistent plan's
  ``launch`` compiles its kernel first).

Streams get numbers: 0 is the default stream, the others count up in creation order.
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

    def __repr__(self) -> str:
        return f"<dry-run stream {self.number}>"


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

    def __repr__(self) -> str:
        return f"<dry-run event {self.number}>"


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
