"""Quoting the installed Keras (its source lines, its docstrings) rather than paraphrasing it."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path


def quote_source(obj, first: str, last: str | None = None) -> str:
    """``obj``'s source from the line containing ``first`` to the next containing ``last``, headed by file and line."""
    if not isinstance(first, str) or (last is not None and not isinstance(last, str)):
        raise TypeError("first and last must be strings found in the source")
    lines, start_line = inspect.getsourcelines(obj)
    name = getattr(obj, "__qualname__", obj)
    begin = next((i for i, line in enumerate(lines) if first in line), None)
    if begin is None:
        raise ValueError(f"{first!r} is not in the source of {name!r}")
    end = begin if last is None else next((i for i in range(begin, len(lines)) if last in lines[i]), None)
    if end is None:
        raise ValueError(f"{last!r} does not follow {first!r} in the source of {name!r}")
    header = f"# {Path(inspect.getsourcefile(obj)).name}, line {start_line + begin}"
    body = inspect.cleandoc("".join(lines[begin:end + 1])) if begin == end else \
        textwrap.dedent("".join(lines[begin:end + 1])).rstrip()
    return header + "\n" + body


def docstring_paragraph(obj, containing: str) -> str:
    """The paragraph of ``inspect.getdoc(obj)`` that contains ``containing``, its lines joined."""
    if not isinstance(containing, str) or not containing:
        raise TypeError("containing must be a non-empty string found in the docstring")
    doc = inspect.getdoc(obj)
    if not doc:
        raise ValueError(f"{getattr(obj, '__qualname__', obj)!r} has no docstring")
    for paragraph in doc.split("\n\n"):
        if containing in paragraph:
            return " ".join(paragraph.split())
    raise ValueError(f"{containing!r} is in no paragraph of the docstring of {getattr(obj, '__qualname__', obj)!r}")
