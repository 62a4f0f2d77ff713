"""The optimization ladder: one module per step, in the order the course adds them.

    fl.steps.names()                       # ["baseline", ...]
    fl.steps.get("baseline").forward(x, params)

Each module ``stepNN_<name>.py`` (NN = the notebook that teaches it) defines one ``LSTMStep``
subclass and an instance of it called ``STEP``.
"""

from __future__ import annotations

import importlib

from ._base import LSTMStep, Runner

#: Step modules, in ladder order.
_MODULES = [
    "step02_baseline",
]


def _load():
    steps = {}
    for module_name in _MODULES:
        step = importlib.import_module(f"{__name__}.{module_name}").STEP
        steps[step.name] = step
    return steps


def names() -> list[str]:
    """Ordered step names, "baseline" first."""
    return list(_load())


def get(name: str) -> LSTMStep:
    """The step called ``name``; a ValueError lists the known names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"step name must be a str, got {type(name).__name__}")
    steps = _load()
    if name not in steps:
        raise ValueError(f"unknown step {name!r}; known steps: {', '.join(steps)}")
    return steps[name]


def all_steps() -> list[LSTMStep]:
    return list(_load().values())


__all__ = ["LSTMStep", "Runner", "names", "get", "all_steps"]
