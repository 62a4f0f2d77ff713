"""Will the course run here? ``python -m fastlstm_lib doctor`` (or ``run()`` from a notebook).

Checks Python, the packages against the pins, the GPU (or Numba's CUDA simulator), the Keras
backend, disk and memory, and prints each problem with the command that fixes it; the exit status is
0 only when the course will run. Standard library only, in any Python 3: a Python without the
course's packages, or too old for them, is told so. ``probes`` asks the machine, ``findings`` judges.
"""

from __future__ import annotations

import argparse

from . import findings, probes


def run(full: bool | None = None, out=print) -> int:
    """Check this machine, print the report with ``out``, return the exit status (0: will run).
    ``full``: also import the Keras backend and ask which GPU it sees (None: only on a GPU machine)."""
    facts = probes.gather(full)
    found = findings.diagnose(facts)
    out(findings.report(facts, found))
    return findings.verdict(facts, found)[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true", help="also import the Keras backend and ask which GPU it "
                                                            "sees (done by default only when there is a GPU)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib doctor", description="Will the course run here? "
                                     "Each problem with the command that fixes it (exit status 0 only if it will).")
    add_arguments(parser)
    return run(full=True if parser.parse_args(argv).full else None)
