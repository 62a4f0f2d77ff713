"""The ladder's benchmark results for the course: the committed ones (data/results/, read by
``fastlstm_lib/results.py``), ``check_results`` (the one check of a list of ``fl.bench``
results) and a plain-text table.
"""

from __future__ import annotations

import math
import numbers

from ..results import RESULTS, load_results
from ..tables import Column, Span, table

#: What ``format_table`` reads of a measured result ("a.b": key b of the dict under key a).
TABLE_KEYS = ("step", "config", "device.name", "times_meaningful", "time_ms.median", "time_ms.min", "time_ms.max",
              "gflops", "relative_error.after")
#: A step skipped where it cannot run (``harness.bench_or_skip``).
SKIPPED_KEYS = ("step", "config", "skipped")
_NUMBERS = ("time_ms.median", "time_ms.min", "time_ms.max", "gflops")


def _lookup(row: dict, key: str):
    """(found, value) for a dotted key."""
    value = row
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def check_results(name: str, results, *, keys=TABLE_KEYS) -> list[dict]:
    """A list of result dicts, each with ``keys`` (as ``fl.bench`` returns) or a skipped step's
    ``{"step", "config", "skipped"}``: TypeError / ValueError naming the row and what it lacks."""
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"{name} must be a list of result dicts (as fl.bench returns), "
                        f"got {type(results).__name__} {results!r:.80}")
    for i, row in enumerate(results):
        if not isinstance(row, dict):
            raise TypeError(f"{name}[{i}] must be a result dict (as fl.bench returns), got {type(row).__name__} {row!r:.80}")
        wanted = SKIPPED_KEYS if "skipped" in row else keys
        missing = [key for key in wanted if not _lookup(row, key)[0]]
        if missing:
            what = "a skipped step's result" if "skipped" in row else "a result (as fl.bench returns)"
            raise ValueError(f"{name}[{i}] (step {row.get('step', '?')!r}) lacks {', '.join(map(repr, missing))}: "
                             f"{what} has {', '.join(wanted)}")
        if not isinstance(row["step"], str):
            raise TypeError(f"{name}[{i}]['step'] must be a step name (str), got {type(row['step']).__name__} {row['step']!r}")
        for key in (k for k in _NUMBERS if k in wanted):
            value = _lookup(row, key)[1]
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0 \
                    or (key == "time_ms.median" and value == 0):
                raise ValueError(f"{name}[{i}] (step {row['step']!r}) {key} must be a finite number "
                                 f"{'> 0' if key == 'time_ms.median' else '>= 0'}, got {value!r}")
    return list(results)


#: Options a ladder step's result may carry: how it was launched or what was timed, not what ran.
LADDER_OPTIONS = {"graph", "replay", "timed"}


def committed_results() -> list[dict]:
    """Every ladder step result committed under data/results/, each with its ``file``: passes
    launched as usual (not as CUDA Graphs). Results with options of their own and other
    measurements in the folder are left out."""
    return [dict(result, file=path.name) for path in sorted(RESULTS.glob("*.json"))
            for result in load_results(path) if "step" in result and "time_ms" in result
            and not (result.get("options") or {}).get("graph")
            and not set(result.get("options") or {}) - LADDER_OPTIONS]


STEP_COLUMNS = (Column("step", "<", 18), Column("median ms", ">", 10, ".3f"), Column("min-max ms", ">", 19),
                Column("GFLOP/s", ">", 9, ".1f"), Column("speedup", ">", 8), Column("rel err", ">", 9))


def format_table(results: list[dict]) -> str:
    """A plain-text table: one line per step, speedup relative to the first measured; a step
    skipped here (``{"step", "skipped": reason}``, see ``harness.bench_or_skip``) with its reason."""
    results = check_results("results", results)
    if not results:
        return "(no results)"
    measured = [r for r in results if "skipped" not in r]
    base = measured[0]["time_ms"]["median"] if measured else None
    rows = []
    for r in results:
        if "skipped" in r:
            rows.append([r["step"], Span(f"skipped: {r['skipped']}")])
            continue
        t = r["time_ms"]
        error = r["relative_error"]["after"]  # None on a stand-in driver: no kernel ran
        rows.append([r["step"], t["median"], f"{t['min']:>9.3f}-{t['max']:<9.3f}", r["gflops"],
                     f"{base / t['median']:.2f}x", "not run" if error is None else f"{error:.1e}"])
    lines = [table(STEP_COLUMNS, rows)]
    if not measured:
        return "\n".join(lines + [f"config: {results[0]['config']}"])
    device = measured[0]["device"]
    lines.append(f"device: {device['name']}; config: {measured[0]['config']}")
    if not measured[0]["times_meaningful"]:
        lines.append("simulator: these times measure Python threads on the CPU, not a GPU. They mean nothing.")
    return "\n".join(lines)
