"""What every backward step shares: its buffers, its run, its runner and its check.

A backward step is an ``LSTMStep`` (``steps/base.py``) like the forward ones, so the same tools
work on it: ``fl.bench`` checks and times it, ``fl.count_launches`` counts it, and every launch
happens inside ``run(state, x, out)``:

1. the forward pass, ``TrainingForward`` (notebook 08's wavefront keeping gates and c), which a
   backward step holds (``forward_step``) rather than inherits: its setup makes the state the
   backward adds to, its run writes what the backward reads. Unless the step was set up with
   ``timed="backward"``: then the forward runs once in ``runner()``, before the clock, and
   ``run`` is the backward pass alone;
2. ``run_backward``: what each step of the ladder implements, reading ``state.dy`` (the
   gradient of the loss with respect to the output) and writing ``state.dx`` and
   ``state.grads``.

The runner's ``result()`` is a ``TrainingResult`` (y, dx, grads); the harness compares every part
with ``reference_training`` (float64) and takes the worst relative error, with the tolerance
``BACKWARD_RTOL``.

State added to the forward's, per lane (layer): ``dz_seq`` (T, B, 4H), the gradient of every
step's gate pre-activations; ``dh_rec`` (B, H), dz_{t+1} U^T, the gradient reaching h_t through
the recurrence; ``dc`` (B, H), the gradient reaching c_t from step t+1. Shared: ``dy``, ``dx``,
``grads`` (per layer kernel, recurrent, bias (1, 4H)), ``dh_seq`` (per layer below the top, the
gradient of its output: the layer above's dx), ``ones`` (1, T*B) and ``c_zero`` (c_{-1}),
``backward_done`` (an event: the buffers are free for the next run).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import cuda

from ..checks import check_choice
from ..config import LSTMConfig, flops
from ..params import LayerParams, validate_input
from ..runtime.device import DEVICE
from ..steps.base import LSTMStep, Runner, time_major
from ..steps.resources import ordering_event, scratch
from .reference import BACKWARD_RTOL, TrainingResult, output_gradient, reference_training, training_error, \
    validate_dy
from .training_forward import TrainingForward

#: What ``run`` does: forward and backward, or the backward alone (the forward runs in ``runner()``).
TIMED = ("forward+backward", "backward")


def backward_flops(cfg: LSTMConfig) -> int:
    """GEMM FLOPs of one backward pass, counted like ``fl.flops`` counts the forward's.

    Per layer: dx = dZ W^T and dW = X^T dZ over every step (2 * in * 4H * B * T each), dh = dZ U^T
    and dU = H^T dZ over every step but the first (2 * H * 4H * B * (T-1) each): about twice the
    forward's."""
    total = 0
    for layer in range(cfg.layers):
        inputs = cfg.input_size if layer == 0 else cfg.hidden
        total += 2 * (2 * inputs * 4 * cfg.hidden * cfg.batch * cfg.seq_len)
        total += 2 * (2 * cfg.hidden * 4 * cfg.hidden * cfg.batch * (cfg.seq_len - 1))
    return total


class TrainingRunner(Runner):
    """A backward step bound to x, the weights and dy. ``result()``: a ``TrainingResult``."""

    def poison(self) -> None:
        if self.state.timed == "forward+backward":
            super().poison()  # y too; with timed="backward" it was computed once, before
        for array in outputs(self.state):
            array.copy_to_device(np.full(array.shape, DEVICE.poison, dtype=np.float32))

    def result(self) -> TrainingResult:
        y = super().result()  # waits for the device
        dx = np.ascontiguousarray(self.state.dx.copy_to_host().transpose(1, 0, 2))
        grads = [LayerParams(g.kernel.copy_to_host(), g.recurrent.copy_to_host(), g.bias.copy_to_host().reshape(-1))
                 for g in self.state.grads]
        return TrainingResult(y, dx, grads)

    def error(self, ref: TrainingResult) -> float:
        return training_error(self.result(), ref)


def outputs(state) -> list:
    """The device arrays a backward pass writes: dx and every gradient."""
    return [state.dx] + [array for g in state.grads for array in (g.kernel, g.recurrent, g.bias)]


class BackwardStep(LSTMStep):
    """The buffers and the run shared by every backward step, around the forward pass that saves."""

    runner_class = TrainingRunner
    reference = staticmethod(reference_training)
    rtol = BACKWARD_RTOL
    #: The forward pass every backward step runs first and reads: held, not inherited.
    forward_step = TrainingForward()

    def flop(self, cfg: LSTMConfig, timed: str = "forward+backward", **options) -> int:
        return backward_flops(cfg) + (flops(cfg) if timed == "forward+backward" else 0)

    def setup(self, params, cfg, timed="forward+backward", **options):
        state = self.forward_step.setup(params, cfg, **options)
        state.timed = check_choice("timed", timed, TIMED)
        B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
        for lane in state.lanes:
            lane.dz_seq = scratch((T, B, 4 * H))
            lane.dh_rec = scratch((B, H))
            lane.dc = scratch((B, H))
        state.dy = scratch((T, B, H))
        state.dx = scratch((T, B, cfg.input_size))
        state.grads = [SimpleNamespace(kernel=scratch(layer.kernel.shape), recurrent=scratch((H, 4 * H)),
                                       bias=scratch((1, 4 * H))) for layer in params]
        state.dh_seq = scratch((T, B, H), cfg.layers - 1)
        state.ones = cuda.to_device(np.ones((1, T * B), dtype=np.float32))
        state.c_zero = cuda.to_device(np.zeros((B, H), dtype=np.float32))
        state.backward_done = ordering_event()
        return state

    def run_forward(self, state, x, out) -> None:
        """The forward pass alone (``TrainingForward.run``), keeping what the backward reads."""
        self.forward_step.run(state, x, out)

    def run(self, state, x, out):
        for lane in state.lanes:  # the previous run's backward is done with the buffers
            state.backward_done.wait(lane.stream)
        if state.timed == "forward+backward":
            self.run_forward(state, x, out)
        for lane in state.lanes:  # the backward starts once every layer's forward is written
            lane.chunk_done[-1].wait(state.stream)
        self.run_backward(state, x, out)
        state.backward_done.record(state.stream)

    def run_backward(self, state, x, out) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- the public API ---------------------------------------------------------------------

    def extra_inputs(self, cfg: LSTMConfig, seed: int = 0) -> dict:
        """The output gradient the harness checks every backward step with."""
        return {"dy": output_gradient(cfg, seed=seed + 2)}

    def runner(self, x: np.ndarray, params, dy: np.ndarray | None = None, **options) -> TrainingRunner:
        """Validate, set up, upload x and dy (required: a TypeError if missing); nothing launched
        yet, except, with ``timed="backward"``, the forward pass that the backward reads."""
        dy = validate_dy(dy, validate_input(x, params)[2])  # before any work
        runner = super().runner(x, params, **options)
        runner.state.dy.copy_to_device(time_major(dy))
        if runner.state.timed == "backward":
            self.run_forward(runner.state, runner.x, runner.out)
        return runner

    def train(self, x: np.ndarray, params, dy: np.ndarray, **options) -> TrainingResult:
        """Forward and backward: ``TrainingResult(y, dx, grads)``, float32 (see ``reference_training``).
        Every output is poisoned with NaN first, so anything the kernels leave unwritten shows."""
        runner = self.runner(x, params, dy=dy, **options)
        runner.poison()
        runner.launch()
        return runner.result()

    def backward(self, x: np.ndarray, params, dy: np.ndarray, **options) -> tuple[np.ndarray, list[LayerParams]]:
        """``(dx, grads)`` as ``fl.reference_backward`` returns them, computed by this step's kernels."""
        return self.train(x, params, dy, **options)[1:]

    def forward(self, x: np.ndarray, params, **options) -> np.ndarray:
        """The forward output y, (batch, seq_len, hidden) float32 (computed by ``train``, whose
        backward half gets ``output_gradient``: y does not depend on it)."""
        return self.train(x, params, output_gradient(validate_input(x, params)[2]), **options).y
