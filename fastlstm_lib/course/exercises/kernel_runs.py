"""Exercises where the learner writes a kernel: how it is launched on probes and judged.

Each probe (odd sizes, a tile edge, crafted values) sits inside buffers padded with NaN, outputs
start as NaN, and it runs twice: on the simulator with the threads of each block one at a time,
ascending then descending (``schedule``: a missing barrier gives two results); on a GPU, twice.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import numpy as np
from numba import cuda

from ...kernels.geometry import pointwise_grid
from . import locate, schedule
from .base import Exercise, first_line

#: Padding around every probe array, in elements along each axis.
PAD = 2


@dataclasses.dataclass(frozen=True)
class Probe:
    """``make()``: the host arrays (outputs' initial values too); ``flags``: scalar arguments."""

    name: str
    make: Callable[[], dict]
    stage: str = "first"
    flags: tuple = ()


def pointwise_launch(over: str, *arguments: str):
    """A ``launch`` with one thread per element of ``over``, as the library's point-wise kernels."""

    def launch(kernel, arrays: dict) -> None:
        blocks, threads = pointwise_grid(arrays[over].size)
        kernel[blocks, threads](*(arrays[name] for name in arguments))

    return launch


@dataclasses.dataclass
class Outcome:
    """One launch of one probe: outputs or the error, and which outputs' padding got written."""

    outputs: dict | None = None
    error: BaseException | None = None
    overwritten: tuple = ()


class ProbeResult:
    def __init__(self, exercise: "KernelExercise", kernel, probe: Probe):
        self.probe = probe
        self.inputs = probe.make()
        self.expected = exercise.expected(self.inputs)
        self.outcomes = [self._launch(exercise, kernel, order) for order in exercise.orders()]

    def _launch(self, exercise, kernel, order) -> Outcome:
        buffers = {}
        for name, array in self.inputs.items():  # each inside a device buffer with NaN all around
            big = np.full(tuple(n + PAD for n in array.shape), np.nan, dtype=array.dtype)
            inside = tuple(slice(0, n) for n in array.shape)
            big[inside] = array
            device = cuda.to_device(big)
            buffers[name] = (device, device[inside])
        views = {name: view for name, (_, view) in buffers.items()} | dict(self.probe.flags)
        try:
            if order is None:
                exercise.launch(kernel, views)
            else:
                with schedule.ordered_threads(order):
                    exercise.launch(kernel, views)
            cuda.synchronize()
        except Exception as error:
            return Outcome(error=error)
        outputs, overwritten = {}, []
        for name in exercise.outputs:
            whole = buffers[name][0].copy_to_host()
            inside = tuple(slice(0, n) for n in self.inputs[name].shape)
            outputs[name] = whole[inside].copy()
            whole[inside] = np.nan
            if np.isfinite(whole).any():
                overwritten.append(name)
        return Outcome(outputs, None, tuple(overwritten))

    @property
    def error(self) -> BaseException | None:
        return next((o.error for o in self.outcomes if o.error is not None), None)

    @property
    def outputs(self) -> dict:
        return self.outcomes[0].outputs

    def order_dependent(self) -> bool:
        """The outputs differ between the two runs (NaN counts as equal to NaN)."""
        first, second = self.outcomes[0].outputs, self.outcomes[1].outputs
        return any(not np.array_equal(first[n], second[n], equal_nan=True) for n in first)

    def wrong(self, exercise: "KernelExercise") -> str | None:
        for name in exercise.outputs:
            where = locate.where_wrong(self.outputs[name], self.expected[name], exercise.outputs[name])
            if where:
                return f"{name}: {where} (probe: {self.probe.name})"
        return None


class KernelEvidence:
    def __init__(self, exercise: "KernelExercise", kernel):
        self.exercise = exercise
        self.kernel = kernel
        self._results: dict[str, ProbeResult] = {}

    def probe(self, name: str) -> ProbeResult:
        """The probe called ``name``, run on first use."""
        if name not in self._results:
            probe = next(p for p in self.exercise.probes if p.name == name)
            self._results[name] = ProbeResult(self.exercise, self.kernel, probe)
        return self._results[name]

    def stage_probes(self, stage: str) -> list[ProbeResult]:
        return [self.probe(p.name) for p in self.exercise.probes if p.stage == stage]

    def not_attempted(self, stage: str) -> bool:
        return any(isinstance(r.error, NotImplementedError) for r in self.stage_probes(stage))


@dataclasses.dataclass(eq=False, kw_only=True)
class KernelExercise(Exercise):
    """The learner writes a kernel, launched on ``probes``; ``expected(inputs)`` gives each output
    in float64; ``listing``: the source shown instead of the kernel's (its factory)."""

    solution: Callable[[], Any]
    source: str
    launch: Callable[[Any, dict], None]
    expected: Callable[[dict], dict]
    outputs: dict
    probes: tuple
    listing: Callable | None = None

    def solution_source(self) -> str:
        shown = self.listing or self.solution().py_func
        return f"# the solution: {self.source}\n" + inspect.getsource(shown)

    def orders(self) -> tuple:
        return schedule.ORDERS if schedule.available() else (None, None)

    def check_kind(self, candidate) -> None:
        if not callable(candidate) or isinstance(candidate, type):
            raise TypeError(f"{self.name}: expected a kernel (a function, with or without @cuda.jit), "
                            f"got {type(candidate).__name__}")

    def evidence(self, candidate):
        kernel = candidate if hasattr(candidate, "py_func") else cuda.jit(candidate)
        return KernelEvidence(self, kernel)

    def generic(self, evidence: KernelEvidence, stage: str) -> str | None:
        for result in evidence.stage_probes(stage):
            if result.error is not None:
                return f"it raised {first_line(result.error)} (probe: {result.probe.name})"
            overwritten = next((o.overwritten for o in result.outcomes if o.overwritten), ())
            if overwritten:
                return f"it wrote past the edge of {', '.join(overwritten)} (probe: {result.probe.name})"
            if result.order_dependent():
                return (f"the result depends on the order the threads run in (probe: {result.probe.name}): a "
                        "thread reads what another has not written yet, or overwrites what another still reads")
            wrong = result.wrong(self)
            if wrong:
                return wrong
        return None

    def passed_text(self, evidence: KernelEvidence) -> str:
        names = ", ".join(p.name for p in self.probes)
        how = ("threads run one at a time in two orders" if schedule.available() else "run twice")
        return f"Right on every probe ({names}), outputs poisoned with NaN, nothing written past an edge, {how}."
