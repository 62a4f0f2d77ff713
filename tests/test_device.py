"""Device choice at import, lazy heavy imports, device_info."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fastlstm_lib as fl  # first: it picks the simulator before numba is imported
from numba import cuda, int32

from conftest import needs_numba_cuda

HEAVY = ("tensorflow", "keras", "matplotlib", "tqdm", "torch")


def run_python(code, **env):
    environment = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "FASTLSTM_SIMULATOR")}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120)


def test_import_loads_only_numpy_and_numba():
    done = run_python(
        "import sys, fastlstm_lib; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_simulator_switches_on_by_itself_and_says_so_once():
    done = run_python("import fastlstm_lib, fastlstm_lib as again, os, sys\n"
                      "print(os.environ.get('NUMBA_ENABLE_CUDASIM'))\n"
                      "print('imported')\n"
                      "fastlstm_lib.device_info(); fastlstm_lib.device_info()")
    assert done.returncode == 0, done.stderr
    if fl.is_simulator() and not os.environ.get("FASTLSTM_SIMULATOR"):
        assert done.stdout.startswith("1\n")
        # Said once, at the first Numba work, not at the import (notebooks 20-31 never see it),
        # on stdout: a notice, not an error (Jupyter draws stderr in red).
        assert "CUDA simulator" not in done.stderr
        before, after = done.stdout.split("imported", 1)
        assert "CUDA simulator" not in before
        assert after.count("CUDA simulator") == 1


def test_simulator_can_be_forced():
    done = run_python("import fastlstm_lib as fl; print(fl.is_simulator()); fl.device_info()", FASTLSTM_SIMULATOR="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True\n")
    assert "FASTLSTM_SIMULATOR is set" in done.stdout


def test_device_info_names_the_device_and_versions():
    info = fl.device_info()
    for key in ("name", "simulator", "compute_capability", "numba", "numba_cuda", "numpy", "python"):
        assert key in info
    assert info["simulator"] == fl.is_simulator()
    if info["simulator"]:
        assert "simulator" in info["name"]
    else:
        assert info["compute_capability"]


def test_default_config_fits_the_device():
    expected = fl.LSTMConfig.tiny() if fl.is_simulator() else fl.LSTMConfig.article()
    assert fl.LSTMConfig.default() == expected


def test_simulator_threads_share_one_shared_array():
    """Numba's simulator can hand two threads different 'shared' arrays (an unlocked
    check-then-set); fastlstm_lib locks it. Every thread writes its slot, then reads them all."""
    if not fl.is_simulator():
        pytest.skip("simulator only")

    @cuda.jit
    def fill_and_sum(out):
        slots = cuda.shared.array(64, int32)
        slots[cuda.threadIdx.x] = cuda.threadIdx.x
        cuda.syncthreads()
        total = 0
        for i in range(64):
            total += slots[i]
        out[cuda.threadIdx.x] = total

    for _ in range(10):
        out = cuda.device_array(64, dtype=np.int32)
        fill_and_sum[1, 64](out)
        assert (out.copy_to_host() == sum(range(64))).all()


@needs_numba_cuda  # the warning, and _LaunchConfiguration, are numba-cuda's
def test_no_low_occupancy_warning_at_every_small_launch_on_a_gpu():
    # numba-cuda warns "Grid size N will likely result in GPU under-utilization due to low occupancy"
    # at every launch of fewer than 128 blocks on a GPU (never on the simulator): the course launches
    # small grids on purpose. numba.cuda imported first makes this process take itself for a GPU one,
    # so the launch configuration below is numba-cuda's real one, which does the check.
    done = run_python(
        "import os, warnings\n"
        "os.environ.pop('NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS', None)  # Numba's default: on\n"
        "import numba.cuda\n"
        "import fastlstm_lib\n"
        "from numba.cuda.core import config\n"
        "from numba.cuda.dispatcher import _LaunchConfiguration  # what kernel[grid, block] builds\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    _LaunchConfiguration(None, (1, 1, 1), (32, 1, 1), 0, 0)\n"
        "print(config.CUDA_LOW_OCCUPANCY_WARNINGS, fastlstm_lib.is_simulator(), [str(w.message) for w in caught])\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 False []"


@pytest.mark.parametrize("setting, expected", [(None, "0"), ("1", "1")])
def test_the_occupancy_warning_is_off_after_import_unless_asked_for(setting, expected):
    environment = {} if setting is None else {"NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": setting}
    code = ("import fastlstm_lib\nconfig = fastlstm_lib.runtime.numba_compat.cuda_config()  # numba-cuda's or numba's\n"
            "print(config.CUDA_LOW_OCCUPANCY_WARNINGS)")
    if setting is None:
        code = "import os\nos.environ.pop('NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS', None)\n" + code
    done = run_python(code, **environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_a_stand_in_driver_computes_nothing_and_times_nothing():
    """A driver that launches but runs nothing (the tests' fake GPU declares itself so) makes the
    package compare no value and keep no time; the simulator or a bad name is refused."""
    from fastlstm_lib.runtime.device import Device, declare_stand_in

    stand_in = Device("gpu", stand_in="fake T4")
    assert (stand_in.computes, stand_in.timed, stand_in.compiled, stand_in.poison) == (False, False, True, 0.0)
    assert stand_in.timing == "fake T4: nothing runs, times are meaningless"
    real = Device("gpu")
    assert (real.computes, real.timed, np.isnan(real.poison), real.timing) == (True, True, True, "CUDA events")
    with pytest.raises(ValueError, match="kind must be 'gpu' or 'simulator', got 'fake'"):
        Device("fake")
    with pytest.raises(ValueError, match="the simulator has none"):
        Device("simulator", stand_in="fake T4")
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        declare_stand_in("")
    if fl.DEVICE.kind == "simulator":
        with pytest.raises(ValueError, match="this process runs on the simulator"):
            declare_stand_in("fake T4")
        assert fl.DEVICE.stand_in is None


def test_the_package_names_no_test_mode():
    """The fake GPU is the tests' (tests/fakegpu): no code of fastlstm_lib reads its variable or
    branches on its name; the package knows a stand-in driver only as ``DEVICE.stand_in``."""
    import ast
    from pathlib import Path

    package = Path(fl.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings else None
            if text is not None and ("FASTLSTM_FAKE_GPU" in text or text.strip().lower() in ("fake", "fakegpu")):
                found.append(f"{path.relative_to(package)}:{node.lineno}: {text!r}")
            if isinstance(node, ast.Attribute) and node.attr in ("fake", "FAKE_GPU"):
                found.append(f"{path.relative_to(package)}:{node.lineno}: .{node.attr}")
    assert not found, found
