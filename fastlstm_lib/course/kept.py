"""Recordings and estimates kept on disk (``kept``), so that each notebook need not make the
ladder's again: under ``cache_root()/kept/fingerprint()/``, where ``fingerprint`` hashes all a
value can depend on; written whole or not at all (renamed into place). ``FASTLSTM_DISK_CACHE=0``
turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # fastlstm_lib/
DATA = PACKAGE.parent / "data"


def cache_root() -> Path:
    """``$FASTLSTM_CACHE``, else ``~/.cache/fastlstm``. Imports nothing of the library's (the fake GPU asks early)."""
    return Path(os.environ.get("FASTLSTM_CACHE") or Path.home() / ".cache" / "fastlstm")


def enabled() -> bool:
    return os.environ.get("FASTLSTM_DISK_CACHE", "1").strip() not in ("0", "")


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """What every kept recording depends on, hashed (see the module doc)."""
    from importlib import metadata

    from ..runtime.device import DEVICE

    digest = hashlib.sha256()
    try:
        numba_cuda = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        numba_cuda = "numba's own numba.cuda"
    backend = DEVICE.stand_in or DEVICE.kind
    digest.update(repr((numba_cuda, sys.version, backend,
                        os.environ.get("NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM", ""))).encode())
    files = sorted(PACKAGE.rglob("*.py")) + sorted(DATA.glob("*.csv")) + sorted(DATA.glob("kernel_sass/*.sass"))
    for path in files:
        digest.update(str(path.relative_to(PACKAGE.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def kept(key: tuple, make, kind: type):
    """The value kept for ``key`` (a tuple whose repr names it whole), or ``make()``'s, kept.
    ``kind``: what a kept file must hold (anything else is made again)."""
    if not enabled():
        return make()
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".pickle.zlib"
    path = cache_root() / "kept" / fingerprint() / name
    try:
        found = pickle.loads(zlib.decompress(path.read_bytes()))
        if isinstance(found, kind):
            return found
    except Exception:  # absent, half-written by a crashed writer, another version's: made again
        pass
    made = make()
    _keep(path, made)
    return made


def _keep(path: Path, value) -> None:
    folder = path.parent
    try:
        if not folder.is_dir():
            for old in folder.parent.glob("*"):  # other fingerprints: recordings of other code
                if old.name != folder.name:
                    shutil.rmtree(old, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:  # nowhere to keep it: the value is still returned
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1))
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
