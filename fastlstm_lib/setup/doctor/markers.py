"""Environment markers (PEP 508) of the course's pins, evaluated for THIS machine.

pyproject.toml pins some packages per platform (``"numba-cuda==0.30.4; sys_platform != 'darwin'"``).
``packaging`` evaluates them where it is importable (or pip's vendored copy of it, in any Python
with pip). The doctor must also run in a bare Python 3 with neither, so there a small fallback reads
the part of the grammar the pins use: ``and``, ``or``, parentheses, and ``==``/``!=`` between a
variable and a quoted string. Anything else raises ``ValueError`` naming the marker: a pin the
fallback cannot read must be noticed by whoever wrote it (tests/test_doctor.py reads every pin with
it), not skipped silently.
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys

_TOKEN = re.compile(r"""\s*('[^']*'|"[^"]*"|==|!=|[()]|[A-Za-z_]\w*)""")


def this_machine(**changes: str) -> dict:
    """The marker variables of this Python on this machine (``changes`` replace some: a fake Mac)."""
    environment = {
        "sys_platform": sys.platform, "platform_machine": platform.machine(),
        "platform_system": platform.system(), "os_name": os.name,
        "python_version": "{}.{}".format(*sys.version_info[:2]), "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name, "extra": "",
    }
    environment.update(changes)
    return environment


def marker_class():
    """``packaging``'s ``Marker`` (or pip's vendored one), None in a Python with neither."""
    for module in ("packaging.markers", "pip._vendor.packaging.markers"):
        try:
            return importlib.import_module(module).Marker
        except ImportError:
            continue
    return None


def fallback(marker: str, environment: dict) -> bool:
    """``marker`` evaluated without ``packaging``: ``==``/``!=`` between a variable of
    ``environment`` and a quoted string, joined by ``and``, ``or`` and parentheses."""
    text, python, position = marker.rstrip(), [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"unsupported environment marker {marker!r}: cannot read it from {text[position:]!r}")
        token, position = match.group(1), match.end()
        if token[0] in "'\"":
            token = repr(token[1:-1])
        elif token[0].isalpha() or token[0] == "_":
            if token not in ("and", "or") and token not in environment:
                raise ValueError(f"unsupported environment marker {marker!r}: {token!r}")
            token = token if token in ("and", "or") else repr(environment[token])
        python.append(token)
    try:  # only strings, ==, !=, and, or and parentheses are left: Python reads them as PEP 508 does
        return bool(eval(" ".join(python), {"__builtins__": {}}))  # noqa: S307
    except SyntaxError:
        raise ValueError(f"unsupported environment marker {marker!r}") from None


def evaluate(marker: str, environment: dict | None = None) -> bool:
    """Whether ``marker`` holds on ``environment`` (default: this machine, ``this_machine()``); an empty
    marker holds everywhere. ``ValueError`` for a marker that cannot be read."""
    environment = this_machine() if environment is None else environment
    if not marker.strip():
        return True
    marker_type = marker_class()
    return fallback(marker, environment) if marker_type is None else marker_type(marker).evaluate(environment)


def split(requirement: str) -> tuple[str, str]:
    """``"numba==0.68.1; sys_platform != 'darwin'"`` -> (``"numba==0.68.1"``, ``"sys_platform != 'darwin'"``)."""
    requirement_part, _, marker = requirement.partition(";")
    return requirement_part.strip(), marker.strip()
