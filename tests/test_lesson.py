"""The notebooks' one-call lesson parts (fastlstm_lib.course.lesson): deterministic words, right numbers."""

try:  # charts drawn here go to no window; a machine without matplotlib still runs the rest
    import matplotlib
except ImportError:
    pass
else:
    matplotlib.use("Agg")

import fastlstm_lib as fl  # noqa: E402
from fastlstm_lib.course import lesson  # noqa: E402
from conftest import bench_result  # noqa: E402

#: Odd sizes smaller than lesson.ODD, for the checks standing() runs before its article-size lines.
SMALL = fl.LSTMConfig(batch=3, seq_len=2, input_size=5, hidden=7, layers=2)


def test_check_prints_verdicts_and_counted_launches_equal_the_dry_run(capsys, keras_available):
    errors = lesson.check("fused_pointwise")
    out = capsys.readouterr().out
    assert errors["reference"] <= fl.RTOL and errors["keras"] <= fl.RTOL
    assert "equals the float64 reference within 1e-05: True" in out
    assert "the same kernels: True" in out
    cfg = lesson.ODD
    assert errors["launches"] == cfg.layers * (3 * cfg.seq_len + 1)


def test_launch_rows_at_the_articles_size():
    rows = {row["step"]: row for row in lesson.launch_rows(lesson.steps_so_far("fused_pointwise"))}
    assert list(rows) == ["baseline", "combined_gemms", "streams", "fused_pointwise"]
    assert rows["baseline"]["launches"] == 4 * (100 * 25 + 1)
    assert rows["fused_pointwise"]["gemm"] == 800 and rows["fused_pointwise"]["other"] == 404


def test_bounds_never_beaten_by_the_article():
    from fastlstm_lib.course.profile.ladder import ladder_bounds

    rows = ladder_bounds(gpus=lesson.BOUND_GPUS, steps=lesson.steps_so_far("streams"), chip=lesson.CHIP)
    assert [row["step"] for row in rows] == ["baseline", "combined_gemms", "streams"]
    assert all(row["article_ms"] >= row["M40 cpp ms"] for row in rows)


def test_measure_says_why_it_times_nothing_on_the_simulator(capsys):
    if not fl.is_simulator():
        return
    assert lesson.measure("baseline") == []
    assert "nothing is timed" in capsys.readouterr().out


def test_standing_opens_with_one_line_then_the_rest_and_returns_every_step_so_far(capsys, keras_available):
    facts = lesson.standing("streams", SMALL)
    out = capsys.readouterr().out
    assert facts["errors"]["reference"] <= fl.RTOL and facts["errors"]["keras"] <= fl.RTOL
    assert [row["step"] for row in facts["bounds"]] == [row["step"] for row in facts["launches"]] == [
        "baseline", "combined_gemms", "streams"]
    first, *rest = out.splitlines()
    assert first == lesson.step_line("streams")  # the one line opens the standing
    assert "H100, Python host: lower bound 128.2 -> 128.2 ms, set by host; estimate 128.2 -> 128.2 ms" in out
    assert "launches per pass: 800 GEMMs, 6,804 element-wise" in out
    assert "streams equals the float64 reference within 1e-05: True" in out
    first = lesson.standing("baseline", SMALL)
    assert len(first["bounds"]) == 1 and capsys.readouterr().out.startswith("02 baseline (")


def test_step_line_labels_what_changes_the_article_and_the_model():
    line = lesson.step_line("streams")
    what, article, model = line.split(" | ")
    assert what.startswith("04 streams (input GEMM on its own stream")  # the step's own title
    assert "launches 7,604 -> 7,604" in what and "streams 1 -> 2" in what  # the same launches, a side stream
    assert "critical path 7,604 -> 7,204 launches (recorded)" in what
    assert article == "the article's M40: 148.3 -> 108.0 ms, 1.37x (measured; 2.8x its baseline)"
    assert model == "the model's M40, C++ host: 84.7 -> 66.7 ms, 1.27x (estimated)"
    # A step that moves no count says what it does move: the GEMMs' 'T' flag
    assert "GEMMs reading B with 'T' 100% -> 0%" in lesson.step_line("pretransposed")
    assert "critical path" not in lesson.step_line("pretransposed")  # unchanged counts are left out
    persistent = lesson.step_line("persistent", chip="H100").split(" | ")
    assert "with the H100's launch geometry" in persistent[0]
    assert persistent[1] == "the article's M40: not measured (the article ends at wavefront)"
    assert "cannot run there, no cooperative launch" in persistent[2]


def test_on_your_cpu_names_a_section_notebook_13_has():
    import json
    from pathlib import Path

    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "13_on_your_cpu.ipynb").read_text())["cells"]
    headings = {"".join(cell["source"]).splitlines()[0] for cell in cells if cell["cell_type"] == "markdown"}
    assert all(heading in headings for heading, _ in lesson.ON_YOUR_CPU.values())
    assert "cpu_speed.stacked_gemms" in lesson.on_your_cpu("combined_gemms")
    assert lesson.on_your_cpu("wavefront") is None


def test_ladder_times_label_every_source_and_estimate_each_measured_gpu():
    rows = lesson.ladder_times("persistent", [bench_result("baseline", 150.0), bench_result("wavefront", 9.0)])
    by = {row["step"]: row for row in rows}
    assert list(by) == fl.steps.names()
    assert by["baseline"]["NVIDIA H100 80GB HBM3 (measured, this run)"] == 150.0
    assert "NVIDIA H100 80GB HBM3 (measured, this run)" not in by["streams"]
    assert abs(by["baseline"]["the article's M40 (measured, published)"] - 307.66) < 0.01
    assert "the article's M40 (measured, published)" not in by["persistent"]  # the article stops at the wavefront
    assert "M40, C++ host (estimate)" not in by["persistent"]  # no cooperative launch on a Maxwell GPU
    assert by["persistent"]["H100, Python host (estimate)"] < by["wavefront"]["H100, Python host (estimate)"]
    simulated = dict(bench_result("baseline", 1.0), times_meaningful=False)
    assert len(lesson.ladder_times("baseline", [simulated])[0]) == 1 + 3  # step, the article, two estimates


def test_ladder_chart_draws_one_bar_per_source_and_step():
    import matplotlib.pyplot as plt

    fig = lesson.ladder_chart("combined_gemms", [bench_result("baseline", 150.0)])
    m40, h100 = fig.axes[:2]  # one panel per GPU: the article's M40 with its estimate; the H100's run and estimate
    assert len(m40.patches) == 2 + 2  # the article and the M40's estimate, two steps each
    assert len(h100.patches) == 1 + 2  # this run (baseline only) and the H100's estimate
    assert "M40" in m40.get_title() and "H100" in h100.get_title()
    assert all("log" in ax.get_xscale() for ax in (m40, h100)) and "milliseconds" in h100.get_xlabel()
    plt.close(fig)


def test_nsight_says_how_to_record_each_step_and_what_to_look_for(capsys):
    import pytest

    for step in lesson.LOOK_FOR:
        lesson.nsight(step)
        out = capsys.readouterr().out
        assert f"nsys profile -t cuda,nvtx -o {step}" in out and "NVTX range" in out and lesson.LOOK_FOR[step] in out
    lesson.nsight("pretransposed")
    assert "ncu --kernel-name regex:_gemm" in capsys.readouterr().out
    with pytest.raises(ValueError, match="step must be one of the ladder's"):
        lesson.nsight("keras_cudnn")


def test_nvtx_ranges_are_no_ops_where_nothing_can_record_them():
    import contextlib

    import pytest

    from fastlstm_lib.runtime.nvtx import nvtx_range

    if fl.is_simulator():
        assert isinstance(nvtx_range("baseline pass"), contextlib.nullcontext)
    with nvtx_range("baseline pass"):
        pass
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        nvtx_range("")
