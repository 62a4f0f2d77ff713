"""What the stored notebooks show a reader: no errors, no log noise, no local paths, and nothing in a
compared cell that only one kind of machine prints (nbval compares those cells on CPU and GPU alike)."""

import json
import re
from pathlib import Path

import pytest

from conftest import IGNORED, output_text

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NOISE = re.compile(r"failed call to cuInit|oneDNN custom operations|absl::InitializeLog|cudart_stub|"
                   r"TqdmExperimentalWarning|IProgress not found")
LOCAL_PATH = re.compile(r"/(work|tmp|root|home|Users)/[A-Za-z0-9_.-]+")
#: Printed on one kind of machine only: allowed in cells nbval ignores, never in compared ones.
MACHINE_SPECIFIC = re.compile(r"CUDA simulator: kernels run on the CPU")
#: A progress bar's text: a live bar for the learner who runs the cell, a frozen one in a stored output.
PROGRESS_BAR = re.compile(r"\d+%\|")


def code_cells(path):
    return [cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_clean(path):
    for index, cell in enumerate(code_cells(path)):
        where = f"{path.name} code cell {index}"
        source = "".join(cell["source"])
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])), f"{where}: an error is stored"
        # Notices and progress bars are output, not errors: JupyterLab draws stderr in red boxes.
        assert not any(o.get("name") == "stderr" for o in cell.get("outputs", [])), f"{where}: stderr is stored"
        if source.strip():
            assert cell.get("execution_count") is not None, f"{where}: saved without being run"
        text = output_text(cell)
        assert not NOISE.search(text), f"{where}: log noise in the stored output"
        assert not LOCAL_PATH.search(text), f"{where}: a local path in the stored output"
        assert not PROGRESS_BAR.search(text), f"{where}: a progress bar frozen in the stored output"
        assert "NBVAL_" not in source, f"{where}: nbval's markers are cell tags (nbval-ignore-output), not comments"
        if IGNORED not in cell.get("metadata", {}).get("tags", []):
            assert not MACHINE_SPECIFIC.search(text), f"{where}: a compared cell shows the simulator's banner"



#: The project's own workings, which a learner has no use for: issue numbers, test files, the machine
#: the course was developed on.
SCAFFOLDING = re.compile(r"\b[Ii]ssue #?\d+(?![.\d])|\b[Ii]ssues #\d+|\btests/|\btest_\w+\.py|development machine")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_scaffolding_in_view(path):
    """What the learner reads (Markdown, code, stored outputs) names no issue, test file or
    development machine."""
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        shown = "".join(cell["source"]) + (output_text(cell) if cell["cell_type"] == "code" else "")
        found = SCAFFOLDING.search(shown)
        assert not found, f"{path.name} cell {index}: {found.group(0)!r} is the project's scaffolding"

def test_every_notebook_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    assert [p.name for p in NOTEBOOKS if p.name not in readme] == []


#: The ladder's lessons (one optimization each) and the most cells any of them may have; others get OTHER_CELLS.
LADDER = ("02_", "03_", "04_", "05_", "06_", "07_", "08_", "09_", "41_")
LADDER_CELLS, OTHER_CELLS = 25, 30


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_lesson_fits_one_sitting(path):
    cells = len(json.loads(path.read_text())["cells"])
    most = LADDER_CELLS if path.name.startswith(LADDER) else OTHER_CELLS
    assert cells <= most, f"{path.name}: {cells} cells, at most {most} for a {'ladder ' if most == LADDER_CELLS else ''}lesson"


#: Markdown words a learner reads in one sitting: the ladder's single-step lessons at most 1,000, the
#: baseline (which explains both yardsticks once) and the persistent kernel at most 1,500, every other
#: notebook at most 2,000.
WORD_LIMITS = {**{f"0{n}_": 1_000 for n in range(3, 9)}, "02_": 1_500, "09_": 1_500}
OTHER_WORDS = 2_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_lesson_fits_its_word_limit(path):
    cells = json.loads(path.read_text())["cells"]
    words = sum(len(re.findall(r"\S+", "".join(cell["source"]))) for cell in cells if cell["cell_type"] == "markdown")
    most = next((limit for prefix, limit in WORD_LIMITS.items() if path.name.startswith(prefix)), OTHER_WORDS)
    assert words <= most, f"{path.name}: {words} words of Markdown, at most {most}"
