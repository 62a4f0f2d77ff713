"""A ladder of steps read from numbered module files: the registry that the forward steps
(``fl.steps``) and the backward steps (``fl.backward``) share.

A ladder is a package whose modules ``<prefix>NN_<name>.py`` each define one step class, a
subclass of the previous step's, and an instance of it called ``STEP``. The file names give the
order, so adding a step is adding a file. ``changes(name)`` prints what a step's class defines
itself: since every step overrides only what its idea changes, that *is* the difference
between two consecutive steps.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re


class Ladder:
    """The steps of one package, in file order, plus optional extra steps that are not rungs."""

    def __init__(self, package: str, prefix: str, *, extras=None, what: str = "step"):
        self.package = package
        self.module_pattern = re.compile(prefix + r"(\d\d)_\w+")
        self._extras = extras  # a function returning more steps (loaded on first use), or None
        self.what = what

    def modules(self) -> list[str]:
        """The ladder's module names, in order."""
        path = importlib.import_module(self.package).__path__
        return sorted(m.name for m in pkgutil.iter_modules(path) if self.module_pattern.fullmatch(m.name))

    @functools.cached_property
    def _steps(self) -> dict:
        steps = {}
        for module_name in self.modules():
            step = importlib.import_module(f"{self.package}.{module_name}").STEP
            steps[step.name] = step
        return steps

    @functools.cached_property
    def _extra_steps(self) -> dict:
        return {step.name: step for step in self._extras()} if self._extras else {}

    def names(self) -> list[str]:
        """Ordered names of the ladder's steps."""
        return list(self._steps)

    def extra_names(self) -> list[str]:
        """Names of the extra steps (timed by the same harness, not rungs of the ladder)."""
        return list(self._extra_steps)

    def get(self, name: str):
        """The step called ``name`` (a rung or an extra); a ValueError lists the names otherwise."""
        if not isinstance(name, str):
            raise TypeError(f"{self.what} name must be a str, got {type(name).__name__}")
        known = {**self._steps, **self._extra_steps}
        if name not in known:
            raise ValueError(f"unknown {self.what} {name!r}; known {self.what}s: {', '.join(known)}")
        return known[name]

    def previous(self, name: str):
        """The step before ``name`` in the ladder (None for the first)."""
        order = self.names()
        index = order.index(self.get(name).name)
        return self.get(order[index - 1]) if index > 0 else None

    def changes(self, name: str) -> str:
        """The source of what step ``name`` changes: the methods its class defines itself."""
        cls = type(self.get(name))
        where = inspect.getsourcefile(cls).rsplit("fastlstm_lib", 1)[-1]
        parts = [f"class {cls.__name__}({', '.join(base.__name__ for base in cls.__bases__)}):  # fastlstm_lib{where}"]
        parts += [inspect.getsource(value).rstrip() for value in cls.__dict__.values() if inspect.isfunction(value)]
        return "\n\n".join(parts)
