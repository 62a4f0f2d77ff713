"""Exercises where the learner writes a method of a step subclass: how they are run and judged.

The candidate runs the whole forward pass at odd sizes, traced (``trace``). Stage "first": one
run (its error, trace findings, output against the reference, launches);
stage "again": a fresh runner launched twice back to back, as the benchmark's warm-up does.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections import Counter

import numpy as np

from ...config import LSTMConfig
from ...copies import fresh, frozen
from ...launches import count_launches
from ...harness import problem
from ...reference import reference_forward
from ...steps.base import LSTMStep
from . import locate
from .base import Exercise, first_line
from .trace import Trace, state_items

#: What each ordering mistake that the trace can point to usually is.
RACE_CAUSES = {
    "event_on_wrong_stream": "an event is waited for, but it was recorded on a stream other than the one that "
                             "did the work: record it on the writing stream, right after the work",
    "missing_wait": "an event is recorded after the work, but the other stream never waits for it: "
                    "event.wait(reading stream) before the launch that needs the result",
    "wait_on_wrong_stream": "the event is waited for on a stream other than the one that needs the result",
    "wait_before_record": "the wait comes before the event is recorded, so it waits for nothing (or for an "
                          "older record): record first, then wait",
    "streams_unordered": "no event links the two streams at all: record an event on the stream that must go "
                         "first and wait for it on the other",
}


@dataclasses.dataclass
class Run:
    """One traced runner of the candidate."""

    y: np.ndarray | None = None
    error: BaseException | None = None
    trace: Trace | None = None
    launches: Counter = dataclasses.field(default_factory=Counter)
    lower: np.ndarray | None = None  # layer 0's output, when the step keeps it (state.hidden_seq[0])
    host: list = dataclasses.field(default_factory=list)  # where the state keeps NumPy arrays (host memory)


def traced_run(step: LSTMStep, x, params, options: dict, launches: int) -> Run:
    """Set up ``step`` and launch it ``launches`` times back to back, traced."""
    run = Run()
    with Trace() as trace:
        run.trace = trace
        try:
            runner = step.runner(fresh(x), fresh(params), **fresh(options))  # every pass the learner's own code, traced
        except Exception as error:
            run.error = error
            return run
        # NumPy arrays in the state: host memory, which no kernel can read
        run.host = [path for path, item in state_items(runner.state, "state") if isinstance(item, np.ndarray)]
        if run.host:
            return run
        trace.name_things({"state": runner.state, "x": runner.x})
        trace.set_output(runner.out)
        trace.end_setup()
        try:
            with count_launches() as counted:
                for _ in range(launches):
                    trace.start_run()
                    runner.launch()
                    trace.end_run()
            run.y = runner.result()
            run.launches = counted
            hidden_seq = getattr(runner.state, "hidden_seq", None)
            if hidden_seq and tuple(hidden_seq[0].shape) == runner.out.shape:
                run.lower = np.ascontiguousarray(hidden_seq[0].copy_to_host().transpose(1, 0, 2))
        except Exception as error:
            run.error = error
    return run


class StepEvidence:
    def __init__(self, exercise: "StepExercise", step: LSTMStep):
        self.exercise = exercise
        self.step = step
        self.x, self.params, self.ref, self.ref_lower = exercise.problem()

    @functools.cached_property
    def first(self) -> Run:
        return traced_run(self.step, self.x, self.params, self.exercise.options, launches=1)

    @functools.cached_property
    def again(self) -> Run:
        return traced_run(self.step, self.x, self.params, self.exercise.options, launches=2)

    def run(self, stage: str) -> Run:
        return self.first if stage == "first" else self.again

    def not_attempted(self, stage: str) -> bool:
        return isinstance(self.run(stage).error, NotImplementedError)

    def wrong(self, stage: str = "first") -> str | None:
        run = self.run(stage)
        return None if run.y is None else locate.where_wrong(run.y, self.ref)


@dataclasses.dataclass(eq=False, kw_only=True)
class StepExercise(Exercise):
    """The learner writes ``methods`` of a subclass of the library's step ``step`` (the solution),
    judged at ``cfg``."""

    step: str
    methods: tuple
    cfg: LSTMConfig
    options: dict = dataclasses.field(default_factory=dict)

    def solution(self):
        from ... import steps

        return type(steps.get(self.step))

    def solution_source(self) -> str:
        cls = self.solution()
        parts = [f"# the solution: {cls.__name__}, fastlstm_lib/steps/{inspect.getsourcefile(cls).rsplit('/', 1)[-1]}"]
        parts += [inspect.getsource(getattr(cls, m)).rstrip() for m in self.methods]
        return "\n\n".join(parts)

    def functions_of(self, candidate) -> list:
        cls = candidate if isinstance(candidate, type) else type(candidate)
        return [v for v in vars(cls).values() if inspect.isfunction(v)]

    def check_kind(self, candidate) -> None:
        step_class = candidate if isinstance(candidate, type) else type(candidate)
        if not issubclass(step_class, LSTMStep):
            raise TypeError(f"{self.name}: expected a subclass of a fastlstm_lib step (e.g. "
                            f"{self.solution().__bases__[0].__name__}), got "
                            f"{candidate.__name__ if isinstance(candidate, type) else type(candidate).__name__}")

    def evidence(self, candidate):
        return StepEvidence(self, candidate() if isinstance(candidate, type) else candidate)  # the learner's __init__ runs here

    @functools.lru_cache(maxsize=None)  # one entry per exercise: they are module-level singletons
    def problem(self):
        """(x, params, the reference output, layer 0's), read-only: each run gets copies."""
        x, params, ref = problem(self.cfg, seed=0)  # the harness's: params from seed 0, x from seed 1
        return frozen((x, params, ref, reference_forward(x, params[:1])))

    @functools.lru_cache(maxsize=None)  # one entry per exercise: they are module-level singletons
    def solution_launches(self) -> Counter:
        x, params, _, _ = self.problem()
        with count_launches() as counted:
            self.solution()().forward(fresh(x), fresh(params), **self.options)
        return counted

    def generic(self, evidence: StepEvidence, stage: str) -> str | None:
        run = evidence.run(stage)
        again = "" if stage == "first" else "run twice back to back: "
        if run.host:
            return (f"{again}{', '.join(run.host[:3])}{' and more' if len(run.host) > 3 else ''} "
                    f"{'is a NumPy array' if len(run.host) == 1 else 'are NumPy arrays'} in host memory, where the "
                    "step keeps device arrays: create them with cuda.to_device(...) or cuda.device_array(...)")
        if run.error is not None:
            return f"{again}it raised {first_line(run.error)}"
        for kind in ("read_before_write", "race"):
            finding = run.trace.first(kind)
            if finding:
                return again + finding.text + (f" ({RACE_CAUSES[finding.cause]})" if finding.cause else "")
        finding = run.trace.first("unwritten_output")
        if finding:
            mask = np.zeros(run.y.size, dtype=bool)  # flat indices into the time-major (T, B, H) output
            mask[finding.elements] = True
            steps = mask.reshape(run.y.transpose(1, 0, 2).shape).transpose(1, 0, 2)
            return f"{again}no kernel wrote the output at {locate.spread(steps)}"
        wrong = evidence.wrong(stage)
        if wrong:
            if run.lower is None:
                return again + wrong
            lower = locate.where_wrong(run.lower, evidence.ref_lower)
            return again + wrong + ("; layer 0 is right, so it goes wrong in the layer above" if lower is None
                                    else f"; layer 0 too: {lower}")
        return None

    def passed_text(self, evidence: StepEvidence) -> str:
        cfg = self.cfg
        launches = sum(evidence.first.launches.values())
        options = "".join(f", {k}={v}" for k, v in sorted(self.options.items()))
        return (f"Right at odd sizes (batch {cfg.batch}, {cfg.seq_len} steps, input {cfg.input_size}, hidden "
                f"{cfg.hidden}, {cfg.layers} layer{'s' if cfg.layers > 1 else ''}{options}) with scratch and output poisoned "
                f"with NaN, every launch ordered across streams, right again when run twice back to back, and "
                f"{launches} launches per forward pass, like the solution.")
