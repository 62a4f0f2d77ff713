"""Google Colab: ``setup``, what the set-up cell at the top of every notebook runs there
(``tools/colab_cells.py`` writes those cells). Standard library only: it runs from a fresh clone
(``runpy.run_path``) before the course is installed. It removes the preinstalled packages our install
would break (``REMOVE``), installs what Colab has too old (``INSTALL``; Colab's NumPy, TensorFlow,
Keras... are kept), installs the course with ``--no-deps`` and works in ``notebooks/``. Run again in
the same runtime, it only does the last step, silently.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys

#: Where the set-up cell clones the course on Colab (``FASTLSTM_REPO`` overrides the repository).
HOME = "/content/fastlstm"
#: What Colab has too old: numba-cuda (Colab's 0.22.2). Without ``[cu12]``: Colab has every CUDA 12
#: library it names, and pip would move nvidia-cuda-cccl-cu12 back (tools/colab_check.py shows it).
INSTALL = ("numba-cuda==0.30.4",)
#: Colab's packages whose requirement INSTALL breaks (a name alone: it needs one removed before it),
#: from ``python tools/colab_check.py --write`` (its report: data/colab/colab_check.txt).
REMOVE = {
    "cudf-cu12": "numba-cuda<0.23.0",
    "cuml-cu12": "numba-cuda<0.23.0",
    "dask-cuda": "cuda-core==0.3.*",
    "distributed-ucxx-cu12": "numba-cuda<0.23.0",
    "ucxx-cu12": "numba-cuda<0.23.0",
    "dask-cudf-cu12": "cudf-cu12",
    "raft-dask-cu12": "dask-cuda",
}

def version(name: str) -> str | None:
    """The installed version of distribution ``name``, None if it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def to_do(version=version) -> dict:
    """What ``setup`` still has to do: {"remove": [installed names of REMOVE], "install": [...], "course": bool}."""
    install = [spec for spec in INSTALL if version(spec.split("==")[0]) != spec.split("==")[1]]
    return {"remove": [name for name in REMOVE if version(name) is not None], "install": install,
            "course": version("fastlstm_lib") is None}


def summary(removed) -> str:
    """What was removed and why, for the one line ``setup`` prints ("" if nothing was)."""
    if not removed:
        return ""
    pins = sorted({REMOVE[name] for name in removed} - set(REMOVE))  # a name alone: it needed a removed one
    return (f"removed {', '.join(removed)} (Colab's RAPIDS, unused here: they pin {', '.join(pins)}, "
            f"which {INSTALL[0].replace('==', ' ')} breaks); ")


def setup(home: str = HOME, run=subprocess.run, version=version, out=print) -> dict:
    """On Colab: remove ``REMOVE``, install ``INSTALL`` and the course in ``home``; cd to its notebooks.
    Prints one line when it changed something; returns what it did (``to_do``'s answer)."""
    todo = to_do(version)
    pip = [sys.executable, "-m", "pip"]
    quiet = ["-q", "--disable-pip-version-check", "--root-user-action=ignore"]
    if todo["remove"]:
        run(pip + ["uninstall", "-y"] + quiet + todo["remove"], check=True)
    if todo["install"]:
        run(pip + ["install"] + quiet + todo["install"], check=True)
    if todo["course"]:
        run(pip + ["install"] + quiet + ["--no-deps", "-e", home], check=True)
    importlib.invalidate_caches()
    if home not in sys.path:
        sys.path.insert(0, home)  # `pip install -e` reaches a running kernel only after a restart
    os.chdir(os.path.join(home, "notebooks"))
    if todo["remove"] or todo["install"] or todo["course"]:
        stale = todo["install"] and any(name in sys.modules for name in ("numba_cuda", "numba.cuda"))
        installed = [spec.replace("==", " ") for spec in todo["install"]] + [f"the course ({home})"] * todo["course"]
        out(f"fastlstm: {summary(todo['remove'])}installed {' and '.join(installed) or 'nothing'}; "
            f"working in {home}/notebooks."
            + (" numba.cuda was imported before: Runtime > Restart session, then run from the top." if stale else ""))
    return todo
