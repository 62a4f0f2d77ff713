"""python -m fastlstm_lib.kernels: every kernel version listed, validated on its own against
float64 NumPy (here on the simulator: validation only), a wrong kernel reported, bad names and
output files refused before any work, the measured rows kept with --out."""

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.kernels import catalog, gemm, persistent, runner

KERNELS = Path(fl.__file__).parent / "kernels"


def test_every_kernel_of_the_family_files_has_a_version():
    """A @cuda.jit kernel (no device function) in kernels/ is in the catalog: a new one needs its Version."""
    names = set()
    for path in KERNELS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d).startswith("cuda.jit") and "device=True" not in ast.unparse(d) for d in node.decorator_list):
                names.add(node.name.lstrip("_"))
    listed = {spec.name.lstrip("_") for version in catalog.VERSIONS for spec in version.specs}
    assert names and names <= listed, names - listed


def test_every_version_validates_on_the_simulator(capsys):
    assert runner.main([]) == 0
    out = capsys.readouterr().out
    assert "every version is validated at odd sizes; times need a GPU" in out
    ours = len(catalog.VERSIONS) - 1  # cuBLAS, the GEMMs' version 0, needs a GPU
    assert f"{ours} of {len(catalog.VERSIONS)} versions correct; 1 skipped" in out
    assert "gemm 0: cublas" in out and "skipped: cuBLAS needs a real GPU" in out


def test_one_family_one_version_and_the_list(capsys):
    assert runner.main(["gemm", "3"]) == 0
    assert "gemm 3: exact_gemm" in capsys.readouterr().out
    assert runner.main(["--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(catalog.VERSIONS)


def test_a_wrong_kernel_is_reported_not_passed(monkeypatch, capsys):
    """A kernel that writes nothing leaves its poisoned outputs NaN: the check fails, and says so."""
    version = runner.select("column_sum")[0]

    def idle(size, rng):
        cases = version.case(size, rng)
        for case in cases:
            case.launch = lambda: None
        return cases

    broken = catalog.Version(version.specs, idle)
    assert runner.run([broken]) == 1
    out = capsys.readouterr().out
    assert "FAILED: 13 x 37: relative error inf > 1e-05" in out and "0 of 1 versions correct" in out


def test_bad_names_are_refused_naming_what_exists(capsys):
    with pytest.raises(SystemExit) as exit_:
        runner.main(["gemmm"])
    assert exit_.value.code == 2 and "no kernel version matches name 'gemmm'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="families .*'gemm'"):
        runner.select("gemm", 99)
    with pytest.raises(TypeError, match="version must be an int"):
        runner.select("gemm", "3")
    with pytest.raises(TypeError, match="name must be a str"):
        runner.select(3)


def test_the_article_cases_are_the_article_shapes():
    """Made, not launched (the simulator would take hours): the GEMMs of one step, of the wavefront's
    5-step chunk and of all steps; the weight gradient over all steps."""
    shapes = gemm.tiles.SHAPES["article"]
    article = fl.LSTMConfig.article()
    assert shapes == [(article.batch, 4 * article.hidden, article.hidden),
                      (5 * article.batch, 4 * article.hidden, article.hidden),
                      (article.seq_len * article.batch, 4 * article.hidden, article.input_size)]
    assert gemm.launch.WEIGHT_GRADIENT["article"] == (article.seq_len, article.batch, article.hidden)
    assert persistent.v1_layer.SHAPES["article"] == (article.batch, article.seq_len, article.hidden)
    assert np.all(np.array(persistent.v1_layer.SHAPES["odd"]) % 4 != 0)


def test_the_cublas_launcher_refuses_bad_operands_before_any_work():
    from fastlstm_lib.kernels.gemm.v0_cublas import cublas_matmul

    with pytest.raises(TypeError, match="a must be a 2-D float32 NumPy array, got float64"):
        cublas_matmul(np.ones((2, 3)), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"got a \(2, 3\) and b \(4, 2\)"):
        cublas_matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(TypeError, match="tf32 must be a bool, got str 'yes'"):
        cublas_matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), tf32="yes")


def test_a_version_this_gpu_cannot_run_is_skipped_saying_why(capsys):
    from fastlstm_lib.kernels.persistent import PersistentLimitError

    def unplannable(size, rng):
        raise PersistentLimitError("persistent LSTM: does not fit", reason="8 units need 68096 bytes > 65536")

    version = catalog.Version(runner.select("persistent")[0].specs, unplannable)
    assert runner.run([version]) == 0
    out = capsys.readouterr().out
    assert "skipped: this GPU cannot run it (8 units need 68096 bytes > 65536)" in out
    assert "0 of 1 versions correct; 1 skipped" in out


@pytest.fixture
def no_run(monkeypatch):
    """The runner's work fails the test if it starts."""
    def work(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(runner, "run", work)


def test_an_output_file_it_cannot_write_is_refused_before_any_work(no_run, capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    for out, words in [(tmp_path / "missing" / "r.json", "directory .* does not exist"),
                       (tmp_path, "it is a directory"),
                       (tmp_path / "file" / "r.json", "is not a directory")]:
        with pytest.raises(SystemExit) as exit_:
            runner.main(["gemm", "--out", str(out)])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "error: --out must be a file path that can be written" in err
        assert re.search(words, err), err


@pytest.mark.parametrize("argv, words", [
    (["--list", "--out", "r.json"], "--list runs nothing"),
    (["gemm", "--out", "r.json"], "on the CUDA simulator nothing is timed"),
])
def test_out_is_refused_where_nothing_is_measured(no_run, capsys, tmp_path, monkeypatch, argv, words):
    if "--list" not in argv and not fl.is_simulator():
        pytest.skip("a GPU measures")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        runner.main(argv)
    assert exit_.value.code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_out_keeps_the_measured_rows_as_a_results_file(monkeypatch, capsys, tmp_path):
    """As data/results/gemm-vs-cublas-DATE.json holds them: each row ``measurement: kernel_version``,
    whether values were checked, and the device (the run itself faked: the simulator times nothing)."""
    row = {"kernel": "exact_gemm", "family": "gemm", "version": 3, "size": "article", "shape": "64 x 2048 x 512"}

    def measured(versions, rows):
        assert [version.label for version in versions] == ["gemm 3: exact_gemm"]
        rows.append(row)
        return 0

    monkeypatch.setattr(runner, "run", measured)
    monkeypatch.setattr(runner, "DEVICE", SimpleNamespace(small=False, computes=True))
    assert runner.main(["gemm", "3", "--out", str(tmp_path / "r.json")]) == 0
    device = fl.device_info()
    assert fl.load_results(tmp_path / "r.json") == [dict(row, measurement="kernel_version", checked=True, device=device)]
    assert f"wrote {tmp_path / 'r.json'}" in capsys.readouterr().out
