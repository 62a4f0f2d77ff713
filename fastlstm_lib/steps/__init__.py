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
    "step03_combined_gemms",
    "step04_streams",
    "step05_fused_pointwise",
    "step06_pretransposed",
    "step07_combined_inputs",
    "step08_wavefront",
    "step09_persistent",
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


def keras_names() -> list[str]:
    """Keras' own LSTM, three ways, timed by the same harness (notebook 10): not ladder steps."""
    from ..keras_steps import KERAS_STEPS

    return list(KERAS_STEPS)


def get(name: str) -> LSTMStep:
    """The step called ``name`` (a ladder step or a Keras one); a ValueError lists the names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"step name must be a str, got {type(name).__name__}")
    steps = _load()
    if name in steps:
        return steps[name]
    from ..keras_steps import KERAS_STEPS

    if name in KERAS_STEPS:
        return KERAS_STEPS[name]
    raise ValueError(f"unknown step {name!r}; known steps: {', '.join([*steps, *KERAS_STEPS])}")


def all_steps() -> list[LSTMStep]:
    return list(_load().values())


def previous(name: str) -> LSTMStep | None:
    """The step before ``name`` in the ladder (None for the first)."""
    order = names()
    index = order.index(get(name).name)
    return get(order[index - 1]) if index > 0 else None


def changes(name: str) -> str:
    """The source of what step ``name`` changes: the methods its class defines itself.

    Every step subclasses the one before and overrides only what its optimization changes, so
    these methods *are* the difference between two consecutive steps.
    """
    import inspect

    step = get(name)
    cls = type(step)
    parts = [f"class {cls.__name__}({', '.join(base.__name__ for base in cls.__bases__)}):  # fastlstm_lib{inspect.getsourcefile(cls).rsplit('fastlstm_lib', 1)[-1]}"]
    for attribute, value in cls.__dict__.items():
        if inspect.isfunction(value):
            parts.append(inspect.getsource(value).rstrip())
    return "\n\n".join(parts)


__all__ = ["LSTMStep", "Runner", "names", "keras_names", "get", "all_steps", "previous", "changes"]
