"""tools/blas_drift.py, which is run by hand: its set-ups, the environment each gets, and how it reads
the failed items out of pytest's report. Nothing is run under another BLAS here."""

import pytest

import blas_drift

#: What pytest printed for two nbval failures under OpenBLAS's Haswell kernels (abridged, colours kept).
REPORT = """\
__________________ notebooks/10_vs_keras_cudnn.ipynb::Cell 5 ___________________
[gw1] linux -- Python 3.11.7 /work/main/.venv/bin/python
Notebook cell execution failed
\x1b[94mCell 5: Cell outputs differ\x1b[0m

Input:
print(error)

Traceback:
 mismatch 'stdout'

 assert reference_output == test_output failed:

  - ding)   2.0e-07  wit
  ?           ^
  + ding)   2.1e-07  wit
  ?           ^

__________________ notebooks/10_vs_keras_cudnn.ipynb::Cell 10 __________________
[gw1] linux -- Python 3.11.7 /work/main/.venv/bin/python
Notebook cell execution failed
Cell 10: Cell execution caused an exception

=========================== short test summary info ============================
FAILED notebooks/10_vs_keras_cudnn.ipynb::Cell 5 - \x1b[91mNotebook cell execution failed\x1b[0m
FAILED notebooks/10_vs_keras_cudnn.ipynb::Cell 10 - \x1b[91mNotebook cell execution failed\x1b[0m
FAILED tests/test_reference.py::test_something - AssertionError: 3 != 4
ERROR tests/test_x.py::test_y
2 failed, 1641 passed, 3 skipped, 6 warnings in 298.47s (0:04:58)
"""


def test_failures_name_each_item_with_nbval_reason_and_diff():
    assert blas_drift.failures(REPORT) == [
        ("notebooks/10_vs_keras_cudnn.ipynb::Cell 5", "Cell 5: Cell outputs differ; - ding) 2.0e-07 wit; + ding) 2.1e-07 wit"),
        ("notebooks/10_vs_keras_cudnn.ipynb::Cell 10", "Cell 10: Cell execution caused an exception"),
        ("tests/test_reference.py::test_something", "AssertionError: 3 != 4"),
        ("tests/test_x.py::test_y", ""),
    ]


def test_a_passing_run_has_no_failures():
    assert blas_drift.failures("1643 passed, 3 skipped in 420.00s (0:07:00)\n") == []


def test_setups_and_their_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "1048576")
    assert blas_drift.parse_setup("Haswell:1") == ("Haswell", 1)
    env = blas_drift.environment("Sandybridge", 2, tmp_path)
    assert env["OPENBLAS_CORETYPE"] == "Sandybridge" and env["ONEDNN_MAX_CPU_ISA"] == "AVX"
    assert "OPENBLAS_L2_SIZE" not in env and env["FASTLSTM_CACHE"] == str(tmp_path)
    assert {env[name] for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")} == {"2"}
    default = blas_drift.environment("default", 1, tmp_path)
    assert "OPENBLAS_CORETYPE" not in default and "ONEDNN_MAX_CPU_ISA" not in default


@pytest.mark.parametrize("text", ["Haswell", "Haswell:0", "Haswell:two", ":1", "a:1:2"])
def test_a_bad_setup_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="setup: expected FAMILY:THREADS"):
        blas_drift.parse_setup(text)
    with pytest.raises(TypeError, match="setup: expected a str FAMILY:THREADS .* got int 3"):
        blas_drift.parse_setup(3)
