"""Recordings and estimates kept on disk, so that each notebook need not make the ladder's again.

A ladder notebook (02-09) shows every step so far at the article's size, recorded with the M40's
and the H100's launch geometry and estimated by the timeline model, and notebook 11 the whole
ladder: about a second each, the same ones made again in every notebook's own Python process.
Each is a function of the library's code and data, numba-cuda and its arguments, and of nothing
else, so ``fl.profile`` keeps each recording it makes with a GPU's geometry (``chip=``), and
``lesson.estimate_ms`` each estimate, on disk, and reads them back there after:

    <cache>/kept/<fingerprint>/<hash of the key: what, step, size, GPU, ...>.pickle.zlib

- ``<cache>``: ``$FASTLSTM_CACHE``, else ``~/.cache/fastlstm`` (where the fake GPU keeps its
  driver too). ``FASTLSTM_DISK_CACHE=0``: nothing is read or written.
- ``<fingerprint>``: a hash of every file a recording or an estimate can read (the package's
  ``.py`` files, ``data/*.csv``, the SASS listings in ``data/kernel_sass/``), numba-cuda's and
  Python's versions, the backend (GPU, simulator or a stand-in driver's name) and numba-cuda's default-stream
  setting. Change any of them and no old file is read; the old fingerprints' folders are removed
  when a new one is first written.
- Safe to share between processes (two pytest workers, two notebooks): a file is written under a
  temporary name and renamed into place, so it is whole or absent; one that does not load as
  what it should hold is made again and replaced. Where nothing can be written (a read-only home
  directory), values are simply made in the process, as without this module.
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
    """``$FASTLSTM_CACHE``, else ``~/.cache/fastlstm``: the project's one cache folder (the fake GPU's
    driver is built under it too, ``tests/fakegpu/shim.py``). Importing this module imports nothing
    of the library's, so the fake GPU can ask before the library has chosen its backend."""
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
    """The value kept for ``key`` (a tuple whose ``repr`` names the value whole: what it is and
    every argument), or ``make()``'s, kept for the next process. ``kind``: what a kept file must
    hold (anything else is made again)."""
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
