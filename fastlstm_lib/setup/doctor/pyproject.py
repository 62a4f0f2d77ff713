"""The course's exact pins for THIS platform, read from pyproject.toml with the standard library alone.

``pins()`` keeps the ``name==version`` requirements whose environment markers hold here
(``markers``): an Intel Mac gets its own NumPy, Numba and TensorFlow, macOS no numba-cuda. Python
3.11+ reads the file with ``tomllib``; an older Python has none, and gets no pins: the doctor tells
it that it is too old, and checks nothing against the pins there. Without pyproject.toml (an
installed package), the installed metadata's requirements, markers included.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import markers

ROOT = Path(__file__).resolve().parents[3]


def pins(environment: dict | None = None) -> tuple[str, dict]:
    """(requires-python, {package: (version, group)}): the exact pins whose environment markers hold on
    ``environment`` (default: this machine; ``markers.this_machine(sys_platform="darwin")``: a Mac), from
    pyproject.toml, else from the installed package's metadata; ("", {}) on a Python without tomllib
    (older than 3.11, which the doctor only tells that it is too old)."""
    environment = markers.this_machine() if environment is None else environment
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():
        try:
            import tomllib
        except ImportError:
            return "", {}
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        groups = {"core": project["dependencies"], **project.get("optional-dependencies", {})}
        requirement_lists = [(group, requirement) for group, items in groups.items() for requirement in items]
        requires = project.get("requires-python", "")
    else:
        from importlib import metadata

        requires = metadata.metadata("fastlstm_lib").get("Requires-Python", "")
        requirement_lists = []
        for line in metadata.requires("fastlstm_lib") or []:
            extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", line)
            requirement_lists.append((extra.group(1) if extra else "core", line))
    pinned = {}
    for group, line in requirement_lists:
        requirement, marker = markers.split(line)
        if not markers.evaluate(marker, {**environment, "extra": "" if group == "core" else group}):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==(\S+)", requirement)
        if match:
            pinned[match.group(1)] = (match.group(3), group)
    return requires, pinned
