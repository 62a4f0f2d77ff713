"""The compile matrix's keys: for each kernel (a row name of the table, one ``Build``), a hash of
what decides its machine code, so that a change to one kernel makes only its own rows and
listings stale (``--check``) and rebuilt (the cache), and a commit that edits one kernel rewrites
only those.

A kernel's key hashes (``kernel_keys``):

- its files (``kernel_files``): the version file whose spec builds it (``owners``: the family
  packages' version modules, as ``fastlstm_lib.kernels.family`` finds them) and the files it
  imports, read from the source with ``ast`` (``imported``): not from ``sys.modules``, which
  holds every kernel of the library once anything imports ``fastlstm_lib`` (so it cannot tell
  one kernel's files from another's), and so that a key depends on the files alone. Every ``import`` and ``from ... import``
  counts, those inside functions included, that names a module of ``fastlstm_lib/``:
  ``from package import name`` counts ``package/name.py`` where there is one, else
  ``package/__init__.py`` (the name comes from there). A package's ``__init__`` is not counted
  merely because a submodule of it is imported: the families' ``__init__`` only gather their
  versions, and counting them would make every version depend on every other. The imports of
  kernel-package modules (``fastlstm_lib/kernels/``) are followed transitively; a library module
  outside it (``gpus.py``, ``runtime/device.py``, ``checks.py``) counts as a file, with the data
  files it names (a string constant equal to a file's name in ``data/``: ``gpus.py``'s
  ``"gpus.csv"``, the chips the persistent kernels are planned for), but its own imports are not
  followed: they are the library's runtime (device selection, argument checks), which the
  matrix's worker sets up itself, not code a kernel is compiled from. The matrix's outputs never
  count;
- the matrix's own code (``MATRIX``: its modules, and the instruction classes it counts by);
- the compilers' and Numba's versions (``toolkits.versions``).

Rows built from the same version file share a key (they share their sources). The table records
each row's key in its ``key`` column, each SASS listing its kernel's key in its key line.
"""

from __future__ import annotations

import ast
import hashlib
import json
import pkgutil
from pathlib import Path

from .toolkits import versions

ROOT = Path(__file__).resolve().parents[2]
#: The project's package: the files of its modules that a kernel's files import count; imports of
#: anything else (numba, numpy) do not.
PACKAGE = "fastlstm_lib"
#: The kernel package: the imports of its modules are followed, transitively.
KERNELS = "fastlstm_lib/kernels"
#: The matrix's own code, part of every key: its modules and the instruction classes it counts the loop mix by.
MATRIX = ("tools/compile_matrix/*.py", "fastlstm_lib/course/sass.py")
#: What the matrix writes: never part of a key, although a module may name it.
OUTPUTS = ("data/kernel_resources.csv", "data/kernel_sass")


def _module_file(name: str, root: Path) -> Path | None:
    """The file of module ``name`` ("fastlstm_lib.gpus") under ``root``, or None where there is none."""
    path = root.joinpath(*name.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def _module_name(path: Path, root: Path) -> str:
    """The dotted name of the module in ``path`` ("fastlstm_lib.kernels.gemm" for its ``__init__.py``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = ROOT) -> set[Path]:
    """The files of ``PACKAGE`` under ``root`` that the module in ``path`` imports (the rules in
    the module docstring), and the data files it names."""
    path, root = Path(path), Path(root)
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [(base, alias.name) for alias in node.names]
        else:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= _data_file(node.value, root)
            continue
        for module, member in targets:
            if module.split(".")[0] != PACKAGE:
                continue
            target = (member and _module_file(f"{module}.{member}", root)) or _module_file(module, root)
            if target is not None:
                found.add(target)
    return found


def _data_file(text: str, root: Path) -> set[Path]:
    """{data/TEXT} where ``text`` names a file of ``root``/data ("gpus.csv", "data/gpus.csv") that is no output."""
    if not text or "\n" in text or len(text) > 200:
        return set()
    name = text[len("data/"):] if text.startswith("data/") else text
    if Path(name).is_absolute() or ".." in Path(name).parts:
        return set()
    path = root / "data" / name
    if not path.is_file() or any(path.relative_to(root).as_posix().startswith(output) for output in OUTPUTS):
        return set()
    return {path}


def kernel_files(path: Path, root: Path = ROOT) -> list[Path]:
    """The version file ``path`` and what it imports (``imported``), sorted: the imports of kernel
    package modules (``KERNELS``) followed transitively; of another library module, only the data
    files it names."""
    path, root = Path(path), Path(root)
    seen, todo = {path}, [path]
    while todo:
        for found in imported(todo.pop(), root) - seen:
            seen.add(found)
            if (root / KERNELS) in found.parents:
                todo.append(found)
            elif found.suffix == ".py":  # a library module: the data files it names, not its imports
                seen |= {data for data in imported(found, root) if (root / "data") in data.parents}
    return sorted(seen)


def owners() -> dict[str, Path]:
    """Row name -> the version file whose spec builds it, for every ``Build`` of every spec
    (``fastlstm_lib.kernels.versions.every``), in that order."""
    from fastlstm_lib import kernels
    from fastlstm_lib.kernels.family import specs, versions as family_versions
    from fastlstm_lib.kernels.versions import every

    files = {}
    for info in pkgutil.iter_modules(kernels.__path__):
        if info.ispkg:
            for module in family_versions(f"{kernels.__name__}.{info.name}"):
                files.update({id(spec): Path(module.__file__) for spec in specs((module,))})
    found = {}
    for spec in every():
        if id(spec) not in files:
            raise RuntimeError(f"spec {spec.name!r} is in no version file of a family under {Path(kernels.__file__).parent}")
        for build in spec.builds():
            found[build.row] = files[id(spec)]
    return found


def _digest(digest, paths, root: Path) -> None:
    """Feed each of ``paths`` (its name under ``root``, then its bytes) to ``digest``."""
    for path in paths:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")


def kernel_keys(files: dict[str, Path] | None = None, root: Path = ROOT) -> dict[str, str]:
    """Row name -> its key (16 hex digits): the hash of its files (``kernel_files`` of its version
    file in ``files``, default ``owners()``), the matrix's code (``MATRIX``) and the compilers'
    versions, all under ``root``."""
    if files is None:
        files = owners()
    if not isinstance(files, dict) or not files:
        raise ValueError(f"files must be a non-empty dict of row name -> version file, got {files!r}")
    root = Path(root)
    common = hashlib.sha256(json.dumps(versions(), sort_keys=True).encode())
    _digest(common, sorted(path for pattern in MATRIX for path in root.glob(pattern)), root)
    keys, by_file = {}, {}
    for row, path in files.items():
        if path not in by_file:
            digest = common.copy()
            _digest(digest, kernel_files(path, root), root)
            by_file[path] = digest.hexdigest()[:16]
        keys[row] = by_file[path]
    return keys
