"""Every figure a notebook states in its text is printed by a cell whose output nbval compares, set by its
code, or cited: a change that moves a figure fails here or in nbval, and no cell of asserts on
hard-coded numbers follows the Takeaway for the learner to read past. A speed-up or a time ("1.70x",
"27.5 ms") is stricter: a stored output prints it, cited ones too (issue 66), so that a learner sees
where each comes from and a moved default or model cannot leave a stale one in the prose."""

import json
import re
from pathlib import Path

import pytest

from conftest import IGNORED, output_text

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: A number as the notebooks write one: 10,004, 0.0625, 1e-05.
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?(?!\d|[A-Za-wyz_])")  # "2.1x" is a figure
#: What is not a figure: links to other notebooks ("notebooks 03 and 04"), LaTeX, link targets, years,
#: software versions ("Python 3.13", "Keras >= 3.14").
NOT_FIGURES = re.compile(r"[Nn]otebooks? \d\d(?:(?:,| and| or|-) ?\d\d)*|\$[^$]*\$|\]\([^)]*\)|\b(?:19|20)\d\d\b|"
                         r"(?:Python|Keras|TensorFlow|torch|CUDA|cuDNN|numba-cuda|(?<!-)[<>]=?) ?\d+(?:\.\d+)+")  # "->" is an arrow


def figures(text):
    """The figures a reader would check: decimals, thousands, and whole numbers of three digits or more."""
    return [n for n in NUMBER.findall(NOT_FIGURES.sub(" ", text)) if "." in n or "," in n or "e" in n or len(n) >= 3]


def shown(value, outputs):
    """Whether ``value`` is printed among ``outputs``: the same figure, or a longer one that rounds to it."""
    target = float(value.replace(",", ""))
    if "e" in value:
        return any("e" in printed and float(printed) == target for printed in outputs)
    decimals = len(value.partition(".")[2])
    return any("e" not in printed and len(printed.partition(".")[2]) >= decimals
               and round(float(printed.replace(",", "")), decimals) == target for printed in outputs)


def compared_outputs(cells):
    """The numbers printed by the cells whose outputs nbval compares."""
    return set(NUMBER.findall("\n".join(output_text(cell) for cell in cells if cell["cell_type"] == "code"
                                          and IGNORED not in cell.get("metadata", {}).get("tags", []))))


def set_in_code(cells):
    """The numbers the notebook's code sets (sizes, constants), asserts left out: an assert's number is a check."""
    lines = [line for cell in cells if cell["cell_type"] == "code" for line in "".join(cell["source"]).splitlines()
             if not line.lstrip().startswith("assert")]
    return set(NUMBER.findall("\n".join(lines)))


def cited():
    """The numbers of the course's cited sources: REFERENCES.md and the data files, each row with its source."""
    texts = [(ROOT / "REFERENCES.md").read_text()] + [p.read_text() for p in sorted((ROOT / "data").glob("*.csv"))]
    return set(NUMBER.findall("\n".join(texts)))


#: A ratio or a share as the notebooks write one: "1.39x", "54%", "12.1 %".
RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?(%|x\b)")


def ratios(text):
    """(figure, "x" or "%") of every ratio and share in ``text`` that a reader would check."""
    return [(m.group(1), m.group(2)) for m in RATIO.finditer(NOT_FIGURES.sub(" ", text))]


def printed_ratios(cells):
    """Per unit ("x", "%"), the figures that cells whose outputs nbval compares print with it."""
    found = {"x": set(), "%": set()}
    for cell in cells:
        if cell["cell_type"] == "code" and IGNORED not in cell.get("metadata", {}).get("tags", []):
            for figure, unit in ratios(output_text(cell)):
                found[unit].add(figure)
    return found


def contradicted(cells) -> dict:
    """{Markdown cell: [figures]} of the text's ratios and shares that contradict the outputs: a share
    ("56%") that no compared output prints as a share (54.2% is not 56%), no code sets and no source
    cites; a ratio ("1.06x") whose inverse a compared output prints as a ratio (0.94x) where none
    prints it. (Other ratios the text may compute from the figures shown: 10,004 -> 7,604 is 1.32x.)"""
    printed, code, sources = printed_ratios(cells), set_in_code(cells), cited_ratios()

    def wrong(figure, unit):
        if any(shown(figure, k) for k in (printed[unit], sources[unit], code)):
            return False
        if unit == "%":
            return True
        decimals = len(figure.partition(".")[2])
        return float(figure) > 0 and shown(f"{1 / float(figure):.{decimals}f}", printed["x"])

    return {index: found for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
            if (found := [figure + unit for figure, unit in ratios("".join(cell["source"])) if wrong(figure, unit)])}


def cited_ratios():
    """Per unit, the ratios and shares the cited sources state (REFERENCES.md, the data files)."""
    texts = [(ROOT / "REFERENCES.md").read_text()] + [p.read_text() for p in sorted((ROOT / "data").glob("*.csv"))]
    found = {"x": set(), "%": set()}
    for figure, unit in ratios("\n".join(texts)):
        found[unit].add(figure)
    return found


def takeaway(cells):
    found = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and
             "".join(c["source"]).lstrip().startswith("## Takeaway")]
    return found[-1] if found else None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_in_the_text_is_shown_set_or_cited(path):
    """A figure in the Markdown is printed by a compared cell (nbval pins it), set by the notebook's code, or
    cited (REFERENCES.md, data/): never a number only an assert holds, or none."""
    cells = json.loads(path.read_text())["cells"]
    known = [compared_outputs(cells), set_in_code(cells), cited()]
    missing = {index: found for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
               if (found := [n for n in figures("".join(cell["source"])) if not any(shown(n, k) for k in known)])}
    assert missing == {}, f"{path.name}: figures in Markdown cells that no output shows, no code sets, no source cites"


#: A speed-up ("1.70x", "11x", "2.1×") or a time in milliseconds ("27.5 ms"); not a dimension ("64 x 64").
RATIO_OR_TIME = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?) ?(?:(?:x|×)(?! ?\d)(?![\w-])|ms\b)")
#: Code spans are no prose: `kernel[3, 8]` states no figure.
CODE_SPAN = re.compile(r"`[^`]*`")


def ratios_and_times(text):
    """The speed-ups and times ``text`` states, as numbers ("1.70", "27.5")."""
    return RATIO_OR_TIME.findall(NOT_FIGURES.sub(" ", CODE_SPAN.sub(" ", text)))


def test_the_rule_reads_speedups_and_times_not_dimensions():
    assert ratios_and_times("measured 1.70x; 27.5 ms -> 15.4 ms, a 2048 x 512 matrix, 11x, 2.1×, 1,004 ms") == \
        ["1.70", "27.5", "15.4", "11", "2.1", "1,004"]
    assert ratios_and_times("`kernel[3, 8]` and $2 x$ and 64 x 64 blocks; 4x-wide loads") == []
    assert shown("1.7", {"1.70"}) and not shown("1.70", {"1.7"}) and not shown("27", {"127"})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_speedup_and_time_in_the_text_is_printed(path):
    """A speed-up or a time in the Markdown is printed by a stored output (a measured one too, in a cell
    nbval leaves out): set in code or cited is not enough (the article's 1.70x is printed from
    data/article_cudnn5.csv where the text states it)."""
    cells = json.loads(path.read_text())["cells"]
    printed = set(NUMBER.findall("\n".join(output_text(cell) for cell in cells if cell["cell_type"] == "code")))
    missing = {index: found for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
               if (found := [n for n in ratios_and_times("".join(cell["source"])) if not shown(n, printed)])}
    assert missing == {}, f"{path.name}: speed-ups and times in Markdown cells that no stored output prints"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_ratio_or_share_in_the_text_contradicts_the_outputs(path):
    """A share in the Markdown is printed as a share by a compared cell (or set, or cited): a number
    that merely rounds to it somewhere else in the outputs does not back it; a ratio is never the
    inverse of the one printed."""
    cells = json.loads(path.read_text())["cells"]
    assert contradicted(cells) == {}, f"{path.name}: ratios and shares in the text that no output prints"


def test_a_ratio_that_contradicts_its_output_fails():
    """Scratch notebooks: an inverted ratio and a rounded-away share fail; the figure as printed passes."""
    def notebook(text, output):
        return [{"cell_type": "code", "source": ["print(r)"], "metadata": {}, "outputs": [{"text": output}]},
                {"cell_type": "markdown", "source": [text], "metadata": {}}]

    assert contradicted(notebook("keras_generic runs 1.06x as fast", "keras_generic / keras_cudnn: 0.94x")) == {1: ["1.06x"]}
    assert contradicted(notebook("the share rose to 56%", "FFMA share 54.2%\n")) == {1: ["56%"]}
    assert contradicted(notebook("the share rose to 54%, 1.06x", "FFMA share 54.2%, 1.06x faster\n")) == {}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_asserts_after_the_takeaway(path):
    """The Takeaway's figures are pinned by the outputs above it and by nbval, not by asserts below it."""
    cells = json.loads(path.read_text())["cells"]
    at = takeaway(cells)
    if at is None:
        pytest.skip("no Takeaway")
    after = [i for i, c in enumerate(cells[at + 1:], at + 1) if c["cell_type"] == "code" and "assert" in "".join(c["source"])]
    assert after == [], f"{path.name}: code cells {after} assert after the Takeaway"


def test_the_figures_are_read_as_a_reader_would():
    assert figures("10,004 launches (3,200 GEMMs) at 0.0625 bytes, 2.1x, 1e-05; notebook 03; $64\\times512$; 2017") == [
        "10,004", "3,200", "0.0625", "2.1", "1e-05"]
    assert figures("Python 3.13 or Keras >= 3.14; notebooks 03 and 04") == []
    assert shown("103", {"103.0"}) and shown("1.32", {"1.316"}) and not shown("1.3", {"1.2"}) and not shown("2.10", {"2.1"})
