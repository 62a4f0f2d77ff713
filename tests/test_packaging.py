"""pyproject.toml and environment.yml pin the same packages; CI runs the README's test command."""

import re
import tomllib
from pathlib import Path

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
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.]*( ?; sys_platform == '(linux|darwin|win32)')?", pin), pin


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
