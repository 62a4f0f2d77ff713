"""Make a GPU machine's Python ready for the GPU run, from the bundle, with the standard library alone.

Run by ``tools/gpu_run.sh`` with the machine's own ``python3`` before anything imports NumPy or
Numba. The machine may lack what the course pins (numba-cuda, numba, Keras, nvtx) or hold other
versions of them, and may have no libNVVM (numba-cuda's compiler). For each pin that is missing
or differs, the wheel from ``.gpu-bundle/`` (``tools/gpu_bundle.sh``) is unpacked into a folder
put first on ``PYTHONPATH``, with those of its requirements that the machine does not already
satisfy; a pin whose requirements neither the machine nor the bundle meets is left as the
machine has it, and the record says why. The machine's own packages are never changed.

Then numba-cuda (whichever is used) is asked where it finds libNVVM, libdevice and the static
libcudadevrt (grid barriers link it); where any is missing, the bundle's copies are unpacked into a
toolkit folder that ``CUDA_HOME`` names (numba-cuda and cuda-pathfinder search it last).

Writes ``WORK/env.sh`` (the variables to export) and the record, JSON, of every decision.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

#: numba-cuda's own search, asked in a child process that sees the chosen packages.
CUDA_PROBE = r"""
import json
from numba.cuda import cuda_paths
found = {}
for key in ("nvvm", "libdevice", "static_cudalib_dir", "nvrtc", "cudalib_dir", "include_dir"):
    try:  # each on its own: get_cuda_paths() raises for all when one (NVRTC) is missing
        value = getattr(cuda_paths, "_get_%s_path" % key, None) or getattr(cuda_paths, "_get_%s" % key)
        by, path = value()
        found[key] = {"found_by": by, "path": path}
    except Exception as error:
        found[key] = {"error": "%s: %s" % (type(error).__name__, str(error).splitlines()[0][:300])}
print(json.dumps(found))
"""

#: What numba-cuda must find, and where the bundle keeps each under its ``cuda/`` folder (xz).
CUDA_PARTS = {"nvvm": "nvvm/lib64/libnvvm.so.4", "libdevice": "nvvm/libdevice/libdevice.10.bc",
              "static_cudalib_dir": "lib64/libcudadevrt.a"}


# ---- versions and requirements, without the `packaging` library ----------------------------

def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(version: str) -> tuple:
    """A comparable key for release versions ("0.30.4", "2.5.2", "13.0.88"); a pre-release
    ("0.50.0dev0", "1.0rc1") sorts before its release."""
    match = re.match(r"(\d+(?:\.\d+)*)(.*)", version.strip())
    if not match:
        return ((0,), 0)
    numbers = tuple(int(part) for part in match.group(1).split("."))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers = numbers[:-1]
    return (numbers, 0 if match.group(2) and not match.group(2).startswith((".post", "post", "+")) else 1)


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` meets a requirement's specifier (">=0.60.0,<0.51", "==13.*", "")."""
    for clause in filter(None, (part.strip() for part in specifier.split(","))):
        match = re.match(r"(~=|==|!=|<=|>=|<|>)\s*(\S+)", clause)
        if not match:
            return False
        op, wanted = match.groups()
        if wanted.endswith(".*"):
            prefix = wanted[:-2].split(".")
            same = version.split(".")[:len(prefix)] == prefix
            if (op == "==" and not same) or (op == "!=" and same):
                return False
            continue
        have, want = version_key(version), version_key(wanted)
        if op == "~=":
            upper = wanted.split(".")[:-1]
            if not (have >= want and version.split(".")[:len(upper)] == upper):
                return False
        elif not {"==": have == want, "!=": have != want, "<=": have <= want, ">=": have >= want,
                  "<": have < want, ">": have > want}[op]:
            return False
    return True


def marker_applies(marker: str) -> bool:
    """Requirements behind an extra are not installed; the course's platform markers (Linux,
    CPython 3.12) hold on the GPU machine. A marker this cannot read is taken to apply."""
    if "extra" in marker:
        return False
    if "sys_platform" in marker and "linux" not in marker and "!=" not in marker:
        return False
    return True


def parse_requirement(text: str) -> tuple[str, str] | None:
    """(name, specifier) of one ``Requires-Dist`` line, or None where its marker excludes it."""
    requirement, _, marker = text.partition(";")
    if marker and not marker_applies(marker):
        return None
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*\(?([^)]*)\)?", requirement)
    if not match:
        return None
    return normalize(match.group(1)), match.group(3).strip()


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# ---- the choice ------------------------------------------------------------------------------

def choose(pins: dict, wheels: dict, installed, optional=()) -> tuple[list[str], list[dict]]:
    """Which bundle wheels to use: (wheel names in install order, one decision per pin).

    ``pins``: name -> pinned version; ``wheels``: name -> {"version", "file", "requires": [...]};
    ``installed(name)``: the machine's version or None. A pin the machine already has is kept;
    one that is missing or differs comes from the bundle with each requirement the machine does
    not meet; where neither meets one, the machine's own is kept and the decision says why.
    ``optional``: requirements the bundle leaves out on purpose because the run never imports them
    (h5py, which Keras needs only to read and write .h5 files): unmet, they are noted, not refused.
    """
    chosen: dict[str, str] = {}  # name -> version, from the bundle
    decisions = []
    notes: list[str] = []

    def have(name: str) -> str | None:
        return chosen.get(name) or installed(name)

    def take(name: str, trail: dict) -> str | None:
        """Add ``name``'s wheel and what it needs to ``trail``; the reason it can't, or None."""
        wheel = wheels[name]
        trail[name] = wheel["version"]
        for line in wheel["requires"]:
            parsed = parse_requirement(line)
            if parsed is None:
                continue
            need, spec = parsed
            current = trail.get(need) or have(need)
            if current is not None and satisfies(current, spec):
                continue
            if need in wheels and need not in trail and satisfies(wheels[need]["version"], spec):
                reason = take(need, trail)
                if reason:
                    return reason
                continue
            if need in optional:
                notes.append(f"{name} {wheel['version']} lists {need}{spec}, which neither the machine nor the bundle has: "
                             "the run does not use it")
                continue
            bundled = f"the bundle's is {wheels[need]['version']}" if need in wheels else "the bundle has none"
            return (f"{name} {wheel['version']} needs {need}{spec}: this machine has "
                    f"{current or 'none'}, {bundled}")
        return None

    for name, pinned in pins.items():
        machine = installed(name)
        decision = {"package": name, "pinned": pinned, "machine": machine}
        notes.clear()
        if machine == pinned:
            decision.update(used="machine", why="the machine has the pinned version")
        elif name not in wheels:
            decision.update(used="machine", why="not in the bundle")
        else:
            trail: dict[str, str] = {}
            reason = take(name, trail)
            if reason:
                decision.update(used="machine" if machine else "none", why=reason)
            else:
                added = {k: v for k, v in trail.items() if k not in chosen}
                chosen.update(trail)
                decision.update(used="bundle", why=f"the machine has {machine or 'none'}",
                                with_requirements={k: v for k, v in added.items() if k != name})
                if notes:
                    decision["notes"] = list(notes)
        decisions.append(decision)
    return list(chosen), decisions


def unpack_wheel(wheel: Path, site: Path) -> None:
    """Install a wheel by unpacking it (what pip does for these, less the scripts)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            parts = member.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue  # scripts, headers: not needed to import
                target = site.joinpath(*parts[2:])
            else:
                target = site / member
            if member.endswith("/"):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            if (archive.getinfo(member).external_attr >> 16) & 0o111:
                target.chmod(0o755)


def probe_cuda(python: str, env: dict) -> dict:
    """numba-cuda's own answer: where it finds NVVM, libdevice, NVRTC and the static libraries."""
    try:
        done = subprocess.run([python, "-c", CUDA_PROBE], env=env, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"{type(error).__name__}: {error}"}
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def missing_parts(paths: dict) -> list[str]:
    if "error" in paths:
        return list(CUDA_PARTS)
    missing = []
    for key in CUDA_PARTS:
        path = (paths.get(key) or {}).get("path")
        if isinstance(path, (list, tuple)):  # (found_by, path) pairs nest in some versions
            path = path[-1]
        if not path or not os.path.exists(path):
            missing.append(key)
        elif key == "static_cudalib_dir" and not os.path.exists(os.path.join(path, "libcudadevrt.a")):
            missing.append(key)
    return missing


def unpack_toolkit(bundle: Path, toolkit: Path) -> list[str]:
    written = []
    for relative in CUDA_PARTS.values():
        source = bundle / "cuda" / (relative + ".xz")
        if not source.is_file():
            continue
        target = toolkit / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(source) as packed, open(target, "wb") as out:
            shutil.copyfileobj(packed, out)
        written.append(relative)
    if (toolkit / "nvvm/lib64/libnvvm.so.4").exists() and not (toolkit / "nvvm/lib64/libnvvm.so").exists():
        os.symlink("libnvvm.so.4", toolkit / "nvvm/lib64/libnvvm.so")
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True, type=Path)
    parser.add_argument("--work", required=True, type=Path, help="a scratch folder (the site and toolkit go there)")
    parser.add_argument("--record", required=True, type=Path, help="where the JSON record goes")
    args = parser.parse_args(argv)
    site, toolkit = args.work / "site", args.work / "cuda"
    record: dict = {"python": sys.executable, "python_version": sys.version.split()[0], "bundle": str(args.bundle)}
    manifest_path = args.bundle / "manifest.json"
    env = dict(os.environ)
    exports: dict[str, str] = {}
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
    here = "%d.%d" % sys.version_info[:2]
    if manifest is not None and manifest.get("python") != here:
        record["packages"] = (f"the bundle holds wheels for Python {manifest.get('python')}, this is {here}: "
                              "the machine's own packages are used")
        record["from_bundle"] = {}
    elif manifest is not None:
        wheels = {normalize(w["name"]): w for w in manifest["wheels"]}
        pins = {normalize(k): v for k, v in manifest["pins"].items()}
        optional = [name for name, left in manifest.get("left_out", {}).items() if left.get("not_imported")]
        names, record["packages"] = choose(pins, wheels, lambda name: installed_version(name), optional)
        site.mkdir(parents=True, exist_ok=True)
        for name in names:
            unpack_wheel(args.bundle / "wheels" / wheels[name]["file"], site)
        record["from_bundle"] = {name: wheels[name]["version"] for name in names}
        if names:
            exports["PYTHONPATH"] = str(site)
    else:
        record["packages"] = "no bundle (tools/gpu_bundle.sh makes it): the machine's own packages are used"
    if isinstance(record["packages"], str):
        print(f"prepare: {record['packages']}")
        record["from_bundle"] = {}
    if exports.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [exports["PYTHONPATH"], env.get("PYTHONPATH")]))
    paths = probe_cuda(sys.executable, env)
    record["cuda_paths"] = paths
    missing = missing_parts(paths)
    record["cuda_missing"] = missing
    if missing and (args.bundle / "cuda").is_dir():
        record["cuda_from_bundle"] = unpack_toolkit(args.bundle, toolkit)
        exports["CUDA_HOME"] = str(toolkit)
        env["CUDA_HOME"] = str(toolkit)
        record["cuda_paths_after"] = paths_after = probe_cuda(sys.executable, env)
        record["cuda_missing_after"] = missing_parts(paths_after)
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=2) + "\n")
    lines = [f"export {key}={value!r}" if key != "PYTHONPATH" else
             f"export PYTHONPATH={value!r}${{PYTHONPATH:+:$PYTHONPATH}}" for key, value in exports.items()]
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "env.sh").write_text("\n".join(lines) + "\n")
    for decision in record["packages"] if isinstance(record["packages"], list) else []:
        print(f"prepare: {decision['package']} {decision['used']} ({decision['why']})")
    if missing:
        print(f"prepare: numba-cuda did not find {', '.join(missing)}; "
              + (f"the bundle's copies under CUDA_HOME={toolkit}" if "CUDA_HOME" in exports else "no bundle to supply them"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
