"""Plain-text tables: the one place the library lines up columns.

Every table the library prints (the step ladder and its bounds, launch counts, the CNN epochs,
the CPU timings, the profiler's top functions, the doctor's findings, the command line's lines)
goes through ``table``: the columns said once, as (header, alignment, width, format spec), the
rows as lists of values, a string back. Deterministic and without a dependency: the notebooks
store these tables and nbval compares them byte for byte, so each caller gives the exact widths,
specs and separators its table has always had. Standard library only, so that the doctor can
print its findings with it before anything else is installed.

    >>> print(table([Column("step", "<", 6), Column("ms", ">", 7, ".2f")],
    ...             [["first", 12.345], ["second", Span("skipped: no GPU")]]))
    step        ms
    first    12.35
    second skipped: no GPU
"""

from __future__ import annotations

from typing import NamedTuple

ALIGNMENTS = ("<", ">", "^")  # left, right, centred: as in a format spec


class Column(NamedTuple):
    """One column. ``header``: its title. ``align``: "<" left, ">" right, "^" centred, for the
    header and every cell. ``width``: the characters a cell is padded to (a wider cell is never
    cut); None leaves cells unpadded, for a last column of free text. ``spec``: the format spec
    (".3f", ",", ".0%") applied to every cell that is not already text: a ``str`` cell is only
    padded, so a column of numbers can hold a "-" or a compound "1.0 -> 2.0"."""
    header: str = ""
    align: str = "<"
    width: int | None = None
    spec: str = ""


class Span(NamedTuple):
    """Text that runs on to the end of its row, across the columns still to come (why a step was
    skipped, a fix under a finding): a row's last item, after as many ordinary cells as it needs
    (none for a line of its own). It follows the separator after the last cell before it."""
    text: str


def _columns(columns) -> tuple[Column, ...]:
    if not isinstance(columns, (list, tuple)) or not columns:
        raise TypeError(f"columns must be a non-empty list of Column (or (header, align, width, spec) tuples), "
                        f"got {columns!r}")
    checked = []
    for index, column in enumerate(columns):
        if not isinstance(column, tuple) or not 1 <= len(column) <= 4:
            raise TypeError(f"columns[{index}] must be a Column or a (header, align, width, spec) tuple, got {column!r}")
        header, align, width, spec = Column(*column)
        if not isinstance(header, str) or not isinstance(spec, str):
            raise TypeError(f"columns[{index}] header and spec must be str, got {header!r} and {spec!r}")
        if align not in ALIGNMENTS:
            raise ValueError(f"columns[{index}].align must be one of {ALIGNMENTS}, got {align!r}")
        if width is not None and (isinstance(width, bool) or not isinstance(width, int)):
            raise TypeError(f"columns[{index}].width must be an int >= 1 or None, got {type(width).__name__} {width!r}")
        if width is not None and width < 1:
            raise ValueError(f"columns[{index}].width must be an int >= 1 or None, got {width}")
        checked.append(Column(header, align, width, spec))
    return tuple(checked)


def _separators(sep, count: int) -> tuple[str, ...]:
    if isinstance(sep, str):
        return (sep,) * count
    if (not isinstance(sep, (list, tuple)) or len(sep) != count
            or not all(isinstance(each, str) for each in sep)):
        raise TypeError(f"sep must be a str or one str per gap between the {count + 1} columns ({count}), got {sep!r}")
    return tuple(sep)


def _pad(text: str, column: Column) -> str:
    return text if column.width is None else f"{text:{column.align}{column.width}}"


def _cell(value, column: Column, where: str) -> str:
    if isinstance(value, Span):
        raise TypeError(f"{where} is a Span: a Span must be its row's last item")
    if isinstance(value, str):
        return _pad(value, column)
    try:
        text = format(value, column.spec)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where} = {value!r} does not format with spec {column.spec!r}: {error}") from None
    return _pad(text, column)


def table(columns, rows, *, sep=" ", indent: str = "", header: bool = True) -> str:
    """The lines of a table, joined by newlines (no trailing one). ``columns``: ``Column``s (or
    tuples of their fields). ``rows``: lists of values, one per column, or fewer ending in a
    ``Span``. ``sep``: what goes between two columns, one str for every gap or one per gap.
    ``indent``: what starts every line. ``header``: whether the first line holds the headers."""
    columns = _columns(columns)
    separators = _separators(sep, len(columns) - 1)
    if not isinstance(indent, str):
        raise TypeError(f"indent must be a str, got {type(indent).__name__} {indent!r}")
    if not isinstance(header, bool):
        raise TypeError(f"header must be True or False, got {type(header).__name__} {header!r}")
    if not isinstance(rows, (list, tuple)):
        raise TypeError(f"rows must be a list of rows (lists of values), got {type(rows).__name__}")

    def line(texts: list[str]) -> str:
        parts = [indent]
        for index, text in enumerate(texts):
            parts.append(text if index == 0 else separators[index - 1] + text)
        return "".join(parts)

    lines = [line([_pad(column.header, column) for column in columns])] if header else []
    for row_index, row in enumerate(rows):
        if not isinstance(row, (list, tuple)) or isinstance(row, Span) or not row:
            raise TypeError(f"rows[{row_index}] must be a non-empty list of values, got {row!r}")
        span = row[-1] if isinstance(row[-1], Span) else None
        cells = row[:-1] if span is not None else row
        if len(cells) != len(columns) if span is None else len(cells) >= len(columns):
            raise ValueError(f"rows[{row_index}] has {len(row)} items for {len(columns)} columns: one per column, "
                             f"or fewer ending in a Span")
        if span is not None and not isinstance(span.text, str):
            raise TypeError(f"rows[{row_index}]'s Span must hold a str, got {span.text!r}")
        texts = [_cell(value, columns[index], f"rows[{row_index}][{index}]") for index, value in enumerate(cells)]
        lines.append(line(texts + ([span.text] if span is not None else [])))
    return "\n".join(lines)
