"""What every exercise shares: the verdict, a mistake of the catalog, the grading loop, stubs.

An ``Exercise`` is a record: its name, notebook, title, hints and catalog of typical
``Mistake``s. Its kind knows the solution (the library's own code) and how to run a candidate and
gather ``evidence`` about it: ``StepExercise`` for a method of a step subclass, ``KernelExercise``
for a kernel. Each ``exNN_<name>.py`` holds one record and the detectors its catalog needs. Grading:

1. a stub (a function of the candidate still raises NotImplementedError) is "not attempted yet";
2. every mistake of the catalog looks for its own symptom in the evidence, in catalog order
   (those needing only the first stage of evidence, "first": one run at odd sizes, before those
   needing more, "again": more probes, runs back to back); the first one found is the verdict,
   with where it showed and what usually causes it. Evidence is gathered when first asked for;
3. if none is found but something is still wrong, the exercise's generic checks say where,
   stage by stage;
4. otherwise: passed.

(tests/planting.py plants each mistake in the solution on purpose, so that the tests show that
each is recognised by its own symptom.)
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from typing import Any, Callable

from .watchdog import GradingTimeout, time_limit

STAGES = ("first", "again")


@dataclasses.dataclass
class Verdict:
    """The outcome of ``grade``: ``status`` is "passed", "failed" or "not attempted"."""

    exercise: str
    status: str
    text: str
    mistake: str | None = None  # the catalog's name for what went wrong ("generic" if none fits)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __str__(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True)
class Mistake:
    """One typical mistake: what it is (``title``), what to do (``advice``), how it shows
    (``symptom``, in words, for ``catalog``), and ``detect(evidence)``: where the symptom shows (a
    sentence) or None. ``stage``: the stage of evidence it needs (see the module docstring)."""

    name: str
    title: str
    advice: str
    symptom: str
    detect: Callable[[Any], str | None]
    stage: str = "first"


@dataclasses.dataclass(eq=False, kw_only=True)
class Exercise:
    """An exercise's record: what the learner reads (``title``, ``hints``) and what grades them
    (``catalog``). Its kind (``StepExercise``, ``KernelExercise``) adds how a candidate is run; see
    the module docstring for the grading loop. Compared and hashed by identity: one per exercise."""

    name: str
    notebook: str  # the notebook that asks for it, "02"
    title: str  # what the learner writes
    difficulty: str  # "easy", "medium" or "hard"
    hints: tuple  # (a nudge, the idea, the code): fl.exercises.hint(name, level), one at a time
    catalog: tuple = ()  # the typical Mistakes, in the order they are looked for
    #: Seconds a candidate's grading may take before it is stopped and judged "did not finish"
    #: (the library's solutions take well under 20 s each on a 2-core machine's simulator).
    time_limit: float = 180.0
    #: ``picture(candidate, verdict)``: a matplotlib Figure of what the candidate did (which thread
    #: wrote where), for ``fl.exercises.draw``; None where the exercise has none.
    picture: Callable | None = None

    def __post_init__(self) -> None:
        if self.difficulty not in ("easy", "medium", "hard") or len(self.hints) != 3:
            raise ValueError(f"exercise {self.name!r}: difficulty must be easy, medium or hard and there must be "
                             f"3 hints, got {self.difficulty!r} and {len(self.hints)}")

    # What a kind provides: solution(), solution_source(), evidence(candidate), generic(evidence,
    # stage), passed_text(evidence), check_kind(candidate), and functions_of(candidate).

    def functions_of(self, candidate) -> list:
        """The candidate's own functions, searched for a stub."""
        return [candidate]

    def grade(self, candidate) -> Verdict:
        """The verdict on ``candidate`` (None: nothing to grade, "not attempted"; the solution is
        graded by passing ``self.solution()``). Every candidate gets one: an error raised anywhere in
        the learner's code (its constructor included) is reported as theirs, and a run that does not
        finish within ``time_limit`` seconds is stopped and judged."""
        if candidate is None:
            return self.not_attempted("nothing was given to grade (None)")
        self.check_kind(candidate)
        if any(is_stub(f) for f in self.functions_of(candidate)):
            return self.not_attempted()
        try:
            with time_limit(self.time_limit):
                return self.judge(candidate)
        except GradingTimeout:
            return self.failed("it did not finish", f"still running after {self.time_limit:g} s, so it was stopped",
                               TIMEOUT_ADVICE, "timeout")
        except Exception as error:
            where = learner_frame(error)
            if where is None:
                raise  # not the learner's code: a bug of the grader, shown as one
            return self.failed("your code raised an error", f"it raised {first_line(error)} ({where})",
                               RAISED_ADVICE, "raised")

    def judge(self, candidate) -> Verdict:
        """The grading loop of the module docstring (under ``grade``'s time limit)."""
        evidence = self.evidence(candidate)
        for mistake in sorted(self.catalog, key=lambda m: STAGES.index(m.stage)):
            if evidence.not_attempted(mistake.stage):
                return self.not_attempted()
            where = mistake.detect(evidence)
            if where:
                return self.failed(mistake.title, where, mistake.advice, mistake.name)
        for stage in STAGES:
            if evidence.not_attempted(stage):
                return self.not_attempted()
            problem = self.generic(evidence, stage)
            if problem:
                return self.failed("the result is wrong", problem, GENERIC_ADVICE, "generic")
        return Verdict(self.name, "passed", f"{self.name}: passed. {self.passed_text(evidence)}")

    def not_attempted(self, why: str = "the stub still raises NotImplementedError") -> Verdict:
        return Verdict(self.name, "not attempted",
                       f"{self.name}: not attempted yet ({why}).\n"
                       f"  to do: {self.title}\n"
                       f"  stuck? fl.exercises.hint(\"{self.name}\", 1) gives a nudge, 2 the idea, 3 the code")

    def failed(self, title: str, where: str, advice: str, mistake: str) -> Verdict:
        return Verdict(self.name, "failed",
                       f"{self.name}: not right yet: {title}.\n  where: {where}\n  usual cause: {advice}", mistake)


TIMEOUT_ADVICE = ("a loop that never ends: a while whose condition never changes, an index that never "
                  "advances, or a barrier (cuda.syncthreads, grid.sync) that not every thread reaches")
RAISED_ADVICE = ("the error comes from your code (the line named); read its message, and check the names, "
                 "shapes and types your code uses against the step it builds on")
GENERIC_ADVICE = ("none of the typical mistakes of this exercise fits; compare your code with the step "
                  "it builds on line by line, and check the indices where the output first goes wrong")


def is_stub(function) -> bool:
    """True when ``function``'s source raises NotImplementedError (the exercise's stub)."""
    function = getattr(function, "py_func", function)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False  # no source to read (a function made by exec): judge it by running it
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                return True
    return False


def learner_frame(error: BaseException) -> str | None:
    """'in run, line 12 of <cell>': the innermost frame of ``error``'s traceback outside the library,
    Numba, NumPy and Python's own modules (the learner's code), or None if there is none."""
    import os
    import sysconfig

    library = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # fastlstm_lib/
    skip = [library, *{sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")}]
    found = None
    traceback = error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        filename = os.path.abspath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
        if not any(filename.startswith(path) for path in skip):
            found = f"in {code.co_name}, line {traceback.tb_lineno}"
        traceback = traceback.tb_next
    return found


def first_line(error: BaseException) -> str:
    """'IndexError: index 13 is out of bounds ...': the error's type and first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")

