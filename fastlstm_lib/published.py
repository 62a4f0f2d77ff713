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


#: FP32 (non-Tensor-Core) peak of some GPUs, TFLOP/s, from the vendors' data sheets (boost
#: clock). Used only to report what fraction of its peak a step reaches; unknown GPUs get None.
FP32_PEAK_TFLOPS = {
    "Tesla M40": 7.0,
    "H100 SXM": 66.9,
    "H100 80GB HBM3": 66.9,
    "H100 PCIe": 51.2,
    "H200": 66.9,
    "A100": 19.5,
    "V100": 15.7,
}


def fp32_peak_tflops(device_name: str) -> float | None:
    """The FP32 peak of a GPU named like ``device_info()['name']``, or None if unknown."""
    for key, peak in FP32_PEAK_TFLOPS.items():
        if key.lower() in str(device_name).lower():
            return peak
    return None


def ladder_comparison(results: list[dict]) -> list[dict]:
    """One row per published step (then per measured step the article did not have, such as
    ``persistent`` or ``keras_cudnn``): the M40's GFLOP/s and speedup beside each device's.

    ``results``: ``fl.bench`` dicts at the article's config (others, and simulator results, are
    ignored). Speedups are relative to the same device's baseline, as in the article.
    """
    from .config import LSTMConfig

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
