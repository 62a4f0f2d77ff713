"""Will the course run here? ``python -m fastlstm_lib doctor`` (or ``run()`` from a notebook).

Checks, each problem with the one command that fixes it:

- Python, and the packages against the pins in pyproject.toml (or the installed metadata);
- the GPU: driver, device, NVVM/NVRTC (Numba's compilers), a test kernel, the grid barrier and
  its libcudadevrt (notebook 09), all asked from a fresh Python (``cuda_probe.py``); without a
  GPU, that Numba's CUDA simulator runs a kernel instead;
- the Keras backend, and which GPU it sees (asked from a fresh Python with a time limit: only
  when there is a GPU, or with ``full=True``; importing TensorFlow is the slow part);
- free disk and memory.

The exit status is 0 only when the course will run. Works on Linux, Windows, macOS (no GPU:
Numba's own simulator) and Colab, in any Python 3.8 or newer: it needs only the standard library,
so the Python that lacks the course's packages (or is too old for them) is told so, and which
command fixes it, by its path. Importing it loads neither NumPy, Numba, TensorFlow nor Keras.

Modules: ``probes`` (the questions to the machine, replaceable in tests), ``pyproject`` and
``markers`` (this platform's pins), ``software`` and ``findings`` (answers to findings, pure),
``fixes`` (the commands), ``cuda_probe`` (the script run in a fresh Python) and
``simulator_probe`` (the simulator's test kernel, where Numba imports).
"""

from __future__ import annotations

import argparse

from . import findings as _findings
from . import probes
from .findings import Finding


def run(full: bool | None = None, out=print) -> int:
    """Check this machine, print the report with ``out``, return the exit status (0: will run).

    ``full``: also import the Keras backend and ask which GPU it sees (None: only on a GPU machine;
    False: never).
    """
    facts = probes.gather(full)
    found = _findings.diagnose(facts)
    out(_findings.report(facts, found))
    return _findings.verdict(facts, found)[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--full`` / ``--quick``, for ``python -m fastlstm_lib doctor``."""
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--full", action="store_true", help="also import the Keras backend and ask which GPU it sees "
                                                         "(done by default only when there is a GPU; takes seconds)")
    how.add_argument("--quick", action="store_true", help="never import the Keras backend")


def main(argv=None) -> int:
    """The command line; the exit status is ``run``'s."""
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib doctor", description="Will the course run here? "
                                     "Each problem with the command that fixes it (exit status 0 only if it will).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(full=True if args.full else (False if args.quick else None))


__all__ = ["run", "main", "Finding", "probes"]
