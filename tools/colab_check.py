"""Emulate the Colab set-up cell against Colab's published package list, with pip, without Colab.

    python tools/colab_check.py [--freeze data/colab/pip-freeze.gpu.txt] [--write]

Needs PyPI (it is not a unit test; tests/test_colab.py checks its committed report). Steps:

1. Colab's pins (``--freeze``; default: the committed copy of Colab's GPU runtime list). The CUDA
   stack among them, the only packages that can pin what our install changes (names with cuda,
   cu12/cu13, nvidia, numba, llvmlite, RAPIDS, dask, cupy, jax, torch, ucx, nvtx, treelite), get
   their metadata from PyPI (``pip install --dry-run --no-deps --report``, Python 3.13, manylinux,
   metadata only); pins PyPI does not serve (URL pins to NVIDIA's index, torch's ``+cu128``
   builds, versions only on NVIDIA's index) are listed by name: not checked.
2. A fake site-packages with every Colab package (name, version, and the fetched requirements),
   less ``colab.REMOVE``; pip resolves ``colab.INSTALL`` against it as it would on Colab
   (``pip install --dry-run``: installed versions are kept where they satisfy). The same for
   ``numba-cuda[cu12]``, to show what that extra would change.
3. Every remaining package's requirements (markers for Python 3.13 on Linux x86_64, and the
   requirements of the extras it asks for) are checked against the state after the install. A package
   whose requirement was met before and is broken after must be removed, and so must every package
   that needs a removed one: that fixed point must equal ``colab.REMOVE``.

Prints what it checked and the result; ``--write`` saves that as data/colab/colab_check.txt. Exit 1
if a requirement stays broken or the computed removals differ from ``colab.REMOVE``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
COLAB = runpy.run_path(str(ROOT / "fastlstm_lib" / "setup" / "colab.py"))
FREEZE = ROOT / "data" / "colab" / "pip-freeze.gpu.txt"
REPORT = ROOT / "data" / "colab" / "colab_check.txt"
STACK = re.compile(r"cuda|cu1[23]|nvidia|numba|llvmlite|rapids|rmm|raft|cudf|cuml|cugraph|cucim|cuvs|cupy|dask|"
                   r"distributed|jax|torch|ucx|nvtx|treelite|kvikio|nvcomp", re.I)
TARGET = ["--only-binary=:all:", "--python-version", "3.13", "--implementation", "cp",
          "--abi", "cp313", "--abi", "abi3", "--abi", "none"] + [
    arg for tag in ("manylinux_2_35", "manylinux_2_34", "manylinux_2_28", "manylinux_2_27", "manylinux_2_24",
                    "manylinux_2_17", "manylinux2014", "manylinux_2_5", "manylinux1")
    for arg in ("--platform", f"{tag}_x86_64")]
#: Colab's GPU runtime, for environment markers (os-info-gpu.txt: Ubuntu 22.04.5, Python 3.13.15).
ENVIRONMENT = {"python_version": "3.13", "python_full_version": "3.13.15", "implementation_version": "3.13.15",
               "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
               "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def read_freeze(path: Path) -> dict:
    """{canonical name: (name, version or None for a URL pin, the line)}."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if " @ " in line:
            name, version = line.split(" @ ")[0].strip(), None
        else:
            name, version = line.split("==")
        pins[canonicalize_name(name)] = (name, version, line)
    return pins


def pip(args, sys_path=None, check=False) -> subprocess.CompletedProcess:
    """Run pip; with ``sys_path``, in a Python that sees only those folders (the fake site-packages)."""
    if sys_path is None:
        command = [sys.executable, "-m", "pip"]
    else:
        boot = f"import sys; sys.path[:0] = {sys_path!r}; from pip._internal.cli.main import main; sys.exit(main())"
        command = [sys.executable, "-S", "-c", boot]
    result = subprocess.run(command + ["--disable-pip-version-check"] + args, capture_output=True, text=True)
    if check and result.returncode:
        raise SystemExit(f"pip {' '.join(args[:3])}... failed:\n{result.stderr[-3000:]}")
    return result


def fetch_metadata(pins: dict, workdir: Path):
    """Metadata from PyPI of the CUDA stack's pins; returns ({name: metadata}, {name: why not fetched})."""
    wanted = {key: pin for key, pin in pins.items() if STACK.search(key)}
    skipped = {key: "URL pin (" + pin[2].split(" @ ")[1].split("/")[2] + ")" for key, pin in wanted.items() if pin[1] is None}
    skipped |= {key: "local build " + pin[1] + " (not on PyPI)" for key, pin in wanted.items() if pin[1] and "+" in pin[1]}
    todo = {key: pin for key, pin in wanted.items() if key not in skipped}
    report = workdir / "metadata.json"
    while todo:
        requirements = workdir / "stack.txt"
        requirements.write_text("".join(f"{name}=={version}\n" for name, version, _ in todo.values()))
        result = pip(["install", "--dry-run", "--no-deps", "--ignore-installed", "-q", "--report", str(report),
                      "-r", str(requirements)] + TARGET)
        missing = re.search(r"No matching distribution found for ([A-Za-z0-9_.-]+)==", result.stderr)
        if result.returncode == 0:
            break
        if not missing:
            raise SystemExit(f"pip could not fetch the metadata:\n{result.stderr[-3000:]}")
        key = canonicalize_name(missing.group(1))
        skipped[key] = "this version is not on PyPI"
        del todo[key]
    fetched = {canonicalize_name(item["metadata"]["name"]): item["metadata"]
               for item in json.loads(report.read_text())["install"]} if todo else {}
    return fetched, skipped


def fake_site(folder: Path, pins: dict, metadata: dict, leave_out=()):
    """A site-packages of .dist-info folders: what pip sees installed on Colab."""
    folder.mkdir(parents=True)
    for key, (name, version, _) in pins.items():
        if key in leave_out:
            continue
        meta = metadata.get(key, {})
        lines = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version or '0'}"]
        lines += [f"Requires-Dist: {r}" for r in meta.get("requires_dist", [])]
        lines += [f"Provides-Extra: {e}" for e in meta.get("provides_extra", [])]
        info = folder / f"{re.sub(r'[-_.]+', '_', name)}-{version or '0'}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("\n".join(lines) + "\n")
        (info / "INSTALLER").write_text("pip\n")


def resolve(site: Path, workdir: Path, requirements) -> list[dict]:
    """What pip would install or upgrade on top of ``site`` for ``requirements``: [metadata]."""
    pipdir = workdir / "pip-only"  # pip alone on the path, so that pip sees no other installed package
    if not pipdir.exists():
        pipdir.mkdir()
        import pip as pip_module
        os.symlink(Path(pip_module.__file__).parent, pipdir / "pip")
    report = workdir / "install.json"
    pip(["install", "--dry-run", "-q", "--report", str(report)] + TARGET + list(requirements),
        sys_path=[str(pipdir), str(site)], check=True)
    return [item["metadata"] for item in json.loads(report.read_text())["install"]]


def applies(requirement: Requirement, extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**ENVIRONMENT, "extra": extra})


def broken(state: dict, metadata: dict) -> dict:
    """{package: first requirement it has that ``state`` ({name: version}) does not meet}."""
    found = {}
    for key in state:
        for text in metadata.get(key, {}).get("requires_dist", []):
            requirement = Requirement(text)
            if not applies(requirement):
                continue
            needs = [(requirement, key)]
            target = canonicalize_name(requirement.name)
            for extra in requirement.extras:  # e.g. numba-cuda[cu12]: that extra's requirements too
                needs += [(Requirement(t), target) for t in metadata.get(target, {}).get("requires_dist", [])
                          if applies(Requirement(t), extra) and not applies(Requirement(t))]
            for need, _ in needs:
                name = canonicalize_name(need.name)
                if name not in state:
                    found.setdefault(key, f"{need.name} (not installed)")
                elif state[name] is not None and not need.specifier.contains(Version(state[name]), prereleases=True):
                    violated = [s for s in need.specifier if not s.contains(Version(state[name]), prereleases=True)]
                    found.setdefault(key, f"{need.name}{','.join(str(s) for s in violated)}")
    return found


def plain_version(version):
    return None if version is None else version.split("+")[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--freeze", type=Path, default=FREEZE, help="Colab's `pip freeze` (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help=f"save the report as {REPORT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    out = []
    say = lambda line="": (print(line), out.append(line))  # noqa: E731
    pins = read_freeze(args.freeze)
    header = [line for line in args.freeze.read_text().splitlines()[:2] if line.startswith("#")]
    say(f"Colab's packages: {len(pins)} pins from {args.freeze.name}")
    say(*header[:1]) if header else None
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        metadata, skipped = fetch_metadata(pins, workdir)
        say(f"metadata from PyPI: {len(metadata)} packages of the CUDA stack: {', '.join(sorted(metadata))}")
        say(f"not checked (no metadata on PyPI): " + "; ".join(f"{k} ({why})" for k, why in sorted(skipped.items())))
        before = {key: plain_version(version) for key, (_, version, _) in pins.items()}
        already = broken(before, metadata)
        if already:
            say(f"already unmet on Colab (left as they are): " + "; ".join(f"{k}: {v}" for k, v in sorted(already.items())))

        remove = {canonicalize_name(name) for name in COLAB["REMOVE"]}
        fake_site(workdir / "site", pins, metadata, leave_out=remove)
        installs = resolve(workdir / "site", workdir, COLAB["INSTALL"])
        say(f"the cell installs {' '.join(COLAB['INSTALL'])}: pip would put in "
            + ", ".join(f"{m['name']} {m['version']} (Colab: {before.get(canonicalize_name(m['name'])) or '-'})" for m in installs))
        fake_site(workdir / "site-cu12", pins, metadata, leave_out=remove)
        extra = resolve(workdir / "site-cu12", workdir, [COLAB["INSTALL"][0].replace("==", "[cu12]==")])
        say(f"with the [cu12] extra, pip would put in "
            + ", ".join(f"{m['name']} {m['version']} (Colab: {before.get(canonicalize_name(m['name'])) or '-'})" for m in extra))
        for item in installs:
            key = canonicalize_name(item["name"])
            metadata[key] = item
            before_version = before.get(key)
            before[key] = before_version  # keep the key order stable
        after = dict(before)
        after.update({canonicalize_name(m["name"]): m["version"] for m in installs})

        # The fixed point: remove every package broken by the install, then every one broken by a removal.
        removed: dict[str, str] = {}
        while True:
            state = {k: v for k, v in after.items() if k not in removed}
            new = {k: why for k, why in broken(state, metadata).items() if k not in already or already[k] != why}
            if not new:
                break
            for key, why in new.items():
                target = canonicalize_name(Requirement(why.split(" (")[0]).name)
                removed[key] = target if target in removed else why  # a name alone: needs a removed package
        say(f"must be removed: " + (", ".join(f"{k} (needs {why})" for k, why in removed.items()) or "nothing"))
        say(f"kept as Colab has them: numba {after.get('numba')}, numpy {after.get('numpy')}, tensorflow "
            f"{after.get('tensorflow')}, keras {after.get('keras')}, matplotlib {after.get('matplotlib')}, tqdm "
            f"{after.get('tqdm')}, cuda-bindings {after.get('cuda-bindings')}, cuda-pathfinder {after.get('cuda-pathfinder')}, "
            f"cuda-toolkit {after.get('cuda-toolkit')}")
        changed = {canonicalize_name(m["name"]) for m in installs}
        touched = sorted(k for k in changed if k in skipped or k.startswith("nvidia-"))
        say(f"pip changes {', '.join(sorted(changed))} only: " + (f"also {', '.join(touched)}, which unchecked packages "
            "(torch's +cu128 builds pin nvidia-*-cu12 libraries) may need" if touched else
            "no nvidia-* library (torch's +cu128 builds pin those) and no unchecked package"))
        expected = {canonicalize_name(name): why for name, why in COLAB["REMOVE"].items()}
        final = {k: v for k, v in after.items() if k not in removed}
        left = {k: why for k, why in broken(final, metadata).items() if k not in already or already[k] != why}
        ok = set(removed) == set(expected) and not left and not touched
        say(f"result: {'OK' if ok else 'FAILED'}: " + (
            f"after removing {len(removed)} packages and installing, no checked requirement of Colab's packages is broken"
            if ok else f"colab.REMOVE {sorted(expected)} != computed {sorted(removed)}; still broken: {left}"))
        if not ok:
            say("colab.REMOVE should be: " + json.dumps(dict(sorted(removed.items(), key=lambda kv: (kv[1] in removed, kv[0]))), indent=4))
    if args.write:
        REPORT.write_text("# python tools/colab_check.py --write (needs PyPI); read by tests/test_colab.py\n"
                          + "\n".join(out) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
