"""Sphinx's configuration for the course's website (``make site``; ``site/build.py`` stages the sources).

The stored notebooks are shown as committed (never run), with MyST-NB; the book theme gives the
sidebar (``index.md``'s tables of contents, in course order) and the search; MathJax comes from a
local copy (sphinx-mathjax-offline), so the pages need no network. Two fixes to what MyST makes of
the course's Markdown, both here so that the notebooks stay as nbval compares them:

- a link to a file of the repository that is not a page (``fastlstm_lib/.../v3_exact.py``) points
  to that file on GitHub (the address ``tools/colab_cells.py`` holds for the Colab badges);
- a raw ``<a id="glossary"></a>`` before a heading whose own anchor is the same (``myst_heading_anchors``)
  is dropped, so that the id is the section's alone.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path, PurePosixPath

from docutils import nodes
from sphinx import addnodes

ROOT = Path(__file__).resolve().parents[1]
COLAB_CELLS = runpy.run_path(str(ROOT / "tools" / "colab_cells.py"))
#: Where a repository file that is not a page is shown: on GitHub, at the branch the Colab badges open.
BLOB = f"{COLAB_CELLS['REPOSITORY']}/blob/{COLAB_CELLS['BRANCH']}/"

project = "fastlstm"
author = "the fastlstm authors"
copyright = "the fastlstm authors (MIT License)"
html_title = "fastlstm: why cuDNN's LSTM is fast"
root_doc = "index"
language = "en"

extensions = ["myst_nb", "sphinx-mathjax-offline"]
nb_execution_mode = "off"  # the outputs as stored (nbval checks them), never run here
nb_ipywidgets_js = {}  # no widget outputs are stored; nothing to fetch from a CDN
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3  # 00_setup.ipynb#glossary and its kind resolve to their sections

html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "use_download_button": False,
    "use_fullscreen_button": False,
}
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
# TEACHING.md's shell lines hold a placeholder with an apostrophe ("<the course's repository>"): Pygments
# then highlights them in its relaxed mode, which is fine; not a warning.
suppress_warnings = ["misc.highlighting_failure"]

RAW_ANCHOR = re.compile(r'\s*<a id="([^"]+)"></a>\s*')


def repository_file(docname: str, target: str) -> str | None:
    """``target``, a link in page ``docname``, as a path from the repository's root when it names a
    file there (not a page); else None."""
    if "://" in target or target.startswith(("#", "/")):
        return None
    path = (ROOT / PurePosixPath(docname).parent / target.split("#", 1)[0]).resolve()
    if not path.is_file() or ROOT not in path.parents:
        return None
    return path.relative_to(ROOT).as_posix()


def link_repository_files(app, doctree) -> None:
    """Links to files of the repository that are not pages: to GitHub (MyST leaves them unresolved)."""
    for node in list(doctree.findall(addnodes.pending_xref)):
        if node.get("reftype") != "myst" or node.get("refdomain"):
            continue
        path = repository_file(app.env.docname, node["reftarget"])
        if path is None:
            continue
        link = nodes.reference("", "", *node.children, refuri=BLOB + path, internal=False)
        node.replace_self(link)


def drop_doubled_anchors(app, doctree) -> None:
    """A raw ``<a id="X"></a>`` (its own paragraph: MyST splits it in two raw nodes) where a section's
    own id is X: dropped, so that one element has the id."""
    section_ids = {i for section in doctree.findall(nodes.section) for i in section["ids"]}
    for paragraph in list(doctree.findall(nodes.paragraph)):
        parts = paragraph.children
        if not parts or not all(isinstance(part, nodes.raw) and part.get("format") == "html" for part in parts):
            continue
        match = RAW_ANCHOR.fullmatch("".join(part.astext() for part in parts))
        if match and match.group(1) in section_ids:
            paragraph.parent.remove(paragraph)


def setup(app):
    app.connect("doctree-read", link_repository_files)
    app.connect("doctree-read", drop_doubled_anchors)
    return {"parallel_read_safe": True}

