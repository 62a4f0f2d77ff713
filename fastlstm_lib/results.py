"""Measurements as files: ``data/results/`` (``RESULTS``), and writing and reading a results file.

Files under ``data/results/`` are the GPU measurements the notebooks show (the ladder's
``fl.bench`` results, the GEMM against cuBLAS, the backward ladder, the CNN layouts, data
feeding); nothing measured on the simulator belongs there. A file is ``{"results": [...]}``, any
list of JSON-able dicts. Below both the course (``course/results.py``: the ladder's committed
results and their table) and the topics, which keep their measurements here too.
"""

from __future__ import annotations

import json
from pathlib import Path

from .checks import check_path, check_writable_path

#: The committed measurements' folder.
RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"


def save_results(results: list[dict], path) -> Path:
    """Write results as JSON (device, config and versions are inside every entry). Any list of
    JSON-able dicts may be saved (GEMM rows, bounds); missing folders are made."""
    path = check_writable_path("path", path, make_parents=True)
    if not isinstance(results, (list, tuple)) or not all(isinstance(row, dict) for row in results):
        raise TypeError(f"results must be a list of dicts, got {type(results).__name__} {results!r:.80}")
    try:
        text = json.dumps({"results": list(results)}, indent=2) + "\n"
    except (TypeError, ValueError) as error:
        raise TypeError(f"results must be JSON-able (numbers, strs, lists, dicts): {error}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load_results(path) -> list[dict]:
    """The results a ``save_results`` file holds: ValueError if it is missing or not such a file."""
    path = check_path("path", path)
    if not path.is_file():
        raise ValueError(f"path must name a results file (save_results), got {str(path)!r}: "
                         + ("it is a directory" if path.is_dir() else "no such file"))
    try:
        record = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"path must name a results file (save_results), got {str(path)!r}: not JSON ({error})") from None
    if not isinstance(record, dict) or not isinstance(record.get("results"), list):
        raise ValueError(f"path must name a results file (save_results), got {str(path)!r}: "
                         'JSON without {"results": [...]}')
    return record["results"]
