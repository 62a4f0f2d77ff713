"""The course's website (``make site``), read in a real browser: headless Chromium, driven by
playwright, on a copy of the site built here and served on localhost.

Every page is visited once (``visits``): the sidebar lists every notebook in course order, every
image loads, the maths typesets with no MathJax error, each notebook's Colab badge opens that
notebook on Colab, and no request leaves localhost but the badge's image (answered here with a
stand-in: the test needs no network). Then the search finds "wavefront" and a glossary link lands
on its section. A copy of the site with one plot's file deleted shows that the image check catches it.

Marked ``site``: ``make test`` leaves it out, ``make test-site`` (and CI) runs it. It skips, saying
what to install, where Sphinx, playwright or a Chromium is missing; with FASTLSTM_REQUIRE_BROWSER=1
(CI, where it has a Chromium) it fails instead. ``FASTLSTM_CHROMIUM`` names a
Chromium of your own; otherwise the first of chromium, chromium-browser, google-chrome on the PATH,
else the one ``python -m playwright install chromium`` downloads.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import http.server
import json
import os
import runpy
import shutil
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.site,
              # the theme and MyST on Sphinx 9: attributes Sphinx 11 will remove (theirs to change)
              pytest.mark.filterwarnings("ignore:.*Check CHANGES for Sphinx API modifications")]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = ["index.html", "README.html", "TEACHING.html", "REFERENCES.html"] + [f"notebooks/{p.stem}.html" for p in NOTEBOOKS]
CELLS = runpy.run_path(str(ROOT / "tools" / "colab_cells.py"))
INSTALL_SITE = 'pip install -e ".[site]" (or: make site)'
INSTALL_CHROMIUM = ("apt-get install -y --no-install-recommends chromium (Debian, Ubuntu), "
                    "or python -m playwright install chromium, or FASTLSTM_CHROMIUM=/path/to/chrome")
#: The badge's image, answered with this stand-in instead of from Colab.
BADGE_STAND_IN = b'<svg xmlns="http://www.w3.org/2000/svg" width="117" height="20"><rect width="117" height="20"/></svg>'
#: MathJax loaded and the page typeset (its promise), or a page without maths (Sphinx loads no MathJax there).
MATHJAX_DONE = ("!document.querySelector('script[src*=\"mathjax\"]') || "
                "(window.MathJax && MathJax.startup && MathJax.startup.promise)")
#: The images of the page that did not load: src and natural width, each.
BROKEN_IMAGES = "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
#: The maths on the page: Sphinx's math elements, those MathJax typeset, and MathJax's error marks.
MATHS = """(() => {
  const maths = Array.from(document.querySelectorAll('span.math, div.math'));
  return {math: maths.length,
          typeset: maths.filter(m => m.querySelector('mjx-container')).length,
          errors: Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]'))
                       .map(e => e.getAttribute('data-mjx-error') || e.textContent)};
})()"""


def missing(reason: str):
    """What the test cannot do here: a skip, or a failure where FASTLSTM_REQUIRE_BROWSER=1 (CI)."""
    if os.environ.get("FASTLSTM_REQUIRE_BROWSER") == "1":
        pytest.fail(f"FASTLSTM_REQUIRE_BROWSER=1, but {reason}")
    pytest.skip(reason)


def importable(module: str, reason: str):
    """``module`` imported, or ``missing`` with ``reason`` and the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing(f"{reason} ({error}): {INSTALL_SITE}")


def chromium() -> str | None:
    """The Chromium to drive: FASTLSTM_CHROMIUM, else one on the PATH; None for playwright's own."""
    if os.environ.get("FASTLSTM_CHROMIUM"):
        return os.environ["FASTLSTM_CHROMIUM"]
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Python's static file server, without a log line per request."""

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site, built here from the stored notebooks (as ``make site`` builds it), in a temporary folder."""
    importable("sphinx", "the site needs Sphinx")
    importable("myst_nb", "the site needs MyST-NB")
    work = tmp_path_factory.mktemp("site")
    build = runpy.run_path(str(ROOT / "site" / "build.py"))["build"]
    assert build(out=work / "site", work=work) == 0, "the site does not build without warnings (make site)"
    return work / "site"


@pytest.fixture(scope="module")
def browser():
    sync_api = importable("playwright.sync_api", "the browser test needs playwright")
    with sync_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=chromium(), headless=True)
        except sync_api.Error as error:
            missing(f"no Chromium to run ({str(error).splitlines()[0]}): {INSTALL_CHROMIUM}")
        yield browser
        browser.close()


@contextlib.contextmanager
def serve(folder: Path):
    """``folder`` served on localhost, from a thread; yields its address."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class Reader:
    """A browser tab on a served site that records every request and keeps them all on this machine:
    the Colab badge gets the stand-in, anything else not on localhost is refused."""

    def __init__(self, browser, base: str):
        self.base, self.outside = base, []
        self.context = browser.new_context()
        self.context.route("**/*", self.route)
        self.page = self.context.new_page()

    def route(self, route):
        url = route.request.url
        if url.startswith(self.base):
            route.continue_()
            return
        self.outside.append(url)
        if url == CELLS["BADGE"]:
            route.fulfill(status=200, content_type="image/svg+xml", body=BADGE_STAND_IN)
        else:
            route.abort()

    def open(self, page: str) -> None:
        self.page.goto(self.base + page, wait_until="load")
        self.page.wait_for_function(MATHJAX_DONE)
        self.page.evaluate(MATHJAX_DONE)  # its promise: typesetting done

    def close(self):
        self.context.close()


def visit(reader: Reader, page: str) -> dict:
    """What a reader of ``page`` gets: its images that did not load, its maths, its links."""
    reader.open(page)
    links = reader.page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    badges = reader.page.evaluate(
        "Array.from(document.querySelectorAll('article a')).filter(a => a.querySelector('img')).map("
        "a => [a.getAttribute('href'), a.querySelector('img').getAttribute('src')])")
    return {"broken": reader.page.evaluate(BROKEN_IMAGES), "maths": reader.page.evaluate(MATHS),
            "images": reader.page.evaluate("document.images.length"), "links": links, "badges": badges}


@pytest.fixture(scope="module")
def site(browser, built):
    """Every page of the built site, visited once; and the requests that would have left localhost."""
    with serve(built) as base:
        reader = Reader(browser, base)
        visits = {page: visit(reader, page) for page in PAGES}
        reader.open("index.html")
        sidebar = reader.page.evaluate(
            "Array.from(document.querySelectorAll('nav.bd-docs-nav a')).map(a => a.getAttribute('href'))")
        yield {"base": base, "reader": reader, "visits": visits, "sidebar": sidebar}
        reader.close()


def test_the_site_has_every_page(built):
    assert not [page for page in PAGES if not (built / page).is_file()]
    assert not [p for p in (built / "notebooks").glob("*.html") if p.name not in {f"{n.stem}.html" for n in NOTEBOOKS}]


def test_the_sidebar_lists_every_notebook_in_course_order(site):
    notebooks = [href for href in site["sidebar"] if href.startswith("notebooks/")]
    assert notebooks == [f"notebooks/{p.stem}.html" for p in NOTEBOOKS]
    assert {"README.html", "TEACHING.html", "REFERENCES.html"} <= set(site["sidebar"])


def test_every_image_loads(site):
    broken = {page: seen["broken"] for page, seen in site["visits"].items() if seen["broken"]}
    assert not broken, f"images that did not load: {broken}"
    # Every plot the notebooks store is on its page (and the badge): a page that lost an output shows here.
    for path in NOTEBOOKS:
        plots = sum("image/png" in output.get("data", {}) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
                    for output in cell.get("outputs", []))
        assert site["visits"][f"notebooks/{path.stem}.html"]["images"] == plots + 1, path.name


def test_the_maths_typesets_without_error(site):
    for page, seen in site["visits"].items():
        maths = seen["maths"]
        assert maths["typeset"] == maths["math"] and not maths["errors"], (page, maths)
    assert all(site["visits"][f"notebooks/{p.stem}.html"]["maths"]["math"] > 0 for p in NOTEBOOKS[1:3])


def test_each_notebook_page_opens_its_notebook_on_colab(site):
    for path in NOTEBOOKS:
        badges = site["visits"][f"notebooks/{path.stem}.html"]["badges"]
        assert [CELLS["colab_url"](path.name), CELLS["BADGE"]] in badges, (path.name, badges)


def test_no_request_leaves_localhost_but_the_colab_badge(site):
    assert site["reader"].outside, "the Colab badges were not requested: is the route on?"
    assert set(site["reader"].outside) == {CELLS["BADGE"]}


def test_the_search_finds_a_term_of_a_notebook(site):
    page = site["reader"].page
    page.goto(site["base"] + "search.html?q=wavefront", wait_until="load")
    page.wait_for_selector("#search-results ul.search li a", timeout=30_000)
    found = page.evaluate("Array.from(document.querySelectorAll('#search-results ul.search li a')).map(a => a.getAttribute('href'))")
    assert "notebooks/08_wavefront.html" in found, found


def test_a_glossary_link_lands_on_its_section(site):
    reader = site["reader"]
    reader.open("notebooks/02_baseline.html")
    reader.page.locator('article a[href="00_setup.html#glossary"]').first.click()
    reader.page.wait_for_url("**/notebooks/00_setup.html#glossary")
    reader.page.wait_for_function(MATHJAX_DONE)
    reader.page.evaluate(MATHJAX_DONE)
    landed = reader.page.evaluate("""(() => {
      const target = document.getElementById(location.hash.slice(1));
      const top = target.getBoundingClientRect().top;
      return {tag: target.tagName, heading: target.querySelector('h1, h2, h3').textContent,
              same_id: document.querySelectorAll('[id="glossary"]').length, top: top, height: innerHeight};
    })()""")
    assert landed["tag"] == "SECTION" and landed["heading"].startswith("Glossary"), landed
    assert landed["same_id"] == 1, landed  # the notebook's own <a id="glossary"> is not doubled
    assert 0 <= landed["top"] < landed["height"] / 2, landed  # scrolled to, near the top of the window


def test_every_link_into_the_site_names_an_anchor_that_is_there(site, built):
    # Links between pages (the glossary's, "notebook 11", REFERENCES.md) name a page and an id that exist.
    missing = []
    for page, seen in site["visits"].items():
        for link in seen["links"]:
            if not link.startswith(site["base"]) or "#" not in link:
                continue
            target, anchor = link[len(site["base"]):].split("#", 1)
            target = target or page
            if anchor and f'id="{anchor}"' not in (built / target).read_text(encoding="utf-8"):
                missing.append((page, link))
    assert not missing, missing


def test_the_image_check_catches_a_plot_that_is_missing(built, browser, tmp_path):
    """A copy of the site with the file of one notebook's plot deleted: its page's image check fails."""
    copy = tmp_path / "site"
    shutil.copytree(built, copy)
    page = "notebooks/08_wavefront.html"
    html = (copy / page).read_text(encoding="utf-8")
    plot = html.split('src="../_images/', 1)[1].split('"', 1)[0]
    (copy / "_images" / plot).unlink()
    with serve(copy) as base:
        reader = Reader(browser, base)
        try:
            broken = visit(reader, page)["broken"]
        finally:
            reader.close()
    assert broken == [f"{base}_images/{plot}"], broken
