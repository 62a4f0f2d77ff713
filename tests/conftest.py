"""Shared fixtures. Importing fastlstm_lib first puts Numba on its CUDA simulator when no GPU."""

import sys
from pathlib import Path

import numpy as np
import pytest

import fastlstm_lib as fl

#: tools/ on the path: the tests import the course's tools (compile_matrix, gpurun, readme_table) from there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

#: Odd sizes: no multiple of any tile (4 or 16) or block size (32 or 256).
ODD = fl.LSTMConfig(batch=3, seq_len=5, input_size=5, hidden=7, layers=2)
#: Smaller still, for tests that only need *a* run (the baseline makes 25 launches per layer-step).
MINI = fl.LSTMConfig(batch=1, seq_len=2, input_size=3, hidden=5, layers=1)


def bench_result(step, ms, device="NVIDIA H100 80GB HBM3"):
    """A ``fl.bench`` result of ``step`` at the article's size, as a GPU run would commit it."""
    return {"step": step, "config": fl.LSTMConfig.article().as_dict(), "device": {"name": device},
            "times_meaningful": True, "time_ms": {"median": ms, "min": ms, "max": ms}, "gflops": 1.0,
            "relative_error": {"after": 0.0}}


#: The cell tag nbval reads: run the cell, do not compare its output.
IGNORED = "nbval-ignore-output"


def output_text(cell) -> str:
    """A stored code cell's output text, as a reader sees it: stream text and text/plain."""
    parts = []
    for output in cell.get("outputs", []):
        for text in (output.get("text", ""), output.get("data", {}).get("text/plain", "")):
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def problem(cfg, seed=0):
    params = fl.init_params(cfg, seed=seed)
    x = fl.random_input(cfg, seed=seed + 1)
    return x, params


def persistent_layer_case(hidden, batch, steps, seed=5):
    """One layer's problem for a persistent kernel: (x, params, [x_gates (T, B, 4H), U, bias] on the device)."""
    from numba import cuda

    cfg = fl.LSTMConfig(batch=batch, seq_len=steps, input_size=3, hidden=hidden, layers=1)
    x, params = problem(cfg, seed=seed)
    kernel, recurrent, bias = params[0]
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2)).astype(np.float32)
    return x, params, [cuda.to_device(np.ascontiguousarray(a, np.float32)) for a in (x_gates, recurrent, bias)]


def persistent_layer_error(plan, hidden, batch, steps, against="float64"):
    """Launch ``plan`` on ``persistent_layer_case``'s problem, hs poisoned with NaN first (every element
    must be written): its relative error against the float64 reference or Keras (``against``)."""
    from numba import cuda

    x, params, arrays = persistent_layer_case(hidden, batch, steps)
    hs = cuda.to_device(np.full((steps, batch, hidden), np.nan, np.float32))
    plan.launch(*arrays, hs)
    want = fl.reference_forward(x, params) if against == "float64" else fl.keras_forward(x, params).astype(np.float64)
    return fl.relative_error(hs.copy_to_host().transpose(1, 0, 2), want)


@pytest.fixture(scope="session")
def odd_problem():
    x, params = problem(ODD)
    return x, params, fl.reference_forward(x, params)


@pytest.fixture(scope="session")
def keras_available():
    pytest.importorskip("keras")
    return True


def pip_compilers_missing() -> str | None:
    """Why the CUDA compilers from pip (the test extra's nvidia-* wheels: CUDA 13's and CUDA 12's NVVM,
    libdevice and ptxas, CUDA 13's nvdisasm) are not all here, or None. A machine with a GPU may have
    only a CUDA toolkit of its own, or libNVVM alone: enough to run the course, not to build the matrix."""
    from compile_matrix import toolkits
    from fakegpu import toolchain

    try:
        for toolkit, names in (("12", ("nvvm", "libdevice", "ptxas")), ("13", ("nvvm", "libdevice", "ptxas", "nvdisasm"))):
            for name in names:
                toolkits.tool(toolkit, name)
        for compute_capability in ((5, 2), (9, 0)):  # the fake GPU's M40 (CUDA 12) and the rest (CUDA 13)
            toolchain.ptxas(compute_capability)
            toolchain.nvvm_library(compute_capability)
    except (toolkits.ToolkitMissingError, toolchain.ToolchainMissing) as error:
        return f'needs the CUDA compilers from pip (pip install -e ".[test]", Linux): {error}'
    return None


def numba_cuda_missing(linux: bool = False, c_compiler: bool = False) -> str | None:
    """Why a test of numba-cuda's real host path cannot run here, or None. All need numba-cuda
    (numba's built-in numba.cuda, the macOS one, only ever runs the simulator here); with
    ``linux``, also Linux and pip's CUDA compilers (the compile matrix; the fake GPU, whose
    libcuda.so.1 is a fake); with ``c_compiler``, also a C compiler (the fake GPU's driver library
    is built with it)."""
    import os
    import shutil
    import sys

    from fastlstm_lib.runtime import numba_compat

    if linux and not sys.platform.startswith("linux"):
        return "needs Linux (the CUDA compilers from pip, a fake libcuda.so.1)"
    if not numba_compat.HAS_NUMBA_CUDA:
        return numba_compat.NEEDS_NUMBA_CUDA
    if linux and pip_compilers_missing():
        return pip_compilers_missing()
    if c_compiler and not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")):
        return "needs a C compiler (cc or gcc) on the PATH, to build the fake libcuda.so.1"
    return None


def _needs(**what) -> pytest.MarkDecorator:
    why = numba_cuda_missing(**what)
    return pytest.mark.skipif(why is not None, reason=str(why))


#: Marks for tests of numba-cuda's real host path: skipped, saying why, where it cannot run.
needs_numba_cuda = _needs()
needs_compile_matrix = _needs(linux=True)
needs_fake_gpu = _needs(linux=True, c_compiler=True)


def _fake_gpu_items(items):
    return [item for item in items if item.nodeid.startswith("tests/test_fake_gpu.py")]


def pytest_collection_modifyitems(session, config, items):
    """The notebooks first: pytest-xdist (``--dist loadfile``) hands out whole files in this order,
    and a notebook is the largest unit (10-55 s on the simulator), so the test files, most of them a
    few seconds, are left to fill in whichever worker is free at the end. The fake-GPU tests go
    last: their tours run in the background (one core) meanwhile (under pytest-xdist, in the first
    worker: fake_gpu_runs)."""
    fake = {item.nodeid for item in _fake_gpu_items(items)}
    items.sort(key=lambda item: (item.nodeid in fake, not item.nodeid.split("::")[0].endswith(".ipynb")))


def pytest_collection_finish(session):
    """Start the fake-GPU tours once the selection is final (-k may have left none), where they can run."""
    if numba_cuda_missing(linux=True, c_compiler=True) is None and any("test_every_path" in item.nodeid or "_the_m40_" in item.nodeid or "_h100_" in item.nodeid
           for item in _fake_gpu_items(session.items)):
        import fake_gpu_runs

        fake_gpu_runs.start()


def pytest_sessionfinish(session, exitstatus):
    import sys

    if "fake_gpu_runs" in sys.modules:
        sys.modules["fake_gpu_runs"].stop()
