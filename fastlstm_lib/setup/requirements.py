"""Whether this Python has what ``import fastlstm_lib`` needs, asked with the standard library alone.

Without NumPy or Numba, ``import fastlstm_lib`` still succeeds and every name asked of it raises an
ImportError naming this interpreter and the fix (``refusal``), so the doctor runs in any Python 3.
``python_problem`` is the one rule for which Python the course installs with (the pins' wheels:
TensorFlow 2.21 for 3.11-3.13, 2.16.2 on an Intel Mac up to 3.12): ``make setup`` runs this file as
a script before it creates the venv, and the doctor asks the same function.
"""

from __future__ import annotations

import importlib.util
import platform
import sys

#: What the package imports at once (Keras, TensorFlow, matplotlib and tqdm load when first used).
NEEDED = ("numpy", "numba")
#: The Pythons the pins have wheels for: (lowest, highest), and the highest on an Intel Mac.
LOWEST_PYTHON, HIGHEST_PYTHON, INTEL_MAC_HIGHEST_PYTHON = (3, 11), (3, 13), (3, 12)


def python_problem(version=None, system=None, machine=None):
    """None when the course installs with this Python here, else why not. ``version`` (major, minor),
    ``system`` as ``sys.platform``, ``machine`` as ``platform.machine()``: by default, this one."""
    version = tuple(version or sys.version_info[:2])[:2]
    system = system or sys.platform
    machine = machine or platform.machine()
    found = "%d.%d" % version
    if version < LOWEST_PYTHON or version > HIGHEST_PYTHON:
        return "Python 3.11, 3.12 or 3.13 is needed (TensorFlow's wheels), found %s" % found
    if system == "darwin" and machine == "x86_64" and version > INTEL_MAC_HIGHEST_PYTHON:
        return ("an Intel Mac needs Python 3.11 or 3.12 (TensorFlow's last Intel-Mac build, 2.16.2), found %s"
                % found)
    return None


def missing() -> list[str]:
    """The packages of ``NEEDED`` this Python cannot import."""
    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def refusal(absent: list[str]):
    """A module ``__getattr__`` that raises, for any name, the ImportError naming what is absent."""

    def __getattr__(name):
        if name.startswith("__"):  # the import system's own questions (__path__, __file__, ...)
            raise AttributeError(name)
        raise ImportError(
            f"fastlstm_lib.{name} needs {' and '.join(absent)}, which this Python ({sys.executable}) "
            f"cannot import. Run the course's Python (`make lab` uses .venv/bin/python), or ask "
            f"`{sys.executable} -m fastlstm_lib doctor` for the fix."
        )

    return __getattr__


if __name__ == "__main__":  # make setup's first step, with the Python it was given (standard library only)
    why = python_problem()
    if why:
        sys.exit("%s: %s; run make with another one, e.g. make setup PYTHON=python3.11" % (sys.executable, why))
