"""Benchmark results as files: writing, reading, the committed ones, and a plain-text table.

A result is the JSON-able dict ``fl.bench`` returns (device, versions, config, timing method,
errors and times inside). Files under ``data/results/`` are the GPU measurements the notebooks
show; nothing measured on the simulator belongs there.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"


def save_results(results: list[dict], path) -> Path:
    """Write results as JSON (device, config and versions are inside every entry)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"results": results}, indent=2) + "\n")
    return path


def load_results(path) -> list[dict]:
    return json.loads(Path(path).read_text())["results"]


def committed_results() -> list[dict]:
    """Every step result (``fl.bench``) committed under data/results/, each with the ``file`` it came
    from. Other measurements in the same folder (the GEMM against cuBLAS, issue vs GPU times, CNN
    epochs) are left to their own readers."""
    return [dict(result, file=path.name) for path in sorted(RESULTS.glob("*.json"))
            for result in load_results(path) if "step" in result and "time_ms" in result]


def format_table(results: list[dict]) -> str:
    """A plain-text table: one line per step, speedup relative to the first measured; a step
    skipped here (``{"step", "skipped": reason}``, see ``harness.bench_or_skip``) with its reason."""
    if not results:
        return "(no results)"
    measured = [r for r in results if "skipped" not in r]
    base = measured[0]["time_ms"]["median"] if measured else None
    lines = [
        f"{'step':<18} {'median ms':>10} {'min-max ms':>19} {'GFLOP/s':>9} {'speedup':>8} {'rel err':>9}",
    ]
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['step']:<18} skipped: {r['skipped']}")
            continue
        t = r["time_ms"]
        error = r["relative_error"]["after"]  # None on the fake GPU (a test mode): no kernel ran
        lines.append(
            f"{r['step']:<18} {t['median']:>10.3f} {t['min']:>9.3f}-{t['max']:<9.3f} "
            f"{r['gflops']:>9.1f} {base / t['median']:>7.2f}x {'not run' if error is None else f'{error:.1e}':>9}"
        )
    if not measured:
        return "\n".join(lines + [f"config: {results[0]['config']}"])
    device = measured[0]["device"]
    lines.append(f"device: {device['name']}; config: {measured[0]['config']}")
    if not measured[0]["times_meaningful"]:
        lines.append("simulator: these times measure Python threads on the CPU, not a GPU. They mean nothing.")
    return "\n".join(lines)
