"""pyproject.toml and environment.yml pin the same packages; CI runs the README's test command."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        pins += extra
    return sorted(pins)


def environment_pins():
    pins = []
    in_pip = False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if re.match(r"^\s*- pip:\s*$", line):
            in_pip = True
        elif in_pip and re.match(r"^\s{6,}- ", line):
            pins.append(line.split("- ", 1)[1].strip().strip('"'))
        elif in_pip and line.strip() and not line.startswith(" " * 6):
            in_pip = False
    return sorted(pins)


def test_every_dependency_is_pinned_exactly():
    for pin in pyproject_pins():
        # An exact pin, optionally for one platform (the CUDA compilers ship Linux wheels only).
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.]*( ?; .+)?", pin), pin
        if ";" in pin:  # a marker that pip can read, over the names we use
            marker = pin.split(";", 1)[1]
            assert re.fullmatch(r"( *(and|or|not|\(|\)|sys_platform|platform_machine|python_version|[!=<>]=?|'[A-Za-z0-9_.]+') *)+", marker), pin


def test_environment_yml_matches_pyproject():
    assert environment_pins() == pyproject_pins()


def test_python_version_agrees():
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
    assert "python=3.11" in (ROOT / "environment.yml").read_text()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    assert re.search(r"^make test$", ci, re.M)


def make_dry_run(target, path=None):
    """The command lines ``make -n TARGET`` would run (nothing is run)."""
    env = dict(os.environ, PATH=path or os.environ["PATH"])
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None or os.name != "posix", reason="make and id (POSIX)")
def test_make_lab_starts_jupyterlab_as_root_and_as_a_user(tmp_path):
    # JupyterLab refuses root without --allow-root (Docker, cloud VMs); a user never needs it.
    for uid in ("0", "1000"):
        fake = tmp_path / uid
        fake.mkdir()
        (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
        (fake / "id").chmod(0o755)
        lab = [line for line in make_dry_run("lab", f"{fake}{os.pathsep}{os.environ['PATH']}").splitlines()
               if "jupyter lab" in line]
        assert len(lab) == 1 and lab[0].rstrip().endswith("notebooks/"), lab
        assert ("--allow-root" in lab[0]) == (uid == "0"), lab


@pytest.mark.parametrize("version, system, machine, refused", [
    ((3, 10), "linux", "x86_64", "Python 3.11, 3.12 or 3.13 is needed"),
    ((3, 11), "linux", "x86_64", None),
    ((3, 13), "linux", "aarch64", None),
    ((3, 13), "win32", "AMD64", None),
    ((3, 13), "darwin", "arm64", None),
    ((3, 12), "darwin", "x86_64", None),
    ((3, 13), "darwin", "x86_64", "an Intel Mac needs Python 3.11 or 3.12"),
    ((3, 14), "linux", "x86_64", "Python 3.11, 3.12 or 3.13 is needed"),
])
def test_make_setup_says_which_python_it_needs(version, system, machine, refused):
    from fastlstm_lib.setup.requirements import python_problem

    why = python_problem(version, system, machine)
    assert (why is None) if refused is None else why.startswith(refused), why


def test_every_marker_is_one_pip_reads():
    markers = pytest.importorskip("packaging.markers")
    for pin in pyproject_pins():
        if ";" in pin:
            markers.Marker(pin.split(";", 1)[1])  # raises InvalidMarker otherwise


def test_each_platform_gets_one_pin_of_each_package():
    # The markers split the platforms: every (platform, Python) sees exactly one numpy, numba,
    # TensorFlow; numba-cuda everywhere but macOS (numba's own simulator there).
    markers = pytest.importorskip("packaging.markers")
    platforms = {"linux-x86_64": ("linux", "x86_64"), "linux-aarch64": ("linux", "aarch64"),
                 "mac-arm64": ("darwin", "arm64"), "mac-intel": ("darwin", "x86_64"), "windows": ("win32", "AMD64")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for name, (system, machine) in platforms.items():
        for python in ("3.11", "3.12", "3.13"):
            env = {"sys_platform": system, "platform_machine": machine, "python_version": python}
            chosen = {}
            for pin in project["dependencies"]:
                requirement, _, marker = pin.partition(";")
                if not marker or markers.Marker(marker).evaluate(env):
                    package = requirement.split("==")[0].strip()
                    assert package not in chosen, (name, python, pin)
                    chosen[package] = requirement.split("==")[1].strip()
            assert {"numpy", "numba", "tensorflow", "keras"} <= set(chosen), (name, chosen)
            assert ("numba-cuda" in chosen) == (system != "darwin"), (name, chosen)


def test_the_course_has_a_license_the_readme_explains():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "## License" in readme and "MIT" in readme.split("## License", 1)[1]


def test_the_fake_gpu_is_test_code_outside_the_package():
    """The fake GPU (tests/fakegpu) never ships: setuptools' package discovery, as pyproject.toml
    configures it, finds no fakegpu in the package, and no module of fastlstm_lib imports it: the
    tests' ``sitecustomize.py`` switches it on where FASTLSTM_FAKE_GPU is set."""
    import ast

    setuptools = pytest.importorskip("setuptools")
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = setuptools.find_packages(where=str(ROOT), include=include)
    assert "fastlstm_lib" in packages and not [p for p in packages if "fakegpu" in p], packages
    assert not list((ROOT / "fastlstm_lib").rglob("fakegpu*")), "a fakegpu inside the package"
    assert (ROOT / "tests" / "fakegpu" / "__init__.py").exists()
    importers = []
    for path in sorted((ROOT / "fastlstm_lib").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module or ''}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if any("fakegpu" in name.split(".") for name in names):
                importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not importers, importers
