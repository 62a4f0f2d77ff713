"""Jargon is explained at its first use: notebook 00 holds a one-page glossary, and in every other
notebook the first time a term appears in running text (Markdown outside code, math, links and
headings) it links to that glossary. Reads the notebooks' JSON only."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GLOSSARY_NOTEBOOK = "00_setup.ipynb"
LINK = f"{GLOSSARY_NOTEBOOK}#glossary"

#: Each term of the glossary and how it shows in running text.
TERMS = {
    "GEMM": r"\bGEMMs?\b",
    "SM": r"\bSMs?\b",
    "warp": r"\b[Ww]arps?\b",
    "FFMA": r"\bFFMAs?\b",
    "occupancy": r"\b[Oo]ccupancy\b",
    "L2": r"\bL2\b",
    "latency hiding": r"\b[Ll]atency hiding\b",
}
#: What is not running text: fenced code, code spans, math, link targets and texts, HTML tags.
NOT_TEXT = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\[[^\]]*\]\([^)]*\)|<[^>]+>", re.S)


def occurrences(markdown: str, pattern: str) -> list[tuple[int, int, bool]]:
    """(start, end, linked) of each use of a term in ``markdown``: in running text (outside NOT_TEXT
    and headings), unlinked; or as the text of a link to the glossary, linked."""
    found = [(m.start(), m.end(), True) for m in re.finditer(r"\[([^\]]*)\]\(([^)]*)\)", markdown)
             if re.search(pattern, m.group(1)) and m.group(2).endswith(LINK)]
    headings = [(m.start(), m.end()) for m in re.finditer(r"^#.*$", markdown, re.M)]
    position = 0
    for part in [*NOT_TEXT.finditer(markdown), None]:
        end = part.start() if part else len(markdown)
        for match in re.finditer(pattern, markdown[position:end]):
            start = position + match.start()
            if not any(h0 <= start < h1 for h0, h1 in headings):
                found.append((start, position + match.end(), False))
        position = part.end() if part else end
    return sorted(found)


def first_uses(cells) -> dict:
    """{term: (cell index, start, end, linked)} of each term's first use in the notebook's Markdown."""
    first = {}
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        for term, pattern in TERMS.items():
            uses = occurrences(text, pattern)
            if term not in first and uses:
                first[term] = (index, *uses[0])
    return first


def test_the_glossary_defines_every_term():
    cells = json.loads((ROOT / "notebooks" / GLOSSARY_NOTEBOOK).read_text())["cells"]
    glossary = next("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
                    and '<a id="glossary"></a>' in "".join(c["source"]))
    for term in TERMS:
        assert re.search(rf"\*\*{re.escape(term)}\*\*", glossary, re.I), f"the glossary does not define {term}"
    assert len(glossary.split()) <= 500, "the glossary is one page"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name != GLOSSARY_NOTEBOOK], ids=lambda p: p.name)
def test_each_term_links_the_glossary_at_its_first_use(path):
    cells = json.loads(path.read_text())["cells"]
    unlinked = []
    for term, (index, start, end, linked) in first_uses(cells).items():
        if not linked:
            text = "".join(cells[index]["source"])
            unlinked.append(f"{term!r} in cell {index}: ...{text[max(0, start - 40):end + 40]}...")
    assert not unlinked, f"{path.name}: link each first use to the glossary, [term]({LINK}):\n" + "\n".join(unlinked)
