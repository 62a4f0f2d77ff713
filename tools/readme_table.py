"""The README's table of the ladder: each step, the kernels it launches (linked to their files),
its launches per pass at the article's size, and its time where ``data/results/`` has a GPU
measurement of it.

    python tools/readme_table.py            # print the table
    python tools/readme_table.py --write    # put it in README.md, between its two markers

Launches are counted by the library's dry run (``fastlstm_lib.course.profile.record.record_pass``, what
``fl.profile`` records a pass with): each step's own ``setup`` outside the count, then one pass
of its ``run``, every launch recorded, none performed, with an H100's launch geometry (which
GEMM version runs where depends on the chip's SMs; the counts do not). A second of CPU, no GPU.
``tests/test_readme_table.py`` checks that the README holds what this prints.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN = "<!-- ladder table: made by `python tools/readme_table.py --write`; tests/test_readme_table.py checks it -->"
END = "<!-- end of the ladder table -->"
#: The GPU whose launch geometry the dry runs record: a current one (the article's M40 has no grid
#: barrier, so no persistent step).
CHIP = "H100"


def pass_launches(step, *, chip: str = CHIP, **options) -> collections.Counter:
    """(name, file: ``kernel_label``) -> launches in one pass of ``step`` at the article's size, as
    ``fl.profile`` records it (``record_pass``: ``setup`` first, uncounted), kernels kept as objects."""
    from fastlstm_lib.config import LSTMConfig
    from fastlstm_lib.gpus import chip as chip_limits
    from fastlstm_lib.course.profile.record import record_pass

    recording, _ = record_pass(step, LSTMConfig.article(), chip_limits(chip), options)
    return collections.Counter(kernel_label(call.kernel) for call in recording.launches)


def kernel_label(kernel) -> tuple[str, str]:
    """(the kernel's name, its file from the repository's root)."""
    function = kernel.py_func
    return function.__name__.lstrip("_"), repository_path(function)


def repository_path(thing) -> str:
    """The file that defines a function or class, from the repository's root."""
    return Path(inspect.getfile(thing)).resolve().relative_to(ROOT).as_posix()


def measured(name: str, timed: str | None = None) -> str:
    """The median time of the newest committed GPU measurement of ``name`` at the article's size
    (the backward pass alone where ``timed`` says so), or "not measured"."""
    from fastlstm_lib.config import LSTMConfig
    from fastlstm_lib.course.results import committed_results

    article = LSTMConfig.article().as_dict()
    found = [r for r in committed_results() if r["step"] == name and r.get("config") == article
             and r.get("times_meaningful") and (r.get("options") or {}).get("timed") == timed]
    if not found:
        return "not measured"
    newest = found[-1]
    return f"{newest['time_ms']['median']:.2f} ms ({newest['device']['name']})"


def row(name: str, step, counts: collections.Counter, timed: str | None = None) -> str:
    """One line of the table: the step (its number and name, linked to its file), its kernels, file
    by file and most launched first, each linked to its file, the launches and the measurement."""
    path = repository_path(type(step))
    number = Path(path).stem.split("_")[0]
    kernels = "; ".join(f"[`{kernel}`]({file}) ×{n:,}"
                        for (kernel, file), n in sorted(counts.items(), key=lambda kv: (kv[0][1], -kv[1], kv[0])))
    return f"| {number} [`{name}`]({path}) | {kernels} | {sum(counts.values()):,} | {measured(name, timed)} |"


def table() -> str:
    """The README's section between its markers (markers excluded), as Markdown."""
    import fastlstm_lib as fl
    from fastlstm_lib.config import LSTMConfig

    cfg = LSTMConfig.article()
    header = ["| step | kernels (launches of each) | launches per pass | measured |", "|---|---|---|---|"]
    size = ", ".join(f"{key} {value}" for key, value in cfg.as_dict().items())
    lines = [f"Forward ladder (notebooks 02-09), one pass at the article's size ({size}), recorded with an "
             f"{CHIP}'s launch geometry:", ""] + header
    lines += [row(name, fl.steps.get(name), pass_launches(fl.steps.get(name))) for name in fl.steps.names()]
    first = fl.backward.get(fl.backward.names()[0])
    forward = sum(pass_launches(first).values()) - sum(pass_launches(first, timed="backward").values())
    lines += ["", f"Backward ladder (notebook 41), same size: the backward pass alone (`timed=\"backward\"`); the "
              f"forward pass that keeps its gates for it (`backward/training_forward.py`) adds {forward:,} launches.",
              ""] + header
    lines += [row(name, fl.backward.get(name), pass_launches(fl.backward.get(name), timed="backward"), "backward")
              for name in fl.backward.names()]
    lines += ["", "Each kernel links to its version's file, which opens with what the version adds and the steps that launch it."]
    return "\n".join(lines) + "\n"


def split_readme(text: str) -> tuple[str, str, str]:
    """(README.md up to its first marker's line, what is between the markers' lines, from the last marker on)."""
    if text.count(BEGIN + "\n") != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"README.md must hold, once each and in this order, the lines {BEGIN!r} and {END!r}")
    before, rest = text.split(BEGIN + "\n", 1)
    inside, after = rest.split(END, 1)
    return before + BEGIN + "\n", inside, END + after


def in_readme() -> str:
    """What README.md holds between the markers."""
    return split_readme(README.read_text())[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = parser.parse_args(argv)
    made = table()
    if not args.write:
        print(made, end="")
        return 0
    before, old, after = split_readme(README.read_text())
    README.write_text(before + made + after)
    print(f"README.md: the ladder table {'unchanged' if old == made else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
