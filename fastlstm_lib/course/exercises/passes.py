"""Which exercises the learner has passed, for ``fl.exercises.progress()``: kept in
``<cache>/exercises_passed.json`` (``kept.cache_root()``), or for this process only where nothing
can be written (``FASTLSTM_DISK_CACHE=0``).
"""

from __future__ import annotations

import datetime
import json
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
    try:  # a file half-written by a crash reads as unreadable: the passes are then kept anew
        path().parent.mkdir(parents=True, exist_ok=True)
        path().write_text(json.dumps(done, indent=1, sort_keys=True))
    except OSError:  # nowhere to keep it: this process remembers
        pass


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
