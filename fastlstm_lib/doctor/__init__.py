"""Will the course run here? ``python -m fastlstm_lib doctor`` (or ``run()`` from a notebook).

Checks, each problem with the one command that fixes it:

- Python, and the packages against the pins in pyproject.toml (or the installed metadata);
- the GPU: driver, device, NVVM/NVRTC (Numba's compilers), a test kernel, the grid barrier and
  its libcudadevrt (notebook 09), all asked from a fresh Python (``cuda_probe.py``); without a
  GPU, that Numba's CUDA simulator runs a kernel instead;
- the Keras backend, and which GPU it sees (asked from a fresh Python with a time limit: only
  when there is a GPU, or with ``full=True``; importing TensorFlow is the slow part);
- free disk and memory.

The exit status is 0 only when the course will run. Works on Linux, macOS (no GPU: the
simulator) and Colab; importing this module loads neither TensorFlow nor Keras.

Modules: ``probes`` (the questions to the machine, replaceable in tests), ``findings`` (answers
to findings, pure), ``cuda_probe`` (the script run in a fresh Python).
"""

from __future__ import annotations

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


__all__ = ["run", "Finding", "probes"]
