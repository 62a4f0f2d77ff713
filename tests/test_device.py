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
