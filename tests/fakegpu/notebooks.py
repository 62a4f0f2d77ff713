"""Run notebooks on the fake GPU: every GPU-only cell executed, no output compared.

``PYTHONPATH=tests python -m fakegpu notebooks --gpu T4 notebooks/02_baseline.ipynb ...``
executes each notebook top to bottom in a fresh kernel that presents the fake GPU (its
environment has ``FASTLSTM_FAKE_GPU``, and tests/ on ``PYTHONPATH`` by its absolute path, so
that the kernel, started in the notebook's folder, imports ``fakegpu``), so the branches a
notebook takes on a GPU run through numba-cuda's real host path. Kernels never run there, so a
check of computed values cannot pass: before the first cell, an IPython AST transformer turns
every ``assert`` statement into a call that records a failed assertion instead of raising (the
cell goes on). Any other exception fails the notebook. The report lists, per notebook, the
seconds, the failed cell and its error, if any, and the assertions that would have checked values.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

SETUP = '''
import ast as _ast
_FAKE_GPU_ASSERTIONS = []

def _fake_gpu_assert(condition, message=None, _where=""):
    if not condition:
        _FAKE_GPU_ASSERTIONS.append(_where)

class _AssertsRecord(_ast.NodeTransformer):
    def visit_Assert(self, node):
        where = _ast.Constant(f"line {node.lineno}: " + _ast.unparse(node.test)[:120])
        call = _ast.Call(_ast.Name("_fake_gpu_assert", _ast.Load()), [node.test, node.msg or _ast.Constant(None), where], [])
        return _ast.copy_location(_ast.Expr(call), node)

get_ipython().ast_transformers.append(_AssertsRecord())
'''


@contextlib.contextmanager
def presenting(gpu: str):
    """This process's environment, while it lasts, is one whose kernels present the fake ``gpu``
    (``child_environment``): every notebook kernel started inside inherits it."""
    from . import child_environment

    changed = child_environment(gpu)
    saved = {name: os.environ.get(name) for name in ("FASTLSTM_FAKE_GPU", "NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR",
                                                      "PYTHONPATH")}
    for name in saved:
        if name in changed:
            os.environ[name] = changed[name]
        else:
            os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(path, gpu: str, timeout_s: int = 1800) -> dict:
    """Execute one notebook on the fake ``gpu``; {"notebook", "seconds", "failed_cell", "error", "value_checks"}."""
    with presenting(gpu):
        return _execute(path, gpu, timeout_s)


def run_all(paths, gpu: str, jobs: int = 1, timeout_s: int = 1800):
    """Execute ``paths`` on the fake ``gpu``, ``jobs`` kernels at a time (each notebook its own
    process); yields each report in the order of ``paths``."""
    from concurrent.futures import ThreadPoolExecutor

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    with presenting(gpu), ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(lambda path: _execute(path, gpu, timeout_s), paths)


def _execute(path, gpu: str, timeout_s: int) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(SETUP))
    notebook.cells.append(nbformat.v4.new_code_cell("print(len(_FAKE_GPU_ASSERTIONS), _FAKE_GPU_ASSERTIONS)"))
    started = time.perf_counter()
    report = {"notebook": path.name, "gpu": gpu, "failed_cell": None, "error": None, "value_checks": []}
    try:
        NotebookClient(notebook, timeout=timeout_s, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        last = notebook.cells[-1].outputs[0]["text"] if notebook.cells[-1].outputs else ""
        report["value_checks"] = last.strip()
    except CellExecutionError as error:
        failed = next((i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and any(
            output.get("output_type") == "error" for output in cell.get("outputs", []))), None)
        report["failed_cell"] = None if failed is None else failed - 1  # the index in the original notebook
        report["error"] = str(error).strip().splitlines()[-1][:500]
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report
