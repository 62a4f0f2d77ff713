"""Exercises where the learner writes a plain Python function of integers, an index map such as
which element of a matrix a lane holds: it is called on every argument of the exercise's domain,
and each answer is compared with the library's.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
from typing import Any, Callable

from .base import Exercise


class FunctionEvidence:
    """The candidate's answer to every argument of the domain (in order), and the library's."""

    def __init__(self, exercise: "FunctionExercise", function):
        self.exercise = exercise
        self.attempted = True
        self.answers, self.expected = {}, {}
        for arguments in exercise.domain:
            try:
                self.answers[arguments] = function(*arguments)
            except NotImplementedError:  # a stub without source to read: is_stub could not see it
                self.attempted = False
                return
            self.expected[arguments] = exercise.expected(*arguments)

    def not_attempted(self, stage: str) -> bool:
        return not self.attempted

    def equals(self, answer_of: Callable) -> bool:
        """Every answer is ``answer_of(*arguments)``: the mistake's own table (outside the matrix, maybe)."""
        return self.attempted and all(isinstance(answer, (tuple, list)) and tuple(answer) == answer_of(*arguments)
                                      for arguments, answer in self.answers.items())


@dataclasses.dataclass(eq=False, kw_only=True)
class FunctionExercise(Exercise):
    """The learner writes a function ``solution().__name__``; ``domain``: its argument tuples;
    ``expected(*arguments)``: the right (row, col); ``shape``: the matrix the answers index;
    ``describe(arguments)``: the arguments as the text names them ("lane 5's a2")."""

    solution: Callable[[], Any]
    source: str
    domain: tuple
    expected: Callable
    shape: tuple
    describe: Callable

    def solution_source(self) -> str:
        return f"# the solution: {self.source}\n" + inspect.getsource(self.solution())

    def check_kind(self, candidate) -> None:
        if not callable(candidate) or isinstance(candidate, type) or hasattr(candidate, "py_func"):
            raise TypeError(f"{self.name}: expected a plain Python function (no @cuda.jit), "
                            f"got {type(candidate).__name__}")

    def evidence(self, candidate) -> FunctionEvidence:
        return FunctionEvidence(self, candidate)

    def bad_answer(self, answer) -> str | None:
        """Why ``answer`` is no (row, col) of the matrix, or None."""
        if not isinstance(answer, (tuple, list)) or len(answer) != 2 or not all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in answer):
            return f"returned {answer!r:.60}, not a (row, col) pair of ints"
        if not all(0 <= v < n for v, n in zip(answer, self.shape)):
            return f"returned {tuple(answer)}, outside the {self.shape[0]} x {self.shape[1]} matrix"
        return None

    def generic(self, evidence: FunctionEvidence, stage: str) -> str | None:
        held = {}
        for arguments, answer in evidence.answers.items():
            bad = self.bad_answer(answer)
            if bad:
                return f"{self.describe(arguments)}: {bad}"
            place = tuple(int(v) for v in answer)
            if place in held:
                return (f"{self.describe(held[place])} and {self.describe(arguments)} both return {place}: "
                        "each element is held by exactly one lane's register")
            held[place] = arguments
        for arguments, answer in evidence.answers.items():
            if tuple(answer) != evidence.expected[arguments]:
                return (f"{self.describe(arguments)}: returned {tuple(int(v) for v in answer)}, the PTX ISA's "
                        f"layout has {evidence.expected[arguments]}")
        return None

    def passed_text(self, evidence: FunctionEvidence) -> str:
        rows, cols = self.shape
        return (f"All {len(self.domain)} answers in the PTX ISA's places: each element of the {rows} x {cols} "
                "matrix held by exactly one lane's register.")
