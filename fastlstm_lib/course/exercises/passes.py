"""Which exercises the learner has passed, kept across notebooks and sessions, for ``fl.exercises.progress()``.

``fl.check(name, candidate)`` records a pass of the learner's own code (never the library's
solution, ``fl.check(name)``) in ``<cache>/exercises_passed.json``, ``<cache>`` being the
project's one cache folder (``kept.cache_root()``: ``$FASTLSTM_CACHE``, else
``~/.cache/fastlstm``), outside the recordings' fingerprinted folders, so that a change of the
library's code keeps it. The file maps each exercise passed to the date it was first passed. Where
nothing can be written (a read-only home, ``FASTLSTM_DISK_CACHE=0``) passes are kept for this
process only. The table depends on what this machine has seen: a notebook that shows it tags the
cell ``nbval-ignore-output``.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from pathlib import Path

from ...tables import Column, table
from .. import kept

FILE = "exercises_passed.json"
_this_process: dict[str, str] = {}  # passes kept in memory, where the file cannot be


def path() -> Path:
    return kept.cache_root() / FILE


def passed() -> dict[str, str]:
    """{exercise: the date it was first passed}, from the file and this process."""
    found = {}
    if kept.enabled():
        try:
            loaded = json.loads(path().read_text())
            if isinstance(loaded, dict):
                found = {str(k): str(v) for k, v in loaded.items()}
        except (OSError, ValueError):  # none yet, or unreadable: nothing passed on record
            pass
    return found | {k: v for k, v in _this_process.items() if k not in found}


def record(name: str) -> None:
    """Keep a pass of exercise ``name`` (the first date stays)."""
    done = passed()
    if name in done:
        return
    done[name] = _this_process[name] = datetime.date.today().isoformat()
    if not kept.enabled():
        return
    try:
        path().parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path().parent, suffix=".tmp")
    except OSError:  # nowhere to keep it: this process remembers
        return
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(done, out, indent=1, sort_keys=True)
        os.replace(temporary, path())
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def report(exercises) -> str:
    """The table: every exercise (``Exercise`` records, in notebook order), passed or not yet."""
    done = passed()
    rows = [[e.notebook, e.name, e.difficulty, f"passed {done[e.name]}" if e.name in done else "not yet"]
            for e in exercises]
    columns = [Column("notebook", "<", 8), Column("exercise", "<", 16), Column("difficulty", "<", 10),
               Column("you", "<", None)]
    count = sum(e.name in done for e in exercises)
    return (table(columns, rows, sep="  ") + f"\n{count} of {len(rows)} passed (kept in the course's cache folder, "
            "$FASTLSTM_CACHE or ~/.cache/fastlstm)")
