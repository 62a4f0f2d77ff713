"""What every step shares: the step interface, validation, upload, poisoned outputs, timing.

A step is a class with two methods of its own:

- ``setup(params, cfg, **options)``: everything done once, before the clock starts (upload the
  weights, change their layout, allocate scratch buffers). Returns a state object.
- ``run(state, x, out)``: the forward pass itself, nothing but kernel launches. ``x`` is the
  input on the device, time-major (seq_len, batch, input); ``out`` receives the last layer's h,
  (seq_len, batch, hidden). Work may use several streams, but must be ordered before anything
  queued afterwards on the default stream, so one pair of CUDA events times it all.

``runner()`` binds a step to one input and one set of weights; the harness checks and times
the ``Runner``. A step that computes elsewhere (Keras' own LSTM, ``keras_lstm.py``) overrides
``runner()`` and returns a Runner subclass with its own clock; nothing else needs to know.

What the harness checks a step against is the step's too: ``reference`` (the float64 forward
pass), ``Runner.error`` (``relative_error``), ``rtol`` (``tolerance``: wider under the "tf32" GEMM
policy) and ``flop`` (the forward's GEMM FLOPs).
A step that computes something else, a backward pass (``fastlstm_lib/backward``), overrides them
and is checked and timed by the same ``fl.bench``.

Later steps subclass earlier ones and override only what their optimization changes, so the
difference between two steps is the difference between two classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from ..config import LSTMConfig, flops
from ..runtime.device import DEVICE, device_info
from ..runtime.graphs import PassGraph, checked_graph
from ..params import validate_input
from ..numerics import RTOL, relative_error
from ..reference import reference_forward
from ..replay import recording
from ..runtime.nvtx import nvtx_range
from ..timing import issue_and_run_times, time_launches
from .gemm_policy import checked_policy

#: (warmup, repeats) on real hardware: a GPU, or the CPU that Keras runs on beside the simulator.
REAL_REPEATS = (3, 20)
#: On the simulator a run takes seconds and times mean nothing: just enough to exercise the path.
SIMULATOR_REPEATS = (0, 2)


def time_major(x: np.ndarray) -> np.ndarray:
    """(batch, seq_len, features) -> contiguous (seq_len, batch, features): one step's batch is
    then one contiguous (batch, features) matrix, the operand of that step's GEMM."""
    return np.ascontiguousarray(x.transpose(1, 0, 2))


def poisoned(shape, stream=0):
    """A device array full of NaN (``DEVICE.poison``): any element a kernel forgets to write shows up in the check."""
    return cuda.to_device(np.full(shape, DEVICE.poison, dtype=np.float32), stream=stream)


def reject_options(step, options) -> None:
    """For steps that take no options: a TypeError naming the ones given."""
    if options:
        raise TypeError(f"step {step.name!r} takes no options, got {sorted(options)}")


class Runner:
    """One step bound to one input and one set of weights, on the device, ready to launch.

    ``launch()`` queues the forward pass (asynchronous on a GPU); ``result()`` waits for it and
    returns (batch, seq_len, hidden) float32 on the host; ``time()`` times repeated launches.

    Every ``launch()`` runs the step's own code: what the learner reads is what runs. Asked for
    ``replay=True``, the first runs it and records what it queues, and later ones replay that
    record (``replay.py``): the same launches, without the Python that chose them, so the host pays
    only numba-cuda's own cost per launch (what the GPU run and the lessons on host cost time; a
    step whose passes differ from one another sets ``LSTMStep.replayable = False`` and cannot be
    replayed). With ``graph=True`` (a GPU only) the record is captured into a CUDA Graph right after
    the first pass, and every later pass is one graph launch (``graphs.py``). ``set_input(x)`` puts
    a new input into the bound x between passes.
    """

    #: How ``time()`` measures, recorded with every result.
    timing = DEVICE.timing
    #: Whether those times say anything about the hardware.
    times_meaningful = DEVICE.timed

    def __init__(self, step: "LSTMStep", cfg: LSTMConfig, state: Any, x_device, out_device, graph: bool = False,
                 replay: bool = False):
        self.step = step
        self.cfg = cfg
        self.state = state
        self.x = x_device
        self.out = out_device
        self.replay = None  # the first pass, recorded (replay.Replay), once launched
        #: Replay the first pass's launches instead of running the step's code again (see above).
        self.replay_passes = replay or graph
        self.use_graph = graph  # capture the recorded pass into a CUDA Graph (graphs.py)
        self.graph = None

    def default_repeats(self) -> tuple[int, int]:
        """(warmup, repeats) when the caller does not say."""
        return REAL_REPEATS if self.times_meaningful else SIMULATOR_REPEATS

    def poison(self) -> None:
        self.out.copy_to_device(np.full(self.out.shape, DEVICE.poison, dtype=np.float32))

    def launch(self) -> None:
        with nvtx_range(f"{self.step.name} pass"):  # what Nsight Systems shows each pass as (nvtx.py)
            self._launch()

    def _launch(self) -> None:
        if self.graph is not None:
            self.graph.launch()
        elif self.replay is not None:
            self.replay()
        elif self.replay_passes:
            with recording() as rec:  # the first pass runs for real and is written down
                self.step.run(self.state, self.x, self.out)
            self.replay = rec.replay()
            self.replay_passes = self.replay is not None  # a pass that copies or waits runs its code every time
            if self.use_graph:
                if self.replay is None:
                    raise RuntimeError(f"step {self.step.name!r}: graph=True, but its pass copies between host and "
                                       "device or synchronises, which a CUDA Graph cannot capture")
                self.graph = PassGraph(self.replay)
        else:
            self.step.run(self.state, self.x, self.out)

    def set_input(self, x: np.ndarray) -> None:
        """Copy a new input (batch, seq_len, input) into the bound x, for the next pass: what a
        replayed pass or a graph reads, since both keep the arrays they were recorded with."""
        expected = (self.cfg.batch, self.cfg.seq_len, self.cfg.input_size)
        if not isinstance(x, np.ndarray):
            raise TypeError(f"x must be a NumPy array of shape {expected}, got {type(x).__name__}")
        if x.shape != expected or not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"x must be a float array of shape {expected} (batch, seq_len, input), "
                             f"got {x.dtype} {x.shape}")
        self.x.copy_to_device(time_major(x.astype(np.float32, copy=False)))

    def time(self, warmup: int, repeats: int) -> list[float]:
        """Milliseconds per forward pass: CUDA events around each launch (after ``warmup``)."""
        return time_launches(self.launch, warmup=warmup, repeats=repeats)

    def time_issue_and_run(self, warmup: int, repeats: int) -> dict:
        """Per forward pass: the host's time to issue it, the GPU's (events) and the wall clock."""
        return issue_and_run_times(self.launch, warmup=warmup, repeats=repeats)

    def result(self) -> np.ndarray:
        cuda.synchronize()
        return np.ascontiguousarray(self.out.copy_to_host().transpose(1, 0, 2))

    def error(self, ref) -> float:
        """How far ``result()`` is from the step's reference (what the harness compares with rtol)."""
        return relative_error(self.result(), ref)


class LSTMStep:
    #: Registry name, e.g. "baseline".
    name: str = ""
    #: One line for tables and plots.
    title: str = ""
    #: What ``runner()`` returns.
    runner_class = Runner
    #: What the harness checks the result against: ``reference(x, params)``, float64.
    reference = staticmethod(reference_forward)
    #: The tolerance of that check (``Runner.error(ref) <= rtol``).
    rtol: float = RTOL
    #: Runs Numba CUDA kernels (so on the simulator where there is no GPU; see ``simulator_budget``).
    simulated: bool = True
    #: Every pass queues the same launches on the same arrays, so the runner may replay the first
    #: (``replay.py``); False for a step whose Python does something different from pass to pass.
    replayable: bool = True

    def flop(self, cfg: LSTMConfig, **options) -> int:
        """The FLOPs one run counts (GFLOP/s = flop / time): the forward pass's GEMMs."""
        return flops(cfg)

    def tolerance(self, **options) -> float:
        """The tolerance of the check of a pass run with ``options``: ``rtol``, or the GEMM policy's
        where that is wider (``gemm_policy.POLICIES``: "tf32" -> ``numerics.TOLERANCES["tf32"]``)."""
        return max(self.rtol, checked_policy(options.get("gemms")).rtol)

    def extra_inputs(self, cfg: LSTMConfig, seed: int = 0) -> dict:
        """What the step needs besides x and params, for the harness's shared problem (passed to
        both ``runner`` and ``reference``): nothing for a forward step; a backward step's ``dy``.
        Deterministic in ``cfg`` and ``seed``: the harness caches the reference by them."""
        return {}

    def device(self) -> dict:
        """Where it runs, recorded with every result."""
        return device_info()

    def setup(self, params, cfg: LSTMConfig, **options) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, state, x, out) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- shared by every step ---------------------------------------------------------------

    def runner(self, x: np.ndarray, params, graph: bool = False, replay: bool = False, **options) -> Runner:
        """Validate, set up and upload; nothing is launched yet. ``replay=True``: from the second pass
        on, replay the first's launches; ``graph=True``: launch each as one CUDA Graph (a GPU only;
        see ``Runner``)."""
        x, params, cfg = validate_input(x, params)
        if not isinstance(replay, bool):
            raise TypeError(f"replay must be True or False, got {type(replay).__name__} {replay!r}")
        for name, asked in (("graph", checked_graph(graph)), ("replay", replay)):
            if asked and not self.replayable:
                raise ValueError(f"{name}=True: step {self.name!r} is not replayable (its passes differ), "
                                 "so one recorded pass cannot stand for them")
        DEVICE.announce()
        state = self.setup(params, cfg, **options)
        x_device = cuda.to_device(time_major(x))
        out_device = poisoned((cfg.seq_len, cfg.batch, cfg.hidden))
        return self.runner_class(self, cfg, state, x_device, out_device, graph=graph, replay=replay)

    def forward(self, x: np.ndarray, params, **options) -> np.ndarray:
        """The last layer's h at every step, (batch, seq_len, hidden) float32."""
        runner = self.runner(x, params, **options)
        runner.launch()
        return runner.result()

    def __repr__(self) -> str:
        return f"<step {self.name!r}: {self.title}>"
