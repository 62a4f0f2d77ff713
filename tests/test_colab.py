"""Colab: every notebook opens there alone (badge + set-up cell, current), the cell does nothing
elsewhere, and what it removes is what tools/colab_check.py computed from Colab's published list."""

import contextlib
import io
import json
import os
import re
import runpy
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
COLAB = runpy.run_path(str(ROOT / "fastlstm_lib" / "setup" / "colab.py"))
CELLS = runpy.run_path(str(ROOT / "tools" / "colab_cells.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_starts_with_the_current_colab_cells(path):
    text = path.read_text(encoding="utf-8")
    assert CELLS["dumps"](CELLS["updated"](path, CELLS["REPOSITORY"], CELLS["BRANCH"])) == text, (
        f"{path.name}: run `python tools/colab_cells.py`")
    badge, setup = json.loads(text)["cells"][:2]
    url = f"https://colab.research.google.com/github/fastlstm/fastlstm/blob/{CELLS['BRANCH']}/notebooks/{path.name}"
    assert CELLS["REPOSITORY"] == "https://github.com/fastlstm/fastlstm"
    assert f"]({url})" in "".join(badge["source"]) and CELLS["BADGE"] in "".join(badge["source"])
    assert "".join(setup["source"]) == CELLS["setup_cell"]()
    assert setup["outputs"] == [] and setup["execution_count"] is not None  # nbval: it prints nothing off Colab
    later = ["".join(cell["source"]) for cell in json.loads(text)["cells"][2:]]
    assert not [source for source in later if CELLS["BADGE"] in source or source == CELLS["setup_cell"]()], (
        f"{path.name}: the Colab badge or set-up cell again below the first two cells")


def test_links_follow_the_repository():
    assert CELLS["colab_url"]("01_x.ipynb", "https://github.com/someone/fork.git", "dev") == (
        "https://colab.research.google.com/github/someone/fork/blob/dev/notebooks/01_x.ipynb")
    with pytest.raises(ValueError):
        CELLS["colab_url"]("01_x.ipynb", "https://gitlab.com/a/b")
    assert 'os.environ.get("FASTLSTM_REPO", "https://github.com/a/b")' in CELLS["setup_cell"]("https://github.com/a/b")


def test_the_setup_cell_does_nothing_off_colab():
    assert "google.colab" not in sys.modules
    namespace, before = {}, (os.getcwd(), list(sys.path), set(sys.modules), dict(os.environ))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        exec(CELLS["setup_cell"](), namespace)
    assert printed.getvalue() == ""
    assert (os.getcwd(), list(sys.path), set(sys.modules), dict(os.environ)) == before
    assert set(namespace) == {"__builtins__", "sys"}


def test_on_colab_the_cell_runs_setup_from_the_clone(tmp_path, monkeypatch):
    """With the clone already there (no git), the cell runs the clone's colab.py, by path."""
    home = tmp_path / "fastlstm"
    (home / "fastlstm_lib" / "setup").mkdir(parents=True)
    (home / "fastlstm_lib" / "setup" / "colab.py").write_text(
        "import sys\ndef setup(home):\n    sys.modules['_colab_test'].calls.append(home)\n")
    record = types.SimpleNamespace(calls=[])
    monkeypatch.setitem(sys.modules, "_colab_test", record)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    source = CELLS["setup_cell"]().replace(COLAB["HOME"], str(home))
    exec(source, {})
    assert record.calls == [str(home)]
    assert "fastlstm_lib" not in sys.modules or sys.modules["fastlstm_lib"].__file__.startswith(str(ROOT))


def test_setup_removes_installs_then_stays_quiet(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(ROOT)
    calls, printed = [], []
    colab_fresh = {"cudf-cu12": "26.2.1", "dask-cudf-cu12": "26.2.1", "numba-cuda": "0.22.2"}
    done = COLAB["setup"](str(tmp_path), run=lambda args, check: calls.append(args[3:]), version=colab_fresh.get,
                          out=printed.append)
    assert done == {"remove": ["cudf-cu12", "dask-cudf-cu12"], "install": ["numba-cuda==0.30.4"], "course": True}
    assert [call[0] for call in calls] == ["uninstall", "install", "install"]
    assert calls[0][-2:] == ["cudf-cu12", "dask-cudf-cu12"] and calls[1][-1] == "numba-cuda==0.30.4"
    assert calls[2][-3:] == ["--no-deps", "-e", str(tmp_path)]
    assert len(printed) == 1 and "\n" not in printed[0]
    assert "removed cudf-cu12, dask-cudf-cu12" in printed[0] and "numba-cuda<0.23.0" in printed[0]
    assert Path.cwd() == tmp_path / "notebooks" and sys.path[0] == str(tmp_path)

    calls.clear(), printed.clear()
    set_up = {"numba-cuda": "0.30.4", "fastlstm_lib": "0.1.0"}
    COLAB["setup"](str(tmp_path), run=lambda args, check: calls.append(args), version=set_up.get, out=printed.append)
    assert calls == [] and printed == [] and sys.path.count(str(tmp_path)) == 1


def test_the_install_is_the_course_pin():
    pin = re.search(r'"(numba-cuda==[^;"]+)', (ROOT / "pyproject.toml").read_text()).group(1)
    assert COLAB["INSTALL"] == (pin,)


def test_remove_is_what_the_emulation_computed_from_colabs_list():
    freeze = (ROOT / "data" / "colab" / "pip-freeze.gpu.txt").read_text()
    assert "github.com/googlecolab/backend-info" in freeze.splitlines()[0] and "2026-08-19" in freeze.splitlines()[1]
    pinned = {re.split(r"==| @ ", line)[0] for line in freeze.splitlines() if line and not line.startswith("#")}
    assert set(COLAB["REMOVE"]) <= pinned
    report = (ROOT / "data" / "colab" / "colab_check.txt").read_text()
    removed = re.search(r"^must be removed: (.*)$", report, re.M).group(1)
    assert dict(re.findall(r"([\w.-]+) \(needs (.*?)\)(?:, |$)", removed)) == COLAB["REMOVE"]
    assert re.search(r"^result: OK", report, re.M)
    assert "pip would put in numba-cuda 0.30.4" in report
