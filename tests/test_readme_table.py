"""The README's ladder table (tools/readme_table.py) is what the library counts today: every step's
kernels, each linked to a file that exists, and its launches per pass at the article's size, by
dry runs (nothing launched, a second or two)."""

import re

import readme_table  # tools/, on the path through conftest.py

import fastlstm_lib as fl


def test_the_readme_holds_the_table_the_library_gives():
    assert readme_table.in_readme() == readme_table.table(), \
        "README.md's ladder table is stale: run `python tools/readme_table.py --write`"


def test_every_step_is_a_row_and_every_link_a_file():
    text = readme_table.in_readme()
    for name in fl.steps.names() + fl.backward.names():
        assert f"[`{name}`](" in text, name
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links and all((readme_table.ROOT / link).is_file() for link in links), links
    kernels = {link for link in links if "/kernels/" in link}  # each kernel links to its version's file
    assert kernels and all(re.fullmatch(r"fastlstm_lib/kernels/\w+/v\d+_\w+\.py", link) for link in kernels), kernels


def test_the_counts_are_the_dry_runs_of_fl_profile():
    """The table counts as ``fl.profile`` records: the same launches per kernel for a forward step."""
    counts = readme_table.pass_launches(fl.steps.get("fused_pointwise"))
    recorded = fl.profile("fused_pointwise", fl.LSTMConfig.article(), chip=readme_table.CHIP).kernels()
    by_name = {}
    for (kernel, _), n in counts.items():
        by_name[kernel] = by_name.get(kernel, 0) + n
    assert by_name == {name.lstrip("_"): n for name, n in recorded.items()}
