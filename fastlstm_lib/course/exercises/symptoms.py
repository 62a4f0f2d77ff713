"""Symptoms the catalogs' mistakes are recognised by, shared by the exercises: each factory
returns ``detect(evidence) -> str | None``, where the symptom shows, or None.
"""

from __future__ import annotations

import numpy as np

from . import locate, mutants, schedule
from .base import first_line

# ---- kernels ------------------------------------------------------------------------------------


def past_edge(probe: str, output: str):
    """IndexError on the simulator; a write into the NaN padding (or NaN read from it) on a GPU."""

    def detect(evidence):
        result = evidence.probe(probe)
        if isinstance(result.error, IndexError):
            return f"{first_line(result.error)} (probe: {probe})"
        if any(output in o.overwritten for o in result.outcomes):
            return f"something was written past the edge of {output} (probe: {probe})"
        if not schedule.available() and result.error is None and not np.isfinite(result.outputs[output]).all() \
                and not result.order_dependent():  # on a GPU, a read past the edge reads the NaN padding
            return f"NaN read from past the edge of an input (probe: {probe}): {result.wrong(evidence.exercise)}"
        return None

    return detect


def order_dependent(probe: str):
    """The result changes with the order the threads of a block run in: a missing barrier."""

    def detect(evidence):
        result = evidence.probe(probe)
        if result.error is None and result.order_dependent():
            bad = [locate.wrong_mask(o.outputs[n], result.expected[n]).sum()
                   for o in result.outcomes for n in evidence.exercise.outputs]
            return (f"probe {probe}: run with the threads of each block one at a time, it gives a different "
                    f"result in ascending and in descending order ({' and '.join(str(b) for b in bad)} wrong "
                    "elements)")
        return None

    return detect


def equals(probe: str, output: str, wrong_formula, what: str):
    """The output equals ``wrong_formula(inputs)`` (what a typical mistake computes) instead of the right one."""

    def detect(evidence):
        result = evidence.probe(probe)
        if result.error is not None:
            return None
        alternative = wrong_formula(result.inputs)
        if locate.where_wrong(result.outputs[output], alternative, evidence.exercise.outputs[output]) is None:
            return f"{output} equals {what}: {result.wrong(evidence.exercise)}"
        return None

    return detect


def written_only(probe: str, output: str, which):
    """Part of ``output`` is written, the rest stays NaN: the part ``which(written)`` accepts (``written``,
    a bool array of the output's shape)."""

    def detect(evidence):
        result = evidence.probe(probe)
        if result.error is not None:
            return None
        written = ~np.isnan(result.outputs[output])
        if written.all() or not which(written):
            return None
        n = int(written.sum())
        first = f"the first {n} elements, " if written.ravel()[:n].all() else ""
        return (f"{output} is written only at {first}{locate.spread(written, evidence.exercise.outputs[output])}; the "
                f"other {written.size - n} elements never are (probe: {probe})")

    return detect


def first(n: int):
    """``written_only``'s test: exactly the first ``n`` elements are written, in row-major order."""
    return lambda written: written.ravel()[:n].all() and not written.ravel()[n:].any()


def cell_variant(probe: str, name: str, compute):
    """The kernel's outputs equal the cell with mistake ``name`` planted (``mutants``); "gate_order": the
    gate blocks read in any other order (any of 23)."""

    def detect(evidence):
        result = evidence.probe(probe)
        if result.error is not None or not all(np.isfinite(v).all() for v in result.outputs.values()):
            return None
        stacked = np.concatenate([result.outputs[n].ravel() for n in evidence.exercise.outputs])
        found = mutants.match(stacked, lambda variant: np.ravel(compute(result.inputs, variant)))
        if found and found.split()[0] == name:
            return (f"{result.wrong(evidence.exercise)}; the outputs equal those of a cell where "
                    f"{mutants.describe(found)}")
        return None

    return detect


# ---- steps --------------------------------------------------------------------------------------


def raised(error_type: str, contains: str = ""):
    """The first run raised an ``error_type`` whose message has ``contains`` in it."""

    def detect(evidence):
        error = evidence.first.error
        if error is not None and type(error).__name__ == error_type and contains in str(error):
            return f"it raised {first_line(error)}"
        return None

    return detect


def race(cause: str | None = None, buffer: str | None = None, overwrite: bool | None = None, stage: str = "first"):
    """A race in the trace, with this cause/buffer ("again": only when the first run was clean)."""

    def detect(evidence):
        if stage == "again" and (evidence.first.error or evidence.first.trace.findings or evidence.wrong()):
            return None
        run = evidence.run(stage)
        finding = run.trace.first("race") if run.trace else None
        if finding is None or (cause and finding.cause != cause):
            return None
        if buffer and not finding.buffer.startswith(buffer):
            return None
        if overwrite is not None and ("while it may still be read" in finding.text) != overwrite:
            return None
        return finding.text

    return detect


def read_before_write(buffer: str | None = None):
    """The first run read ``buffer`` (None: any) before any kernel of the run wrote it."""

    def detect(evidence):
        run = evidence.first
        finding = run.trace.first("read_before_write") if run.trace else None
        if finding and (buffer is None or finding.buffer.startswith(buffer)):
            return finding.text
        return None

    return detect


def more_launches():
    """The first run's output is right, but it takes more launches than the solution's."""

    def detect(evidence):
        run, solution = evidence.first, evidence.exercise.solution_launches()
        if run.error or run.y is None or evidence.wrong() or sum(run.launches.values()) <= sum(solution.values()):
            return None
        mine = ", ".join(f"{k} {n}" for k, n in sorted(run.launches.items()))
        theirs = ", ".join(f"{k} {n}" for k, n in sorted(solution.items()))
        return (f"the output is right, but it takes {sum(run.launches.values())} launches ({mine}) where the "
                f"solution takes {sum(solution.values())} ({theirs})")

    return detect
