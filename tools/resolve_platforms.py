"""Resolve the course's dependencies for every platform x Python a learner may have, with pip.

    python tools/resolve_platforms.py [--extras test,lab] [--pythons 3.11 3.12 3.13] [--json FILE]

For each target (Linux x86-64 and aarch64, macOS arm64 and Intel, Windows x86-64) and each Python,
it runs ``pip install --dry-run --ignore-installed --only-binary=:all:`` for the target's wheel tags
(``--platform``, ``--python-version``, ``--abi``) on the requirements of ``pyproject.toml`` (the
extras named), and prints one table: "ok" with the number of packages, the Keras backend, NumPy and
the CUDA Numba uses; or, for a Python that ``make setup`` refuses on that platform on purpose
(``fastlstm_lib/setup/requirements.py``), its words; or the requirement pip found no wheel for.

pip evaluates environment markers (``sys_platform == 'linux'``) against the machine it runs on,
not the ``--platform`` it is given (pip issue #11664), so this script runs pip in a child process
whose marker environment is replaced by the target's: markers in our requirements and in every
dependency's are then judged as on the learner's machine.

It needs the package registry (it is not a unit test): run it before changing a pin, and paste its
table in the change's note.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fastlstm_lib"))
import requirements  # noqa: E402  (standard library only: make setup's Python check, which rows it refuses on purpose)

#: name -> (pip --platform tags, marker environment)
TARGETS = {
    "Linux x86-64": (["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                      "manylinux2014_x86_64", "linux_x86_64"],
                     {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
                      "os_name": "posix"}),
    "Linux aarch64": (["manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_17_aarch64",
                       "manylinux2014_aarch64", "linux_aarch64"],
                      {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64",
                       "os_name": "posix"}),
    "macOS arm64": ([f"macosx_{v}_0_arm64" for v in range(15, 10, -1)] + ["macosx_11_0_universal2"],
                    {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64",
                     "os_name": "posix"}),
    "macOS Intel": ([f"macosx_{v}_0_x86_64" for v in range(15, 10, -1)]
                    + [f"macosx_10_{v}_x86_64" for v in range(15, 8, -1)] + ["macosx_10_9_universal2"],
                    {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64",
                     "os_name": "posix"}),
    "Windows x86-64": (["win_amd64"],
                       {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64",
                        "os_name": "nt"}),
}

# Run inside the child: pip's vendored packaging answers markers with the target's environment.
_CHILD = r"""
import json, sys
from pip._vendor.packaging import markers
target = json.loads(sys.argv[1])
original = markers.default_environment
def environment():
    env = original()
    env.update(target)
    return env
markers.default_environment = environment
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def course_requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    return reqs


def resolve(target: str, python: str, reqs: list[str]) -> dict:
    tags, env = TARGETS[target]
    env = dict(env, python_version=python, python_full_version=f"{python}.0",
               implementation_name="cpython", platform_python_implementation="CPython")
    nodot = python.replace(".", "")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        args = ["install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--quiet",
                "--python-version", python, "--implementation", "cp", "--abi", f"cp{nodot}",
                "--abi", "abi3", "--abi", "none", "--report", str(report)]
        for tag in tags:
            args += ["--platform", tag]
        run = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(env), *args, *reqs],
                             capture_output=True, text=True,
                             env=dict(os.environ, PIP_CONSTRAINT="", PIP_FIND_LINKS=""))
        if run.returncode != 0:
            lines = [line.split(" (from versions")[0] for line in run.stderr.splitlines()
                     if line.startswith("ERROR") and "yanked" not in line]
            return {"ok": False, "why": lines[0] if lines else run.stderr.strip()[-300:]}
        installed = json.loads(report.read_text())["install"]
    versions = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installed}
    backend = next((f"{name} {versions[name]}" for name in ("tensorflow", "jax", "torch") if name in versions),
                   "none")
    cuda = (f"numba-cuda {versions['numba-cuda']}" if "numba-cuda" in versions
            else f"numba {versions.get('numba')}'s simulator")
    return {"ok": True, "packages": len(versions), "backend": backend, "cuda": cuda,
            "numpy": versions.get("numpy"), "versions": versions}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="test,lab", help="comma-separated extras (default: test,lab)")
    parser.add_argument("--pythons", nargs="+", default=["3.11", "3.12", "3.13"])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--json", help="also write every resolution (versions included) to this file")
    args = parser.parse_args(argv)
    reqs = course_requirements([e for e in args.extras.split(",") if e])
    results, failed = {}, 0
    print("| platform | Python | result | Keras backend | NumPy | CUDA in Numba |\n|---|---|---|---|---|---|")
    for target in args.targets:
        for python in args.pythons:
            refused = requirements.python_problem(tuple(map(int, python.split("."))), TARGETS[target][1]["sys_platform"],
                                           TARGETS[target][1]["platform_machine"])
            r = results[f"{target} / {python}"] = resolve(target, python, reqs)
            if r["ok"]:
                print(f"| {target} | {python} | ok, {r['packages']} packages | {r['backend']} | {r['numpy']} "
                      f"| {r['cuda']} |", flush=True)
            elif refused:  # expected: `make setup` stops first and says why (fastlstm_lib/setup/requirements.py)
                print(f"| {target} | {python} | no install: make setup says \"{refused}\" | | | |", flush=True)
            else:
                failed += 1
                print(f"| {target} | {python} | FAILS: {r['why']} | | | |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
