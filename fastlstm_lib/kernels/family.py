"""A kernel family read from its version files, as ``steps/registry`` reads a ladder from its step
files: a family is a package whose modules ``v<N>_<name>.py`` each hold one numbered version (its
kernel, its ``SPEC``, or ``SPECS`` where the version is several kernels, and its ``case(size, rng)``
for the runner), so adding a version is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

_VERSION_FILE = re.compile(r"v(\d+)_\w+")


def versions(package: str) -> tuple[ModuleType, ...]:
    """The version modules of family ``package``, by number; RuntimeError where a file's number
    and its ``SPEC.number`` differ, or two files share a number."""
    found = {}
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        match = _VERSION_FILE.fullmatch(info.name)
        if match is None:
            continue
        number, module = int(match[1]), importlib.import_module(f"{package}.{info.name}")
        if number in found or {spec.number for spec in specs((module,))} != {number}:
            raise RuntimeError(f"{package}.{info.name}: version {number} is taken or its specs say otherwise")
        found[number] = module
    return tuple(found[number] for number in sorted(found))


def specs(modules) -> tuple:
    """The specs of version ``modules``, in order: each one's ``SPEC``, or its ``SPECS``."""
    return tuple(spec for module in modules for spec in getattr(module, "SPECS", None) or (module.SPEC,))
