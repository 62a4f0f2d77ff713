"""The estimate's constants, read from data/model_constants.csv (each with its source):
``constant(name, key)``, ``key`` an architecture, a compute capability or "all".
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

CSV = Path(__file__).resolve().parents[3] / "data" / "model_constants.csv"


@functools.lru_cache(maxsize=1)
def model_constants() -> dict:
    """{(name, key): {"value", "unit", "cited", "source"}} from data/model_constants.csv."""
    with CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return {(row["name"], row["key"]): {"value": float(row["value"]), "unit": row["unit"],
                                        "cited": row["cited"] == "1", "source": row["source"]} for row in rows}


def constant(name: str, key: str = "all") -> float:
    """The value of constant ``name`` for ``key``; KeyError naming both when the CSV lacks it."""
    table = model_constants()
    if (name, key) in table:
        return table[(name, key)]["value"]
    if (name, "all") in table:
        return table[(name, "all")]["value"]
    raise KeyError(f"data/model_constants.csv has no {name!r} for {key!r}")
