"""Build the course as a static website: ``python site/build.py`` (what ``make site`` runs).

The site's sources are the stored notebooks (not run: their outputs as committed), README.md,
TEACHING.md, REFERENCES.md and this folder's index.md (the sidebar, in course order). They are
copied, modification times kept, into ``_build/src`` (laid out as in the repository, so the
notebooks' links such as ``../REFERENCES.md`` resolve), and Sphinx (``site/conf.py``: MyST-NB,
the book theme, MathJax from a local copy) writes ``_build/site``; open ``_build/site/index.html``.
Warnings are errors. Nothing is fetched from the network. Extra arguments go to sphinx-build
(e.g. ``-E`` to rebuild every page).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
BUILD = ROOT / "_build"
#: What the site shows, relative to the repository's root: the pages and the notebooks.
PAGES = ("README.md", "TEACHING.md", "REFERENCES.md")
NOTEBOOKS = "notebooks/*.ipynb"


def stage(source: Path, root: Path = ROOT) -> list[Path]:
    """Copy the site's sources from ``root`` into ``source`` (emptied first); return the copies."""
    if source.exists():
        shutil.rmtree(source)
    (source / "notebooks").mkdir(parents=True)
    copies = [shutil.copy2(root / page, source / page) for page in PAGES]
    copies += [shutil.copy2(path, source / "notebooks" / path.name) for path in sorted(root.glob(NOTEBOOKS))]
    copies.append(shutil.copy2(SITE / "index.md", source / "index.md"))
    return [Path(copy) for copy in copies]


def build(out: Path = BUILD / "site", work: Path = BUILD, extra: list[str] | None = None) -> int:
    """Stage the sources in ``work/src`` and have Sphinx build them into ``out`` (its pickled pages in
    ``work/doctrees``; warnings are errors); Sphinx's exit status."""
    from sphinx.cmd.build import build_main

    stage(work / "src")
    return build_main(["-W", "--keep-going", "-q", "-b", "html", "-c", str(SITE), "-d", str(work / "doctrees"),
                       *(extra or []), str(work / "src"), str(out)])


if __name__ == "__main__":
    status = build(extra=sys.argv[1:])
    if status == 0:
        print(f"The site: {(BUILD / 'site' / 'index.html').relative_to(ROOT)} (open it in a browser)")
    sys.exit(status)
