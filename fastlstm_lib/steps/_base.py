"""What every optimization step shares: validation, upload, poisoned outputs, download.

A step is a class with two methods of its own:

- ``setup(params, cfg, **options)``: everything done once, before the clock starts (upload the
  weights, change their layout, allocate scratch buffers). Returns a state object.
- ``run(state, x, out)``: the forward pass itself, nothing but kernel launches. ``x`` is the
  input on the device, time-major (seq_len, batch, input); ``out`` receives the last layer's h,
  (seq_len, batch, hidden). Work may use several streams, but must be ordered before anything
  queued afterwards on the default stream, so one pair of CUDA events times it all.

Later steps subclass earlier ones and override only what their optimization changes, so the
difference between two steps is the difference between two classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from ..config import LSTMConfig
from ..device import device_info
from ..params import validate_input


def time_major(x: np.ndarray) -> np.ndarray:
    """(batch, seq_len, features) -> contiguous (seq_len, batch, features): one step's batch is
    then one contiguous (batch, features) matrix, the operand of that step's GEMM."""
    return np.ascontiguousarray(x.transpose(1, 0, 2))


def poisoned(shape, stream=0):
    """A device array full of NaN: any element a kernel forgets to write shows up in the check."""
    return cuda.to_device(np.full(shape, np.nan, dtype=np.float32), stream=stream)


class Runner:
    """One step bound to one input and one set of weights, on the device, ready to launch.

    ``launch()`` queues the forward pass (asynchronous on a GPU); ``result()`` waits for it and
    returns (batch, seq_len, hidden) float32 on the host. The harness times ``launch()``.
    """

    def __init__(self, step: "LSTMStep", cfg: LSTMConfig, state: Any, x_device, out_device):
        self.step = step
        self.cfg = cfg
        self.state = state
        self.x = x_device
        self.out = out_device

    def poison(self) -> None:
        self.out.copy_to_device(np.full(self.out.shape, np.nan, dtype=np.float32))

    def launch(self) -> None:
        self.step.run(self.state, self.x, self.out)

    def synchronize(self) -> None:
        cuda.synchronize()

    def result(self) -> np.ndarray:
        cuda.synchronize()
        return np.ascontiguousarray(self.out.copy_to_host().transpose(1, 0, 2))


class LSTMStep:
    #: Registry name, e.g. "baseline".
    name: str = ""
    #: One line for tables and plots.
    title: str = ""
    #: How the harness times it: "events" (CUDA events around Numba's streams). Keras' layer,
    #: which runs on its backend's own streams, says "wall" (keras_steps.py).
    clock: str = "events"

    def device(self) -> dict:
        """Where it runs, recorded with every result."""
        return device_info()

    def setup(self, params, cfg: LSTMConfig, **options) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, state, x, out) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- shared by every step ---------------------------------------------------------------

    def runner(self, x: np.ndarray, params, **options) -> Runner:
        """Validate, set up and upload; nothing is launched yet."""
        x, params, cfg = validate_input(x, params)
        state = self.setup(params, cfg, **options)
        x_device = cuda.to_device(time_major(x))
        out_device = poisoned((cfg.seq_len, cfg.batch, cfg.hidden))
        return Runner(self, cfg, state, x_device, out_device)

    def forward(self, x: np.ndarray, params, **options) -> np.ndarray:
        """The last layer's h at every step, (batch, seq_len, hidden) float32, computed on the device."""
        runner = self.runner(x, params, **options)
        runner.launch()
        return runner.result()

    def __repr__(self) -> str:
        return f"<step {self.name!r}: {self.title}>"
