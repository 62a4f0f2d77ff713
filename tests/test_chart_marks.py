"""An estimate never passes for a measurement: where a ladder notebook's chart draws both, they have
different marks (hatched against solid, another line style or marker) and a legend says which is
which; and each forward ladder notebook links notebook 11, where the model's miss against the
article is stated.

Two readings. The ladder's one chart (``lesson.ladder_chart``, what ``lesson.measure`` draws in
every ladder notebook) is drawn for each step with a measured GPU result beside the article's and
the estimates, and its artists are checked. Every other chart a ladder notebook draws in its own
cells is read from the notebook's source: a cell whose labels name both an estimate and a
measurement must mark them apart and draw a legend.
"""

import json
import re
from pathlib import Path

import matplotlib
import pytest

import fastlstm_lib as fl
from conftest import bench_result
from fastlstm_lib.course import lesson

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
LADDER = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if re.match(r"(0[2-9]|41)_", p.name))
ESTIMATE, MEASURED = re.compile(r"estimat", re.I), re.compile(r"measur", re.I)
PLOTS = re.compile(r"\.(barh?|plot|scatter|loglog|semilog[xy]|step|errorbar)\(")
MARKS = re.compile(r"hatch\s*=|linestyle\s*=|\bls\s*=|marker\s*=|\"[.os^v*x+-]+\"\s*[,)]")


def mark(artist) -> tuple:
    """What tells one series from another apart from its colour: hatch, fill, line style, marker (a
    bar series' legend handle is its container: its first bar tells)."""
    artist = artist.patches[0] if hasattr(artist, "patches") and artist.patches else artist
    get = lambda name: getattr(artist, f"get_{name}", lambda: None)()  # noqa: E731
    return get("hatch"), get("fill"), get("linestyle"), get("marker")


def check_marks(fig) -> list[str]:
    """What is wrong with ``fig``: axes where estimates and measurements share the marks, or have no legend."""
    problems = []
    legends = [legend for ax in fig.axes for legend in [ax.get_legend()] if legend] + list(fig.legends)
    in_legend = {text.get_text() for legend in legends for text in legend.get_texts()}
    for index, ax in enumerate(fig.axes):
        handles, labels = ax.get_legend_handles_labels()
        estimates = {mark(h) for h, label in zip(handles, labels) if ESTIMATE.search(label)}
        measured = {mark(h) for h, label in zip(handles, labels) if MEASURED.search(label) and not ESTIMATE.search(label)}
        if not (estimates and measured):
            continue
        if estimates & measured:
            problems.append(f"axes {index}: an estimate and a measurement drawn with the same marks")
        missing = [label for label in labels if label not in in_legend]
        if missing:
            problems.append(f"axes {index}: no legend names {missing}")
    return problems


@pytest.mark.parametrize("step", fl.steps.names())
def test_the_ladder_chart_marks_estimates_apart(step):
    import matplotlib.pyplot as plt

    fig = lesson.ladder_chart(step, [bench_result(name, 10.0) for name in lesson.steps_so_far(step)])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any(ESTIMATE.search(label) for label in labels) and any(MEASURED.search(label) for label in labels)
    assert check_marks(fig) == []
    plt.close(fig)


def test_the_check_sees_an_estimate_drawn_like_a_measurement():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar([0], [1.0], label="H100 (measured)")
    ax.bar([1], [2.0], label="H100 (estimate)")
    assert check_marks(fig) == ["axes 0: an estimate and a measurement drawn with the same marks",
                                "axes 0: no legend names ['H100 (measured)', 'H100 (estimate)']"]
    plt.close(fig)


@pytest.mark.parametrize("path", LADDER, ids=lambda p: p.name)
def test_each_ladder_notebook_marks_its_estimates_apart(path):
    cells = json.loads(path.read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    assert any("lesson.measure(" in source for source in sources) or path.name.startswith("41_"), \
        f"{path.name}: the ladder's chart is lesson.measure's"
    for source in sources:
        strings = " ".join(re.findall(r"\"[^\"\n]*\"|'[^'\n]*'", source))
        if PLOTS.search(source) and ESTIMATE.search(strings) and MEASURED.search(strings):
            assert MARKS.search(source) and "legend(" in source, (
                f"{path.name}: a chart with estimates and measurements must mark them apart and draw a legend:\n"
                f"{source[:300]}")


@pytest.mark.parametrize("path", [p for p in LADDER if not p.name.startswith("41_")], ids=lambda p: p.name)
def test_each_ladder_notebook_links_the_models_miss(path):
    """The model's known miss against the article is stated once, in notebook 11; every forward ladder
    notebook that shows the model's estimates links it."""
    markdown = "".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
                       if cell["cell_type"] == "markdown")
    assert "](11_reproduce_the_article.ipynb)" in markdown, f"{path.name}: link notebook 11 beside the estimates"
