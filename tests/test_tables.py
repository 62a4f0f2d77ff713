"""The one table helper (fastlstm_lib.tables): alignment, widths, format specs, separators, spanning
rows, its argument checks, and that no module pads a table's headers by hand any more."""

import re
from pathlib import Path

import pytest

from fastlstm_lib.tables import Column, Span, table

PACKAGE = Path(__file__).resolve().parents[1] / "fastlstm_lib"


def test_alignment_widths_and_specs():
    columns = [Column("step", "<", 8), Column("ms", ">", 7, ".2f"), Column("mid", "^", 5), Column("note")]
    text = table(columns, [["base", 1.5, "x", "first"], ["fused", 12.345, "yy", "second"]])
    assert text.split("\n") == ["step          ms  mid  note",
                                "base        1.50   x   first",
                                "fused      12.35  yy   second"]


def test_a_cell_wider_than_its_column_is_never_cut():
    assert table([Column("a", ">", 3), Column("b", "<", 2)], [["abcdef", "xyz"]], header=False) == "abcdef xyz"


def test_text_cells_skip_the_spec_and_other_values_use_it():
    text = table([Column("acc", ">", 6, ".3f")], [[0.75], ["-"], [1]], header=False)
    assert text.split("\n") == [" 0.750", "     -", " 1.000"]


def test_a_span_runs_on_after_the_cells_before_it():
    columns = [Column("step", "<", 6), Column("ms", ">", 6, ".1f"), Column("gain", ">", 5)]
    rows = [["base", 2.0, "1x"], ["fused", Span("skipped: no GPU")], [Span("a line of its own")]]
    assert table(columns, rows).split("\n") == ["step       ms  gain",
                                                "base      2.0    1x",
                                                "fused  skipped: no GPU",
                                                "a line of its own"]


def test_separators_indent_and_no_header():
    columns = [Column("", "<", 4), Column("", ">", 3), Column()]
    text = table(columns, [["ok", 1, "fine"], ["fail", 12, "broken"]], sep=("", "  "), indent="  ", header=False)
    assert text.split("\n") == ["  ok    1  fine", "  fail 12  broken"]


def test_plain_tuples_are_columns_and_no_rows_is_the_header_alone():
    assert table([("step", "<", 6), ("ms", ">", 4, ".1f")], []) == "step     ms"
    assert table([("a",)], [], header=False) == ""


def test_deterministic():
    columns = [Column("x", ">", 9, ".3e"), Column("y", "<", 4)]
    rows = [[1 / 3, "a"], [2e-9, "b"]]
    assert table(columns, rows) == table(columns, rows)


@pytest.mark.parametrize("columns, rows, kwargs, error, words", [
    ([], [], {}, TypeError, "columns"),
    ("step", [], {}, TypeError, "columns"),
    ([("step", "<", 6, "", "extra")], [], {}, TypeError, r"columns\[0\]"),
    ([Column("step", "left", 6)], [], {}, ValueError, r"columns\[0\].align"),
    ([Column("step", "<", 0)], [], {}, ValueError, r"columns\[0\].width"),
    ([Column("step", "<", 6.0)], [], {}, TypeError, r"columns\[0\].width"),
    ([Column("step", "<", True)], [], {}, TypeError, r"columns\[0\].width"),
    ([Column(3)], [], {}, TypeError, r"columns\[0\]"),
    ([Column("a"), Column("b")], [["x"]], {}, ValueError, r"rows\[0\]"),
    ([Column("a"), Column("b")], [["x", "y", "z"]], {}, ValueError, r"rows\[0\]"),
    ([Column("a"), Column("b")], [["x", "y", Span("z")]], {}, ValueError, r"rows\[0\]"),
    ([Column("a"), Column("b")], [[Span("z"), "y"]], {}, TypeError, r"rows\[0\]\[0\].*Span"),
    ([Column("a")], ["x"], {}, TypeError, r"rows\[0\]"),
    ([Column("a")], [[]], {}, TypeError, r"rows\[0\]"),
    ([Column("a")], "rows", {}, TypeError, "rows"),
    ([Column("a")], [[Span(3)]], {}, TypeError, r"rows\[0\]'s Span"),
    ([Column("a", ">", 5, ".2f")], [[None]], {}, TypeError, r"rows\[0\]\[0\] = None"),
    ([Column("a", ">", 5, ".2q")], [[1.0]], {}, ValueError, r"rows\[0\]\[0\] = 1.0"),
    ([Column("a"), Column("b")], [], {"sep": (" ",) * 2}, TypeError, "sep"),
    ([Column("a"), Column("b")], [], {"sep": 1}, TypeError, "sep"),
    ([Column("a")], [], {"indent": 2}, TypeError, "indent"),
    ([Column("a")], [], {"header": 1}, TypeError, "header"),
])
def test_bad_input_names_the_argument(columns, rows, kwargs, error, words):
    with pytest.raises(error, match=words):
        table(columns, rows, **kwargs)


def test_no_module_pads_a_header_by_hand():
    """Tables go through fastlstm_lib.tables: a quoted header padded in an f-string
    (``{'step':<18}``) is a table written by hand."""
    by_hand = re.compile(r"""\{(['"])[^'"]*\1:[<>^]?\d+\}""")
    found = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
             if "fakegpu" not in path.parts
             for number, line in enumerate(path.read_text().splitlines(), 1) if by_hand.search(line)]
    assert not found, "tables padded by hand (use fastlstm_lib.tables.table): " + ", ".join(found)
