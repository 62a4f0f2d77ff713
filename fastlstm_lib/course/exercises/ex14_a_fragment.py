"""Exercise (notebook 14): ``a_fragment(lane, i)``, the (row, col) of the element of A (16 x 8)
that ``lane`` holds in its register ``a{i}`` for one ``mma.m16n8k8`` with TF32 inputs, the PTX
ISA's fragment layout; the library's is ``kernels/mma/layout.element("a", lane, i)``. Called on
all 32 lanes x 4 registers. ``picture`` draws where the candidate puts each lane's registers."""

from __future__ import annotations

import numpy as np

from ...kernels.mma import layout
from .base import Mistake
from .function_runs import FunctionExercise

(ROWS, COLS), REGISTERS = layout.OPERANDS["a"]
DOMAIN = tuple((lane, i) for lane in range(layout.WARP) for i in range(REGISTERS))


def a_fragment(lane, i):
    """(row, col) of the element of A (16 x 8) that lane ``lane`` holds in its register a``i``."""
    group = lane // 4  # the lane's group of 4 lanes: which row (of the top 8 and of the bottom 8)
    tig = lane % 4  # its place in the group: which column (of the left 4 and of the right 4)
    row = group + 8 * (i % 2)  # a1 and a3: 8 rows further down
    col = tig + 4 * (i // 2)  # a2 and a3: 4 columns further right
    return row, col


def expected(lane: int, i: int) -> tuple[int, int]:
    return layout.element("a", lane, i)


def describe(arguments) -> str:
    lane, i = arguments
    return f"lane {lane}'s a{i}"


def same_as(answer_of, what: str):
    """The answers are exactly ``answer_of(lane, i)`` for every lane and register."""

    def detect(evidence):
        return what if evidence.equals(answer_of) else None

    return detect


def picture(candidate, verdict):
    """A, each element labelled with the lane and register the candidate puts there: "?" where none
    does, red where that is not the PTX ISA's lane (or two lanes claim it). A stub draws the empty A."""
    from ..plots import fragment_grid

    lanes, registers = np.full((ROWS, COLS), -1), np.full((ROWS, COLS), -1)
    wrong = np.zeros((ROWS, COLS), dtype=bool)
    attempted = verdict.status != "not attempted" and verdict.mistake != "raised"
    for lane, i in DOMAIN if attempted else ():
        answer = candidate(lane, i)
        if EXERCISE.bad_answer(answer) is not None:
            continue
        row, col = answer
        wrong[row, col] |= lanes[row, col] >= 0 or (row, col) != expected(lane, i)
        lanes[row, col], registers[row, col] = lane, i
    fig = fragment_grid("a", lanes, registers, wrong=wrong)
    if not attempted:
        title = "a_fragment: not attempted yet. Once it runs, this shows where it puts every lane's a0..a3"
    elif verdict.passed:
        title = "a_fragment: passed. Each lane's a0..a3, where the tensor core reads them"
    else:
        title = f"a_fragment: not right yet ({verdict.mistake}); red: not the PTX ISA's lane, ?: no lane"
    fig.axes[0].set_title(title, fontsize=9, pad=24)
    fig.tight_layout()
    return fig


EXERCISE = FunctionExercise(
    name="a_fragment", notebook="14", difficulty="easy",
    title="a_fragment(lane, i): the (row, col) of the element of A (16 x 8) that lane holds in its register a<i>",
    hints=(
        ("The 32 lanes come in 8 groups of 4 (lane // 4, lane % 4). Look at A's figure for a0 alone: which "
         "of the two numbers picks the row, which the column? Then: what do a1, a2 and a3 add to them?"),
        ("a0 lies in the top-left 8 x 4 quarter of A: the group is the row, the place in the group the "
         "column. a1 is the same element 8 rows down, a2 4 columns right, a3 both: i's low bit moves the row, "
         "its high bit the column."),
        "row = group + 8 * (i % 2); col = tig + 4 * (i // 2); return row, col",
    ),
    solution=lambda: a_fragment, source="fastlstm_lib/course/exercises/ex14_a_fragment.py "
                                        "(the library's: kernels/mma/layout.py, element)",
    domain=DOMAIN, expected=expected, shape=(ROWS, COLS), describe=describe, picture=picture,
    catalog=(
        Mistake(
            "rows_and_columns_swapped", "row and column are swapped",
            "A is 16 rows by 8 columns, row-major (.row): the group of 4 lanes (lane // 4) picks the row, the "
            "place in the group (lane % 4) the column; return (row, col) in that order",
            same_as(lambda lane, i: expected(lane, i)[::-1], "every answer is (col, row) of the right element: "
                    "row and column are swapped")),
        Mistake(
            "group_and_tig_swapped", "the group and the place in the group are swapped",
            "the 8 groups are lane // 4 (lanes 0-3 are group 0) and pick the row; lane % 4 picks the column",
            same_as(lambda lane, i: (lane % 4 + 8 * (i % 2), lane // 4 + 4 * (i // 2)),
                    "lanes 0, 4, 8, ... land in one row and lanes 0-3 in one column: lane // 4 and lane % 4 "
                    "are used the other way round")),
        Mistake(
            "registers_in_other_order", "a1 and a2 are swapped",
            "PTX orders A's registers down first: a1 is 8 rows below a0 (i % 2 adds 8 to the row), a2 4 columns "
            "right of it (i // 2 adds 4 to the column)",
            same_as(lambda lane, i: expected(lane, (0, 2, 1, 3)[i]), "a1 is 4 columns right of a0 and a2 8 rows "
                    "below it: the other way round")),
    ),
)
