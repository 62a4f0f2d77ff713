"""The article's published numbers (``data/article_cudnn5.csv``: NVIDIA's cuDNN 5 blog, a Tesla
M40), and ours set beside them (``ladder_comparison``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..config import LSTMConfig
from ..gpus import fp32_peak_tflops
from .results import check_results

#: What ``ladder_comparison`` reads of a result ("a.b": key b of the dict under key a).
COMPARISON_KEYS = ("step", "config", "times_meaningful", "device.name", "gflops", "time_ms.median")

CSV = Path(__file__).resolve().parents[2] / "data" / "article_cudnn5.csv"
#: The GPU the article measured on, as data/gpus.csv names it.
ARTICLE_GPU = "M40"


def article_numbers() -> list[dict]:
    """NVIDIA's cuDNN 5 blog, M40, article config: step, optimization, GFLOP/s, speedup."""
    with CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return [
        {"step": r["step"], "optimization": r["optimization"], "gflops": float(r["gflops"]),
         "speedup": float(r["speedup"])}
        for r in rows
    ]


def article_ms() -> dict[str, float]:
    """{step: the article's ms per pass at its size}, from its published GFLOP/s."""
    from ..config import flops

    cfg = LSTMConfig.article()
    return {row["step"]: flops(cfg) / (row["gflops"] * 1e9) * 1e3 for row in article_numbers()}


def article_source() -> str:
    """The comment lines at the top of the CSV: conditions and source."""
    return "\n".join(line[2:].rstrip() for line in CSV.read_text().splitlines() if line.startswith("#"))


def ladder_comparison(results: list[dict]) -> list[dict]:
    """One row per published step (then per measured step the article lacks): the M40's GFLOP/s and
    speedup beside each device's. ``results``: ``fl.bench`` dicts at the article's config."""
    results = check_results("results", results, keys=COMPARISON_KEYS)
    article = LSTMConfig.article().as_dict()
    measured = [r for r in results if r.get("times_meaningful") and r["config"] == article]
    by_device: dict = {}
    for r in measured:  # the latest result of each (device, step) wins
        by_device.setdefault(r["device"]["name"], {})[r["step"]] = r
    published = {row["step"]: row for row in article_numbers()}
    # The article's steps in its order, then what it did not have (persistent, Keras) if measured.
    extra = [r["step"] for r in measured if r["step"] not in published]
    rows = []
    for step in [*published, *dict.fromkeys(extra)]:
        row = {"step": step, "M40 GFLOP/s": published[step]["gflops"] if step in published else None,
               "M40 speedup": published[step]["speedup"] if step in published else None}
        for device, steps in by_device.items():
            r, base = steps.get(step), steps.get("baseline")
            peak = fp32_peak_tflops(device)
            row[f"{device} GFLOP/s"] = r["gflops"] if r else None
            row[f"{device} speedup"] = base["time_ms"]["median"] / r["time_ms"]["median"] if r and base else None
            row[f"{device} % of FP32 peak"] = 100 * r["gflops"] / (peak * 1e3) if r and peak else None
        rows.append(row)
    return rows
