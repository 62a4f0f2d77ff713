"""fl.lower_bound: a schedule no GPU can beat, put to the test by the article's own M40 times."""

import pytest

import fastlstm_lib as fl
from fastlstm_lib.__main__ import main
from fastlstm_lib.course.profile import Launch, Profile, charts, ladder
from fastlstm_lib.course.profile.bound import host_costs

try:  # only test_charts_draw needs matplotlib (a lent GPU machine may have none): it skips without it
    import matplotlib
except ImportError:
    matplotlib = None
else:
    matplotlib.use("Agg")

PUBLISHED = [row["step"] for row in fl.article_numbers()]
GPUS = ("M40", "T4", "A100", "H100")


@pytest.fixture(scope="module")
def rows():
    """Every step at the article's size, bounded on four GPUs with both hosts."""
    return ladder.ladder_bounds(gpus=GPUS)


def test_the_article_never_beats_our_cpp_bound(rows):
    checked = ladder.article_check(rows)
    assert [row["step"] for row in checked] == PUBLISHED
    for row in checked:
        assert row["consistent"] and row["article_ms"] >= row["bound_cpp_ms"] > 0, row
        assert row["measured_over_bound"] >= 1
        assert row["H100_cpp_ms"] <= row["bound_cpp_ms"] and row["H100_python_ms"] >= row["H100_cpp_ms"]
    wavefront = checked[-1]
    assert wavefront["measured_over_bound"] == min(row["measured_over_bound"] for row in checked)  # the closest


def test_bounds_everywhere(rows):
    for row in rows:
        for gpu in GPUS:
            cpp, python = row[f"{gpu} cpp ms"], row[f"{gpu} python ms"]
            if row["step"] == "persistent" and gpu in ("M40", "T4"):  # 48 / 64 KiB of shared memory per block
                assert cpp is None and row[f"{gpu} cpp binding"] == "does not fit"
                continue
            assert 0 < cpp <= python, (row["step"], gpu)  # a Python launch costs more than a C++ one
            assert row[f"{gpu} cpp binding"] in ("host", "flop", "bytes", "chain")
            assert row["H100 cpp ms"] <= cpp  # the H100 beats every other GPU on every figure


def test_the_baseline_is_bound_by_its_launches(rows):
    baseline = rows[0]
    cost = host_costs()["cpp"]["base_us"]
    assert baseline[f"H100 cpp binding"] == "host"
    assert baseline["H100 cpp ms"] == pytest.approx(baseline["launches"] * cost / 1e3, rel=1e-3)


def test_python_caps_the_ladder_on_an_h100(rows):
    cap = ladder.python_cap(rows, "H100")
    assert cap["python_step"] == cap["cpp_step"] == "persistent"
    cudnn5 = ladder.python_cap([row for row in rows if row["step"] in PUBLISHED], "H100")
    assert cudnn5["python_binding"] == "host" and cudnn5["python_ms"] > 2 * cudnn5["cpp_ms"]


# ---- the scheduler on hand-made passes -------------------------------------------------------------


def synthetic(*launches, chip="H100"):
    """A Profile of launches given as (stream, flop, footprint_in, deps)."""
    records = tuple(Launch(index=i, kernel="blocked_gemm", grid=(1, 1, 1), block=(256, 1, 1), stream=stream,
                           shared_bytes=0, flop=flop, bytes_read=fin, bytes_written=0, footprint_read=fin,
                           footprint_written=0, footprint=fin, footprint_in=fin, array_args=3, loads={}, stores={},
                           deps={j: "stream" for j in deps})
                    for i, (stream, flop, fin, deps) in enumerate(launches))
    return Profile(step="synthetic", config={}, options={}, chip=chip, default_stream="legacy", streams=3,
                   launches=records, stream_ops=())


M40_PEAK = 7.0e12


def test_concurrent_launches_share_the_flops():
    flop = int(M40_PEAK * 1e-3)  # 1 ms each at the M40's peak
    b = fl.lower_bound(synthetic((1, flop, 0, ()), (2, flop, 0, ())), "M40", host=0)
    assert b.terms["schedule_ms"] == pytest.approx(1.0)  # side by side...
    assert b.bound_ms == pytest.approx(2.0) and b.binding == "flop"  # ...but on one GPU
    starts = [entry["start_ms"] for entry in b.timeline]
    assert starts == [0.0, 0.0] and set(b.per_stream()) == {1, 2}


def test_a_chain_waits_for_itself():
    flop = int(M40_PEAK * 1e-3)
    b = fl.lower_bound(synthetic((1, flop, 0, ()), (1, flop, 0, (0,))), "M40", host=1.0)
    assert b.bound_ms == pytest.approx(2.001) and b.binding == "chain"
    assert b.critical["host_ms"] == pytest.approx(0.001) and b.critical["launches"] == 2


def test_many_small_launches_wait_for_the_host():
    b = fl.lower_bound(synthetic(*[(1, 10, 0, (i - 1,) if i else ()) for i in range(1000)]), "M40", host="python")
    per_launch = host_costs()["python"]["base_us"] + 3 * host_costs()["python"]["per_array_us"]
    assert b.binding == "host" and b.bound_ms == pytest.approx(1000 * per_launch / 1e3, rel=1e-4)


def test_data_beyond_l2_comes_from_dram():
    l2 = 3 * 2**20
    b = fl.lower_bound(synthetic((1, 0, l2 + 288_000_000, ())), "M40", host=0)  # 288 MB past L2 at 288 GB/s
    assert b.binding == "bytes" and b.bound_ms == pytest.approx(1.0)
    assert fl.lower_bound(synthetic((1, 0, l2, ())), "M40", host=0).bound_ms == 0  # it may all sit in L2


def test_the_schedule_respects_every_dependency():
    b = fl.lower_bound(fl.profile("wavefront", chip="M40"), "M40", host="python")
    by_launch = {entry["launch"]: entry for entry in b.timeline}
    p = fl.profile("wavefront", chip="M40")
    for launch in p.launches:
        entry = by_launch[launch.index]
        assert entry["start_ms"] >= entry["issued_ms"]
        assert all(entry["start_ms"] >= by_launch[j]["end_ms"] for j in launch.deps)
    for entries in b.per_stream().values():
        assert all(a["end_ms"] <= b_["start_ms"] + 1e-12 for a, b_ in zip(entries, entries[1:]))


@pytest.mark.parametrize("args, error", [
    (("not a profile", "M40"), TypeError),
    (("profile", "GTX 480"), ValueError),
    (("profile", "M40", "fortran"), ValueError),
    (("profile", "M40", -1.0), ValueError),
    (("profile", "M40", True), TypeError),
])
def test_bad_input(args, error):
    profile = synthetic((1, 10, 0, ()))
    args = tuple(profile if a == "profile" else a for a in args)
    with pytest.raises(error):
        fl.lower_bound(*args)


def test_persistent_plan_must_be_the_gpus():
    p = fl.profile("persistent", chip="H100")
    assert fl.lower_bound(p, "H100").bound_ms > 0
    with pytest.raises(ValueError, match="chip='A100'"):
        fl.lower_bound(p, "A100")


# ---- charts and the command line -------------------------------------------------------------------


def test_charts_draw(rows):
    pytest.importorskip("matplotlib", reason="drawing the charts needs matplotlib (pip install matplotlib)")
    bound = fl.lower_bound(fl.profile("wavefront", chip="M40"), "M40", "cpp")
    for fig in (charts.timeline_chart(bound, first=300, count=20), charts.ladder_bounds_chart(rows),
                charts.article_ratio_chart(ladder.article_check(rows))):
        ax = fig.axes[0]
        assert ax.get_xlabel() and ax.patches
        matplotlib.pyplot.close(fig)
    with pytest.raises(TypeError):
        charts.timeline_chart("bound")
    # the persistent step's missing bars say why in the table's words (notebook 11)
    fig = charts.ladder_bounds_chart(rows, gpus=("M40", "T4"))
    notes = [text.get_text() for ax in fig.axes for text in ax.texts]  # one GPU per panel
    assert " cannot run on the M40: no cooperative launch (no grid barrier)" in notes
    assert " cannot run on the T4: does not fit" in notes
    matplotlib.pyplot.close(fig)


def test_command_line(capsys):
    assert main(["profile", "--config", "tiny", "--gpus", "M40", "H100"]) == 0
    out = capsys.readouterr().out
    assert "wavefront" in out and "bounded them on 2 GPUs x 2 hosts" in out


def test_the_table_says_why_the_persistent_step_has_no_bound(rows):
    persistent = next(row for row in rows if row["step"] == "persistent")
    # The M40 has no cooperative launch (compute capability 5.2): no grid barrier, at any size.
    assert persistent["M40 reason"] == "no cooperative launch below compute capability 6.0 (M40: 5.2), so no grid barrier"
    assert "shared memory" in persistent["T4 reason"]  # the T4 has a grid barrier: the layer does not fit
    assert "A100 reason" not in persistent and "H100 reason" not in persistent
    text = ladder.table_text(rows, gpus=GPUS)
    assert "- = persistent cannot run on M40: no cooperative launch below compute capability 6.0" in text
    assert "- = persistent cannot run on T4: " in text
