"""The notebooks' one-call lesson parts (fastlstm_lib.lesson): deterministic words, right numbers."""

try:  # the tests here draw no chart (chart=False): a machine without matplotlib runs them all
    import matplotlib
except ImportError:
    pass
else:
    matplotlib.use("Agg")

import fastlstm_lib as fl  # noqa: E402
from fastlstm_lib import lesson  # noqa: E402


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


def test_bounds_never_beaten_by_the_article(capsys):
    rows = lesson.bounds("streams", chart=False)
    assert [row["step"] for row in rows] == ["baseline", "combined_gemms", "streams"]
    assert all(row["article_ms"] >= row["M40 cpp ms"] for row in rows)
    assert "M40 cpp" in capsys.readouterr().out


def test_measure_says_why_it_times_nothing_on_the_simulator(capsys):
    if not fl.is_simulator():
        return
    assert lesson.measure("baseline") == []
    assert "nothing is timed" in capsys.readouterr().out


def test_standing_prints_the_change_and_returns_every_step_so_far(capsys, keras_available):
    facts = lesson.standing("streams", chart=False)
    out = capsys.readouterr().out
    assert facts["errors"]["reference"] <= fl.RTOL and facts["errors"]["keras"] <= fl.RTOL
    assert [row["step"] for row in facts["bounds"]] == [row["step"] for row in facts["launches"]] == [
        "baseline", "combined_gemms", "streams"]
    assert "(combined_gemms -> streams)" in out
    assert "critical path            7,604 -> 7,204 launches" in out  # the side stream leaves the chain
    assert "the article's M40        148.3 -> 108.0 ms (measured)" in out
    first = lesson.standing("baseline", chart=False)
    assert len(first["bounds"]) == 1 and "(baseline)" in capsys.readouterr().out


def test_nsight_says_how_to_record_each_step_and_what_to_look_for(capsys):
    import pytest

    for step in lesson.LOOK_FOR:
        lesson.nsight(step)
        out = capsys.readouterr().out
        assert f"nsys profile -t cuda,nvtx -o {step}" in out and "NVTX range" in out and lesson.LOOK_FOR[step] in out
    lesson.nsight("pretransposed")
    assert "ncu --kernel-name regex:blocked_gemm" in capsys.readouterr().out
    with pytest.raises(ValueError, match="step must be one of the ladder's"):
        lesson.nsight("keras_cudnn")


def test_nvtx_ranges_are_no_ops_where_nothing_can_record_them():
    import contextlib

    import pytest

    from fastlstm_lib.nvtx import nvtx_range

    if fl.is_simulator():
        assert isinstance(nvtx_range("baseline pass"), contextlib.nullcontext)
    with nvtx_range("baseline pass"):
        pass
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        nvtx_range("")
