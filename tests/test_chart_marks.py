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


# ---- one GPU per panel (issue 66) -----------------------------------------------------------------
# The rule (fastlstm_lib/gpus.py, its last section): an Axes holds one GPU's numbers and names only that GPU
# (data/gpus.csv's names and match words, GeForce names); ``plots.several_gpus`` reads every text of
# every panel. Each library chart is drawn here with the inputs its notebook gives it; a notebook's own
# chart that names several GPUs passes each panel through ``plots.one_gpu``, which raises when the run
# draws another GPU's label on it.

from fastlstm_lib.course import plots  # noqa: E402

OWN_SERIES = re.compile(r"\.(barh?|plot|scatter|loglog|semilog[xy]|step|errorbar|ax[hv]line|fill_between)\(")
GPU_COLLECTION = re.compile(r"\b[A-Z_]*GPUS\b")


def test_the_rule_sees_two_gpus_in_one_panel():
    import matplotlib.pyplot as plt

    assert plots.gpus_named("the article's Tesla M40 beside NVIDIA H100 80GB HBM3 and an H100 PCIe") == \
        {"M40", "H100", "H100 PCIe"}
    assert plots.gpus_named("RTX 2080 Ti · TF 1.13; CPU: Intel(R) Xeon(R); GH200; sm_90") == {"RTX 2080 Ti"}
    fig, (one, two) = plt.subplots(1, 2)
    one.bar([0], [1.0], label="M40, C++ host (estimate)")
    two.bar([0], [1.0], label="M40 (measured)")
    two.axhline(0.5, label="H100: FP32 peak / DRAM bandwidth")
    assert plots.several_gpus(fig) == ["axes 1 names H100, M40"]
    plots.one_gpu(one, "M40")
    assert one.get_title() == "M40"
    with pytest.raises(ValueError, match="the M40 panel also names H100"):
        plots.one_gpu(two, "M40")
    plt.close(fig)


def _library_charts():
    """(name, figure) for every library chart that draws a GPU's numbers, with its notebook's inputs."""
    from fastlstm_lib.course.profile import charts, ladder
    from fastlstm_lib.course.timeline import plot_step_change
    from fastlstm_lib.topics import cnn

    rows = ladder.ladder_bounds(hosts=("cpp", "python", 0.0))  # notebook 11
    yield "ladder_bounds_chart", charts.ladder_bounds_chart(rows)
    yield "article_ratio_chart", charts.article_ratio_chart(ladder.article_check(rows))
    for gpu, host in (("H100", "python"), ("M40", "cpp")):  # notebook 04
        yield f"timeline_chart {gpu}", charts.timeline_chart(fl.lower_bound(fl.profile("streams", chip=gpu), gpu, host))
    yield "plot_step_change", plot_step_change("combined_inputs", gpu="M40", host="cpp", by="sm")  # 04, 07, 08
    e = fl.estimate(fl.profile("wavefront", chip="M40"), "M40", host="cpp")  # notebook 11
    yield "plot_timeline", fl.plot_timeline(e, window=(10, 11.5)).figure
    two_gpus = [bench_result("baseline", 20.0), bench_result("baseline", 60.0, device="Tesla T4")]
    yield "plots.ladder_chart", plots.ladder_chart(two_gpus)
    on_gpu = {"device": "NVIDIA H100 80GB HBM3", "gpus": 1, "backend": "tensorflow", "keras": "3.15.1"}
    results = [{"kind": "cnn-layouts", "model": "cnn10", "label": "10-layer CNN", "precision": "float32",
                "jit_compile": False, "batch_size": 64, "replicas": 1, "images": 512, "image_size": 32, "variant": "",
                "data_format": layout, "error": None, "env": on_gpu, "epoch_ms": [ms] * 3,
                "time_ms": {"median": ms, "min": ms, "max": ms}} for layout, ms in (("channels_last", 10.0),
                                                                                     ("channels_first", 9.0))]
    yield "cnn.speedup_chart", cnn.speedup_chart(cnn.compare_layouts(results))  # notebook 21, run on a GPU


def test_each_library_chart_holds_one_gpu_per_panel():
    import matplotlib.pyplot as plt

    for name, fig in _library_charts():
        assert plots.several_gpus(fig) == [], name
        plt.close(fig)


@pytest.mark.parametrize("step", fl.steps.names())
def test_the_ladder_chart_holds_one_gpu_per_panel(step):
    import matplotlib.pyplot as plt

    measured = [bench_result("baseline", 150.0), bench_result("baseline", 300.0, device="Tesla T4")]
    for fig in (lesson.ladder_chart(step), lesson.ladder_chart(step, measured)):
        assert plots.several_gpus(fig) == []
        plt.close(fig)


def test_the_ladder_chart_says_what_is_measured_and_which_host():
    import matplotlib.pyplot as plt

    fig = lesson.ladder_chart("persistent")  # as the notebooks store it: nothing measured on the H100
    m40, h100 = fig.axes
    assert m40.get_title() == "M40: measured (solid) and estimated (hatched), C++ host"
    assert "measured (solid)" not in h100.get_title() and "Python host" in h100.get_title()
    assert "cannot run on the M40: no cooperative launch (no grid barrier)" in [t.get_text() for t in m40.texts]
    fig.canvas.draw()
    for ax in fig.axes:  # the legend beside the bars, never over one
        assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1
    plt.close(fig)


def test_the_speedup_notes_stay_clear_of_the_axis_text():
    """Notebook 21: "43%, within noise" ran into the tick labels of its bar."""
    import matplotlib.pyplot as plt
    from fastlstm_lib.topics import cnn

    on_cpu = {"device": "CPU", "gpus": 0, "backend": "tensorflow", "keras": "3.15.1"}
    results = [{"kind": "cnn-layouts", "model": "cnn10", "label": "10-layer CNN (stand-in: width 8, 16x16 images)",
                "precision": "float32", "jit_compile": False, "batch_size": 64, "replicas": 1, "images": 512,
                "image_size": 16, "variant": "", "data_format": layout, "error": None, "env": on_cpu,
                "epoch_ms": times, "time_ms": {"median": times[1], "min": min(times), "max": max(times)}}
               for layout, times in (("channels_last", [100.0, 100.0, 30.0]), ("channels_first", [40.0, 143.0, 150.0]))]
    fig = cnn.speedup_chart(cnn.compare_layouts(results))
    fig.canvas.draw()
    for ax in fig.axes:
        ticks = [label.get_window_extent() for label in ax.get_yticklabels() if label.get_text()]
        for text in ax.texts:
            box = text.get_window_extent()
            assert not any(box.overlaps(tick) for tick in ticks), text.get_text()
            assert box.x0 >= ax.get_window_extent().x1  # the notes' column, right of the panel
    assert any("within noise" in text.get_text() for ax in fig.axes for text in ax.texts)
    plt.close(fig)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_each_notebook_chart_of_several_gpus_marks_each_panel(path):
    """A notebook cell that draws its own series and names several GPUs (in its strings, or a GPU
    collection such as ``lesson.BOUND_GPUS``) calls ``plots.one_gpu`` for its panels."""
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or not OWN_SERIES.search(source):
            continue
        strings = " ".join(re.findall(r"\"[^\"\n]*\"|'[^'\n]*'", source))
        if len(plots.gpus_named(strings)) > 1 or GPU_COLLECTION.search(source):
            assert "one_gpu(" in source, f"{path.name}: a chart naming several GPUs, no one_gpu:\n{source[:300]}"
