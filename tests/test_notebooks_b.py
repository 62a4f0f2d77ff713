"""What notebooks 05-07 add to the library: the GEMM timed with B in each layout (notebook 06)."""

import pytest

import fastlstm_lib as fl
from fastlstm_lib.gemm_bench import B_LAYOUTS, time_b_layouts


def test_time_b_layouts_checks_every_layout_on_odd_shapes():
    rows = time_b_layouts({"odd": (5, 19, 11), "one row": (1, 9, 3)}, warmup=0, repeats=1)
    assert [(row["shape"], row["layout"]) for row in rows] == [
        (shape, layout) for shape in ("odd", "one row") for layout, _, _ in B_LAYOUTS]
    assert all(row["relative_error"] <= 1e-5 for row in rows)
    assert (rows[0]["m"], rows[0]["n"], rows[0]["k"]) == (5, 19, 11)
    assert all(row["time_ms"]["median"] > 0 and row["device"]["name"] for row in rows)
    assert all(row["times_meaningful"] is not fl.is_simulator() for row in rows)


@pytest.mark.parametrize("kwargs, error", [
    ({"shapes": {}}, TypeError),
    ({"shapes": {"bad": (4, 4)}}, ValueError),
    ({"shapes": {"bad": (4, 0, 4)}}, ValueError),
    ({"shapes": {"bad": (4, 4.0, 4)}}, TypeError),
    ({"repeats": 0}, ValueError),
    ({"warmup": -1}, ValueError),
])
def test_time_b_layouts_rejects_bad_arguments(kwargs, error):
    kwargs = {"shapes": {"ok": (2, 3, 4)}, **kwargs}
    with pytest.raises(error):
        time_b_layouts(**kwargs)
