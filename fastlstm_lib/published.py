"""The published numbers the course sets its measurements beside (data/*.csv, with sources)."""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


def article_numbers() -> list[dict]:
    """NVIDIA's cuDNN 5 blog, M40, article config: step, optimization, GFLOP/s, speedup."""
    path = DATA / "article_cudnn5.csv"
    with path.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return [
        {"step": r["step"], "optimization": r["optimization"], "gflops": float(r["gflops"]),
         "speedup": float(r["speedup"])}
        for r in rows
    ]


def article_source() -> str:
    """The comment lines at the top of the CSV: conditions and source."""
    path = DATA / "article_cudnn5.csv"
    return "\n".join(line[2:].rstrip() for line in path.read_text().splitlines() if line.startswith("#"))


RESULTS = DATA / "results"


def committed_results() -> list[dict]:
    """Every benchmark result committed under data/results/ (each names its device)."""
    from .harness import load_results

    results = []
    for path in sorted(RESULTS.glob("*.json")):
        for result in load_results(path):
            result = dict(result, file=path.name)
            results.append(result)
    return results
