"""(Re)write the first two cells of every notebook: the "Open in Colab" badge and the Colab set-up cell.

    python tools/colab_cells.py [--repository URL] [--branch NAME] [--check]

Both cells come from here (REPOSITORY, BRANCH): the one place the course's address is written; the
set-up cell runs fastlstm_lib/setup/colab.py's setup() from the clone. Running it again changes nothing (the cells are found by their ids, "colab-badge" and
"colab-setup", and replaced). The set-up cell is stored as run, without output: off Colab it prints
nothing, so nbval finds what it stored. With --check, it writes nothing and exits 1 if a notebook
is not current. The notebooks keep Jupyter's own formatting (indent 1, sorted keys, UTF-8).
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
COLAB = runpy.run_path(str(ROOT / "fastlstm_lib" / "setup" / "colab.py"))  # without importing fastlstm_lib (Numba)
BADGE_ID, SETUP_ID = "colab-badge", "colab-setup"
#: The course's public repository and branch: the clone, and every "Open in Colab" link.
REPOSITORY = "https://github.com/fastlstm/fastlstm"
BRANCH = "main"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
#: Notebook 00's Colab cells from before this tool (ids as saved): replaced by the standard ones.
OLD_CELLS = {"00_setup.ipynb": ("## On Google Colab", 'if "google.colab" in sys.modules:  # Colab only')}


def colab_url(notebook: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The address that opens ``notebooks/<notebook>`` of the repository on Colab."""
    prefix = "https://github.com/"
    if not repository.startswith(prefix):
        raise ValueError(f"Colab opens notebooks from GitHub: {repository!r} does not start with {prefix}")
    path = repository[len(prefix):].rstrip("/").removesuffix(".git")
    return f"https://colab.research.google.com/github/{path}/blob/{branch}/notebooks/{notebook}"


def badge_markdown(notebook: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The first cell of every notebook: the "Open in Colab" badge, and what the next cell does."""
    return (f"[![Open In Colab]({BADGE})]({colab_url(notebook, repository, branch)})\n"
            "On Colab, the next cell fetches and installs the course (once per runtime); "
            "elsewhere it does nothing.")


def setup_cell(repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The second cell of every notebook: on Colab, clone the course and run ``setup`` from the clone."""
    return f'''import sys

if "google.colab" in sys.modules:  # on Colab only: fetch the course, install what Colab lacks (fastlstm_lib/setup/colab.py)
    import os, runpy, subprocess
    home, repository = "{COLAB["HOME"]}", os.environ.get("FASTLSTM_REPO", "{repository}")
    if not os.path.isdir(home):
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "{branch}", repository, home], check=True)
    runpy.run_path(f"{{home}}/fastlstm_lib/setup/colab.py")["setup"](home)'''


def lines(text: str) -> list[str]:
    """Jupyter's way of storing a cell's source: one string per line, each but the last with its newline."""
    return text.splitlines(keepends=True)


def colab_cells(notebook: str, repository: str, branch: str) -> list[dict]:
    return [
        {"cell_type": "markdown", "id": BADGE_ID, "metadata": {},
         "source": lines(badge_markdown(notebook, repository, branch))},
        {"cell_type": "code", "execution_count": 1, "id": SETUP_ID, "metadata": {}, "outputs": [],
         "source": lines(setup_cell(repository, branch))},
    ]


#: Notebook 00's doctor cell pointed at "the next cell" for Colab's set-up, which is now above it.
REWORDED = {"00_setup.ipynb": [
    ("(on Colab: run the next cell first, then this one again)", "(on Colab: run the set-up cell above first)"),
    ('(on Colab: the "\n          "next cell), then this cell again.', '(on Colab: the "\n          "set-up cell above), then this cell again.'),
]}


def is_old_colab_cell(name: str, cell: dict) -> bool:
    source = "".join(cell["source"])
    return any(source.startswith(marker) or f"\n{marker}" in source for marker in OLD_CELLS.get(name, ()))


def updated(path: Path, repository: str, branch: str) -> dict:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = [cell for cell in notebook["cells"]
             if cell.get("id") not in (BADGE_ID, SETUP_ID) and not is_old_colab_cell(path.name, cell)]
    for cell in cells:
        source = "".join(cell["source"])
        for old, new in REWORDED.get(path.name, ()):
            if old in source:
                source = source.replace(old, new)
                cell["source"] = lines(source)
    notebook["cells"] = colab_cells(path.name, repository, branch) + cells
    return notebook


def dumps(notebook: dict) -> str:
    return json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", default=REPOSITORY, help="the course's GitHub URL (default: %(default)s)")
    parser.add_argument("--branch", default=BRANCH, help="default: %(default)s")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is not current")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        text = dumps(updated(path, args.repository, args.branch))
        if text != path.read_text(encoding="utf-8"):
            stale.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    verb = "not current" if args.check else "rewritten"
    print(f"{len(stale)} notebook(s) {verb}" + (f": {', '.join(stale)}" if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
