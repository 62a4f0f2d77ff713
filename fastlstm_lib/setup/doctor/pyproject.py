"""The course's exact pins for THIS platform, read from pyproject.toml with the standard library alone.

``pins()`` keeps the ``name==version`` requirements whose environment markers hold here
(``markers``): an Intel Mac gets its own NumPy, Numba and TensorFlow, macOS no numba-cuda. Python
3.11+ reads the file with ``tomllib``; an older Python (which the doctor must still tell that it is
too old) with a small reader of the shapes the course's file uses. Without pyproject.toml (an
installed package), the installed metadata's requirements, markers included.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import markers

ROOT = Path(__file__).resolve().parents[3]


def _without_comments(text: str) -> str:
    """pyproject.toml without its comments (a '#' outside quotes starts one)."""
    lines = []
    for line in text.splitlines():
        quote = None
        for i, char in enumerate(line):
            if quote:
                quote = None if char == quote else quote
            elif char in "\"'":
                quote = char
            elif char == "#":
                line = line[:i]
                break
        lines.append(line)
    return "\n".join(lines)


def _string_array(text: str, start: int) -> list[str]:
    """The strings of the TOML array whose '[' is at ``start``."""
    items, position = [], start + 1
    item = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)')\s*,?""")
    while True:
        match = item.match(text, position)
        if match is None:
            break
        items.append(match.group(1) if match.group(1) is not None else match.group(2))
        position = match.end()
    if not re.match(r"\s*\]", text[position:]):
        raise ValueError(f"pyproject.toml: cannot read the list at {text[start:start + 60]!r}")
    return items


def read_pyproject(text: str) -> dict:
    """[project]'s requires-python, dependencies and optional-dependencies: with tomllib (3.11+), else
    with ``read_without_tomllib``."""
    try:
        import tomllib
    except ImportError:
        return read_without_tomllib(text)
    project = tomllib.loads(text)["project"]
    return {"requires-python": project.get("requires-python", ""), "dependencies": project["dependencies"],
            "optional-dependencies": project.get("optional-dependencies", {})}


def read_without_tomllib(text: str) -> dict:
    """``read_pyproject`` for a Python older than 3.11: the only shapes the course's file uses there
    (``key = "string"``, ``key = [strings]``, comments), in [project] and [project.optional-dependencies]."""
    text = _without_comments(text)
    project = {"requires-python": "", "dependencies": [], "optional-dependencies": {}}
    sections = re.split(r"^\[([^\]]+)\]\s*$", text, flags=re.MULTILINE)
    for name, body in zip(sections[1::2], sections[2::2]):
        for key in re.finditer(r"^([A-Za-z0-9_-]+)\s*=\s*", body, flags=re.MULTILINE):
            value_start = key.end()
            if name == "project" and key.group(1) == "requires-python":
                project["requires-python"] = re.match(r"""["']([^"']*)""", body[value_start:]).group(1)
            elif name == "project" and key.group(1) == "dependencies":
                project["dependencies"] = _string_array(body, value_start)
            elif name == "project.optional-dependencies" and body[value_start:value_start + 1] == "[":
                project["optional-dependencies"][key.group(1)] = _string_array(body, value_start)
    return project


def pins(environment: dict | None = None) -> tuple[str, dict]:
    """(requires-python, {package: (version, group)}): the exact pins whose environment markers hold on
    ``environment`` (default: this machine; ``markers.this_machine(sys_platform="darwin")``: a Mac), from
    pyproject.toml, else from the installed package's metadata."""
    environment = markers.this_machine() if environment is None else environment
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():
        project = read_pyproject(pyproject.read_text(encoding="utf-8"))
        groups = {"core": project["dependencies"], **project["optional-dependencies"]}
        requirement_lists = [(group, requirement) for group, items in groups.items() for requirement in items]
        requires = project["requires-python"]
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
