"""Build ``.gpu-bundle/``: what the GPU machine (no internet) may lack, at most 40 MiB.

``bash tools/gpu_bundle.sh`` runs this here, where PyPI is reachable. It holds:

- ``wheels/``: CPython 3.12 manylinux x86-64 wheels of the course's pins that the GPU run uses
  (numba-cuda, numba, Keras, nvtx, read from ``pyproject.toml``) and of what they need, less what
  is too large or already on the machine (``LEFT_OUT``, each with its reason);
- ``cuda/``: libNVVM and libdevice (``nvidia-nvvm``) and the static libcudadevrt that grid
  barriers link (``nvidia-cuda-runtime``), at the versions the test extras pin, xz-compressed;
- ``manifest.json``: every file, its version, size and requirements, and what was left out.

``prepare.py`` (on the GPU machine) uses each only where the machine's own is missing or differs.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / ".gpu-bundle"
LIMIT_BYTES = 40 * 2**20
#: The manifest's layout; a bundle of another is built again.
FORMAT = 2
#: The pins the GPU run uses (their Linux line in pyproject.toml), and the CUDA wheels it takes files from.
PINNED = ("numba-cuda", "numba", "keras", "nvtx")
CUDA_WHEELS = {"nvidia-nvvm": {"nvidia/cu13/lib/libnvvm.so.4": "nvvm/lib64/libnvvm.so.4",
                               "nvidia/cu13/nvvm/libdevice/libdevice.10.bc": "nvvm/libdevice/libdevice.10.bc"},
               "nvidia-cuda-runtime": {"nvidia/cu13/lib/libcudadevrt.a": "lib64/libcudadevrt.a"}}
#: Left out of wheels/, each with the reason the record gives.
LEFT_OUT = {
    "numpy": "the GPU machine has NumPy 2.5.2, which numba 0.68.1 accepts (<2.6)",
    "llvmlite": "57 MiB, over the bundle's limit alone: numba 0.68.1 is used only where the machine's llvmlite is 0.50",
    "h5py": "5 MiB; Keras imports it only to read and write .h5 files, which the GPU run does not",
    "cuda-bindings": "8 MiB; numba-cuda 0.30.4 accepts the machine's own (12.9.1 to 13.x), which torch's CUDA 13 stack brings",
}
#: Of those, the ones the run never imports although a bundled wheel lists them (prepare.py lets
#: them be missing): Keras imports h5py only to read and write .h5 files.
NOT_IMPORTED = ("h5py",)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64", "linux_x86_64")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def linux_pins(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """name -> version of every exact pin that applies on Linux x86-64 (dependencies and extras)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    lines = list(project["dependencies"]) + [line for extra in project["optional-dependencies"].values() for line in extra]
    pins = {}
    for line in lines:
        requirement, _, marker = line.partition(";")
        if "darwin'" in marker and "!=" not in marker.split("darwin")[0][-4:]:
            continue  # the macOS-only lines
        name, _, version = requirement.partition("==")
        pins.setdefault(normalize(name.strip()), version.strip())
    return pins


def wheel_metadata(path: Path) -> dict:
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode()
    field = lambda key: [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(key + ":")]
    return {"name": field("Name")[0], "version": field("Version")[0], "file": path.name,
            "bytes": path.stat().st_size, "requires": field("Requires-Dist")}


def pip_download(requirements: list[str], into: Path, deps: bool) -> None:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--python-version", "3.12",
               "--implementation", "cp", "-d", str(into)] + [f"--platform={p}" for p in PLATFORMS]
    subprocess.run(command + ([] if deps else ["--no-deps"]) + requirements, check=True)


def compress(source: bytes, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if shutil.which("xz"):  # several threads: a minute for libNVVM instead of several
        done = subprocess.run(["xz", "-9", "-T0", "-c"], input=source, capture_output=True, check=True)
        target.write_bytes(done.stdout)
    else:
        target.write_bytes(lzma.compress(source, preset=9))


def build(bundle: Path = BUNDLE, limit: int = LIMIT_BYTES) -> dict:
    pins = linux_pins()
    wanted = {name: pins[name] for name in PINNED}
    cuda = {name: pins[name] for name in CUDA_WHEELS}
    manifest_path = bundle / "manifest.json"
    if manifest_path.is_file():
        old = json.loads(manifest_path.read_text())
        if old.get("pins") == wanted and old.get("cuda_pins") == cuda and old.get("format") == FORMAT:
            print(f"{bundle} is up to date ({old['total_bytes'] / 2**20:.1f} MiB)")
            return old
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        pip_download([f"{n}=={v}" for n, v in wanted.items()], scratch / "wheels", deps=True)
        pip_download([f"{n}=={v}" for n, v in cuda.items()], scratch / "cuda", deps=False)
        fresh = bundle.with_name(bundle.name + ".new")
        shutil.rmtree(fresh, ignore_errors=True)
        (fresh / "wheels").mkdir(parents=True)
        wheels, left_out = [], {}
        for path in sorted((scratch / "wheels").glob("*.whl")):
            meta = wheel_metadata(path)
            name = normalize(meta["name"])
            if name in LEFT_OUT:
                left_out[name] = {"version": meta["version"], "bytes": meta["bytes"], "why": LEFT_OUT[name],
                                  "not_imported": name in NOT_IMPORTED}
                continue
            shutil.copy2(path, fresh / "wheels" / path.name)
            wheels.append(meta)
        files = []
        for wheel_name, members in CUDA_WHEELS.items():
            path = next((scratch / "cuda").glob(normalize(wheel_name).replace("-", "_") + "-*.whl"))
            with zipfile.ZipFile(path) as archive:
                for member, relative in members.items():
                    target = fresh / "cuda" / (relative + ".xz")
                    compress(archive.read(member), target)
                    files.append({"file": f"cuda/{relative}.xz", "from": path.name, "bytes": target.stat().st_size})
        total = sum(w["bytes"] for w in wheels) + sum(f["bytes"] for f in files)
        manifest = {"format": FORMAT, "pins": wanted, "cuda_pins": cuda, "python": "3.12", "platform": "manylinux x86_64",
                    "wheels": wheels, "cuda": files, "left_out": left_out, "total_bytes": total,
                    "limit_bytes": limit}
        (fresh / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if total > limit:
            raise SystemExit(f"the bundle is {total / 2**20:.1f} MiB, over its {limit / 2**20:.0f} MiB limit: "
                             f"see {fresh / 'manifest.json'}")
        shutil.rmtree(bundle, ignore_errors=True)
        fresh.rename(bundle)
    print(f"wrote {bundle}: {len(wheels)} wheels and {len(files)} CUDA files, {total / 2**20:.1f} MiB "
          f"(limit {limit / 2**20:.0f} MiB); left out: {', '.join(sorted(left_out))}")
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BUNDLE, help="default: .gpu-bundle/ at the repository root")
    args = parser.parse_args(argv)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
