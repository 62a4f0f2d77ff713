"""``make setup``'s first question: can the course be installed with this Python? (standard library only)

Exit status 0 when it can; otherwise one line naming the interpreter, what was found and what to
run instead. The bounds follow the pins' wheels (``python tools/resolve_platforms.py`` prints them):
TensorFlow 2.21 has wheels for Python 3.11-3.13; on an Intel Mac the last TensorFlow (2.16.2)
stops at 3.12.
"""

import platform
import sys

LOWEST, HIGHEST, INTEL_MAC_HIGHEST = (3, 11), (3, 13), (3, 12)


def problem(version=None, system=None, machine=None):
    """None when the course installs with this Python, else why not (one sentence)."""
    version = tuple(version or sys.version_info[:2])
    system = system or sys.platform
    machine = machine or platform.machine()
    found = "%d.%d" % version[:2]
    if version < LOWEST or version > HIGHEST:
        return "Python 3.11, 3.12 or 3.13 is needed (TensorFlow's wheels), found %s" % found
    if system == "darwin" and machine == "x86_64" and version > INTEL_MAC_HIGHEST:
        return ("an Intel Mac needs Python 3.11 or 3.12 (TensorFlow's last Intel-Mac build, 2.16.2), found %s"
                % found)
    return None


if __name__ == "__main__":
    why = problem()
    if why:
        sys.exit("%s: %s; run make with another one, e.g. make setup PYTHON=python3.11" % (sys.executable, why))
