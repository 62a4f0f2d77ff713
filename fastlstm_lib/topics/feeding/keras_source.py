"""Quoting installed libraries: lines of their source and paragraphs of their docstrings.

Notebooks 30 and 31 show what Keras' enqueuer does, and what Keras' documentation says about
``predict()``, by quoting the installed Keras itself rather than paraphrasing it: the quote is
then exactly what the reader has installed.
"""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path


def quote_source(obj, first: str, last: str | None = None) -> str:
    """Lines of ``obj``'s source from the first line containing ``first`` through the next line
    containing ``last`` (or just that one line), headed by file name and line number: for
    quoting short pieces of installed libraries."""
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
    """The paragraph of ``obj``'s docstring (``inspect.getdoc``: inherited when ``obj`` has none
    of its own) that contains ``containing``, with its lines joined."""
    if not isinstance(containing, str) or not containing:
        raise TypeError("containing must be a non-empty string found in the docstring")
    doc = inspect.getdoc(obj)
    if not doc:
        raise ValueError(f"{getattr(obj, '__qualname__', obj)!r} has no docstring")
    for paragraph in doc.split("\n\n"):
        if containing in paragraph:
            return " ".join(paragraph.split())
    raise ValueError(f"{containing!r} is in no paragraph of the docstring of {getattr(obj, '__qualname__', obj)!r}")
