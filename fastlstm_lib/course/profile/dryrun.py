"""A forward pass recorded instead of run: the dry run behind ``fl.profile``.

Inside ``dry_run()`` a step's own ``setup`` and ``run`` code runs unchanged, but:

- ``kernel[grid, block, stream, shared](*args)`` records the launch and launches nothing (it
  intercepts Numba's kernel class through ``launches.intercept``, as ``fl.count_launches`` does,
  so every kernel of every step is seen; a ``count_launches`` inside the block counts what is
  recorded, one around it counts nothing, since nothing is launched);
- ``cuda.stream()`` and ``cuda.event()`` return stand-ins: an event's ``record(stream)`` and
  ``wait(stream)`` are recorded, in issue order, beside the launches;
- ``cuda.to_device(host)`` allocates an uninitialised device array of the same shape instead of
  uploading: no kernel runs, so no value is needed (on the simulator an untouched NumPy buffer
  costs no memory);
- the persistent kernel is not compiled (on a GPU its ``launch`` compiles it first);
- with a ``chip`` (a ``gpus.Chip``), the GEMM blockings, the element-wise block size and the
  column sum's threads per column are a GPU's, and the chip's SM count picks between the GEMM
  blockings and the recurrent GEMM's parts of K, as ``gemm()`` and ``gemm.choose_splits`` do on it.

Streams get numbers: 0 is the default stream, the others count up in creation order.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
from numba import cuda

from ...launches import intercept, patched


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


class Recording:
    """What a dry run queued: launches and stream operations, in the order the host issued them."""

    def __init__(self):
        self.launches: list[LaunchCall] = []
        self.ops: list[StreamOp] = []
        self.streams = 1  # stream 0, the default stream, always exists
        self.events = 0
        self._other_streams: dict[int, int] = {}

    def stream_number(self, stream) -> int:
        if stream is None or (isinstance(stream, int) and stream == 0):
            return 0
        if isinstance(stream, DryStream):
            return stream.number
        # A stream created before the dry run: numbered on first sight, like any other.
        key = id(stream)
        if key not in self._other_streams:
            self._other_streams[key] = self.new_stream()
        return self._other_streams[key]

    def new_stream(self) -> int:
        self.streams += 1
        return self.streams - 1

    def new_event(self) -> int:
        self.events += 1
        return self.events - 1

    def launch(self, kernel, grid, block, stream, shared_bytes, args) -> None:
        number = self.stream_number(stream)
        self.ops.append(StreamOp("launch", number, len(self.launches)))
        self.launches.append(LaunchCall(kernel, grid, block, number, int(shared_bytes), tuple(args)))

    def event_op(self, kind: str, event: "DryEvent", stream) -> None:
        self.ops.append(StreamOp(kind, self.stream_number(stream), event.number))


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

    def query(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<dry-run event {self.number}>"


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


def gpu_geometry(chip) -> list[tuple]:
    """(module, name, value) patches giving a dry run the launch geometry of a GPU like ``chip``."""
    from ...kernels import gemm, geometry, reduce

    return [(gemm, "choose_blocking", lambda m, n, k: gemm.gpu_blocking(m, n, k, chip.sms)),
            (gemm, "choose_splits", lambda m, n, k: gemm.split_plan(m, n, k, chip.sms)[1]),
            (geometry, "POINTWISE_THREADS", geometry.GPU_POINTWISE_THREADS),
            (reduce, "ROW_THREADS", reduce.GPU_ROW_THREADS)]


@contextlib.contextmanager
def dry_run(chip=None):
    """``with dry_run() as recording:`` run a step's setup and run; nothing is launched."""
    from ...kernels import persistent

    recording = Recording()
    device_array = cuda.device_array

    def record_launch(kernel, configuration, configure):  # configure is not called: nothing launches
        grid, block, stream, shared = normalized_configuration(configuration)

        def launch(*args):
            recording.launch(kernel, grid, block, stream, shared, args)

        return launch

    def allocate_like(host, stream=0, copy=True, to=None):
        host = np.asarray(host)
        return to if to is not None else device_array(host.shape, dtype=host.dtype)

    patches = [(cuda, "stream", lambda: DryStream(recording)),
               (cuda, "event", lambda *args, **kwargs: DryEvent(recording)),
               (cuda, "to_device", allocate_like),
               (persistent, "prepared", lambda *args, **kwargs: None)]
    if chip is not None:
        patches += gpu_geometry(chip)
    with intercept(record_launch), patched(patches):
        yield recording


def default_stream_kind() -> str:
    """"legacy" (the default stream waits for every blocking stream and they for it) or
    "per-thread" (an ordinary stream), as Numba is configured."""
    from ...runtime.numba_compat import cuda_config

    config = cuda_config()  # numba-cuda's settings, or numba's own without it
    return "per-thread" if getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0) else "legacy"
