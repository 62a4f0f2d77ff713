"""What every exercise shares: the verdict, a mistake of the catalog, the grading loop, stubs.

Grading (``Exercise.judge``): a stub (a function of the candidate still raises
NotImplementedError) is "not attempted yet"; else each mistake of the catalog looks for its own
symptom in the evidence, stage by stage ("first": one run at odd sizes; "again": more probes,
runs back to back), and the first found is the verdict; else the kind's generic checks say where
it goes wrong; else it passed. ``time_limit`` stops a candidate that never returns.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import dataclasses
import inspect
import textwrap
import threading
from typing import Any, Callable


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
    """One typical mistake: ``title``, ``advice`` (its usual cause), and ``detect(evidence)``: where
    its symptom shows (a sentence) or None."""

    name: str
    title: str
    advice: str
    detect: Callable[[Any], str | None]
    stage: str = "first"


@dataclasses.dataclass(eq=False, kw_only=True)
class Exercise:
    """An exercise's record; its kind (``StepExercise``, ``KernelExercise``) runs a candidate."""

    name: str
    notebook: str  # the notebook that asks for it, "02"
    title: str  # what the learner writes
    difficulty: str  # "easy", "medium" or "hard"
    hints: tuple  # (a nudge, the idea, the code): fl.exercises.hint(name, level), one at a time
    catalog: tuple = ()  # the typical Mistakes, in the order they are looked for
    time_limit: float = 180.0  # seconds; the solutions take well under 20 s on the simulator
    picture: Callable | None = None  # picture(candidate, verdict): a Figure, for fl.exercises.draw

    def functions_of(self, candidate) -> list:
        """The candidate's own functions, searched for a stub."""
        return [candidate]

    def grade(self, candidate) -> Verdict:
        """The verdict on ``candidate``; an error in the learner's code, or a run longer than
        ``time_limit``, is a verdict too."""
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
        """The grading loop of the module docstring."""
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
    """'in run, line 12': the innermost frame of ``error`` in the learner's code, or None."""
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


class GradingTimeout(BaseException):
    """Raised in the grading thread when the time is up (a BaseException: ``except Exception`` lets it by)."""


class _Stopped(Exception):
    """Raised in the threads the candidate's run started (the simulator's GPU threads), quietly."""


def _raise_in(thread_id: int, exception) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


def _wake(thread) -> None:
    """Wake a simulator thread asleep at a barrier, so that the exception sent to it arrives (one left
    pending would slow every thread of the process)."""
    for event in ("syncthreads_event", "go"):  # numba's own simulator threads; ``schedule``'s
        if getattr(thread, event, None) is not None:
            if event == "syncthreads_event":
                thread.syncthreads_blocked = False
            getattr(thread, event).set()


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise ``GradingTimeout`` in the body after ``seconds``, and stop the threads it started.

    A watcher thread sends the exception with CPython's ``PyThreadState_SetAsyncExc``: to the grading
    thread every half second until the body ends, to the others once. It arrives at the next Python
    instruction: it stops a loop on the simulator, not a kernel looping on a real GPU."""
    grader = threading.get_ident()
    before = {thread.ident for thread in threading.enumerate()}
    done = threading.Event()
    lock = threading.Lock()
    fired = []
    stopped = set()

    def watch():
        if done.wait(seconds):
            return
        while True:
            with lock:
                if done.is_set():
                    return
                _raise_in(grader, GradingTimeout)  # again and again, in case the candidate swallows it
                fired.append(True)
                for thread in threading.enumerate():  # threads the candidate's run started: once each
                    if thread.ident not in before and thread is not watcher and thread.ident not in stopped:
                        stopped.add(thread.ident)
                        _raise_in(thread.ident, _Stopped)
                        _wake(thread)
            done.wait(0.5)

    watcher = threading.Thread(target=watch, name="grading time limit", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            done.set()
        watcher.join()
        if fired:  # one sent after the body ended arrives here, not in the caller's code
            try:
                for _ in range(1000):
                    pass
            except GradingTimeout:
                pass
