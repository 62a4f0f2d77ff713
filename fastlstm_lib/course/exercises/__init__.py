"""Exercises that grade themselves: ``fl.check(name, candidate)`` prints whether the learner's code
is right, and if not, where and which typical mistake it looks like; ``hint``, ``solution``,
``catalog``, ``draw`` and ``progress`` help along (TEACHING.md, "The exercises").

One module per exercise, ``exNN_<name>.py`` (NN: its notebook), holding its record ``EXERCISE``.
Importing this package loads NumPy and Numba only.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re

from .base import Exercise, Verdict

EXERCISE_MODULE = re.compile(r"ex(\d\d)_\w+")


@functools.lru_cache(maxsize=1)
def _registry() -> dict[str, Exercise]:
    modules = sorted(m.name for m in pkgutil.iter_modules(__path__) if EXERCISE_MODULE.fullmatch(m.name))
    exercises = {}
    for module in modules:
        exercise = importlib.import_module(f"{__name__}.{module}").EXERCISE
        exercises[exercise.name] = exercise
    return exercises


def names() -> list[str]:
    """Every exercise, in notebook order."""
    return list(_registry())


def get(name: str) -> Exercise:
    """The exercise called ``name``; a ValueError lists the names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"exercise name must be a str, got {type(name).__name__}")
    if name not in _registry():
        raise ValueError(f"unknown exercise {name!r}; exercises: {', '.join(names())}")
    return _registry()[name]


class _Solution:
    """The default candidate: the library's own solution (``fl.check(name)``)."""

    def __repr__(self) -> str:
        return "the library's solution"


SOLUTION = _Solution()


def grade(name: str, candidate=SOLUTION) -> Verdict:
    """The verdict on ``candidate`` (a step subclass or a kernel); left out: the library's solution."""
    exercise = get(name)
    if candidate is SOLUTION:
        verdict = exercise.grade(exercise.solution())
        verdict.text = verdict.text.replace(f"{name}: ", f"{name} (the library's own solution): ", 1)
        return verdict
    return exercise.grade(candidate)


def check(name: str, candidate=SOLUTION) -> None:
    """Print the verdict on ``candidate``; a pass of the learner's own code is kept for ``progress()``."""
    verdict = grade(name, candidate)
    if verdict.passed and candidate is not SOLUTION and candidate is not get(name).solution():
        from . import passes

        passes.record(name)
    print(verdict.text)


def draw(name: str, candidate=SOLUTION):
    """A matplotlib Figure of what ``candidate`` did, for an exercise with a picture (``global_index``)."""
    exercise = get(name)
    if exercise.picture is None:
        with_one = [n for n in names() if get(n).picture is not None]
        raise ValueError(f"exercise {name!r} has no picture; exercises with one: {', '.join(with_one)}")
    kernel = exercise.solution() if candidate is SOLUTION else candidate
    return exercise.picture(kernel, grade(name, candidate))


def progress() -> None:
    """Print every exercise in notebook order, passed (and when first) or not yet."""
    from . import passes

    print(passes.report([get(n) for n in names()]))


#: What each hint level gives, from the least to the most.
HINT_LEVELS = {1: "a nudge", 2: "the idea", 3: "the code"}


def hint(name: str, level: int = 1) -> None:
    """Print hint ``level`` (1 a nudge, 2 the idea, 3 the code) of exercise ``name``."""
    exercise = get(name)
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level must be an int, 1, 2 or 3, got {type(level).__name__} {level!r}")
    if level not in HINT_LEVELS:
        raise ValueError(f"level must be 1 (a nudge), 2 (the idea) or 3 (the code), got {level}")
    more = (f"more: fl.exercises.hint({name!r}, {level + 1})" if level < len(HINT_LEVELS) else
            f"still stuck: print(fl.exercises.solution({name!r}))")
    print(f"{name}, hint {level} of {len(HINT_LEVELS)} ({HINT_LEVELS[level]}):\n  {exercise.hints[level - 1]}\n  ({more})")


def solution(name: str) -> str:
    """The source of the exercise's solution (the library's own code)."""
    return get(name).solution_source()


def catalog(name: str) -> list[dict]:
    """The exercise's typical mistakes: name, what it is, and its usual cause."""
    return [{"name": m.name, "mistake": m.title, "usual cause": m.advice} for m in get(name).catalog]


__all__ = ["Exercise", "Verdict", "names", "get", "grade", "check", "solution", "catalog", "draw", "progress"]
