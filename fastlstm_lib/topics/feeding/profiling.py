"""Profiling a data generator (``lookup_batches``) under cProfile, to find its slow line before parallelizing it."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import numpy as np

from ...checks import check_int, check_records
from ...tables import Column, table


def key_as_text(state: np.ndarray) -> str:
    """A state's features turned into a string, to serve as a dict key: correct, and slow
    (a Python float object and its decimal digits for every feature)."""
    return str(state.tolist())


def key_as_bytes(state: np.ndarray) -> bytes:
    """The same key, as the state's raw bytes: one copy, no formatting."""
    return state.tobytes()


def _check_states(states, targets=None):
    if not isinstance(states, np.ndarray) or states.ndim != 2:
        raise TypeError(f"states must be a 2-D NumPy array (samples, features), got {type(states).__name__}"
                        f"{' of shape ' + str(states.shape) if isinstance(states, np.ndarray) else ''}")
    if targets is not None:
        targets = np.asarray(targets)
        if targets.shape[:1] != states.shape[:1]:
            raise ValueError(f"targets must hold one value per state ({len(states)}), got shape {targets.shape}")
    return states, targets


def lookup_table(states: np.ndarray, targets: np.ndarray, key_of) -> dict:
    """{key_of(state): target} for each row of ``states``."""
    states, targets = _check_states(states, targets)
    if not callable(key_of):
        raise TypeError(f"key_of must be a function of one state, got {type(key_of).__name__}")
    return {key_of(state): float(target) for state, target in zip(states, targets)}


def lookup_batches(states: np.ndarray, table: dict, key_of, batch_size: int = 64):
    """Yield (states, targets) batches, each target looked up in ``table`` by its state's key:
    the shape of a replay-buffer generator that hides its slow step in ``key_of``. A generator:
    its arguments are checked when the first batch is asked for, before any lookup."""
    states, _ = _check_states(states)
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict from lookup_table, got {type(table).__name__}")
    if not callable(key_of):
        raise TypeError(f"key_of must be a function of one state, got {type(key_of).__name__}")
    batch_size = check_int("batch_size", batch_size)
    for start in range(0, len(states), batch_size):
        rows = states[start:start + batch_size]
        targets = np.array([table[key_of(state)] for state in rows], dtype=np.float32)
        yield rows, targets


def profile_call(function, *args, **kwargs):
    """Run ``function(*args, **kwargs)`` under cProfile: (its result, pstats.Stats)."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    profiler = cProfile.Profile()
    result = profiler.runcall(function, *args, **kwargs)
    return result, pstats.Stats(profiler)


def _readable(key) -> str:
    filename, line, name = key
    if filename == "~":  # a built-in: pstats writes its name in braces already
        return name
    return f"{Path(filename).name}:{line}({name})"


def _check_stats(stats) -> pstats.Stats:
    if not isinstance(stats, pstats.Stats):
        raise TypeError(f"stats must be a pstats.Stats, got {type(stats).__name__}")
    return stats


def top_functions(stats: pstats.Stats, n: int = 8) -> list[dict]:
    """The ``n`` functions with the most time of their own: name, calls, own_s, total_s."""
    _check_stats(stats)
    n = check_int("n", n)
    rows = [
        {"function": _readable(key), "name": key[2], "calls": calls, "own_s": own, "total_s": total}
        for key, (_, calls, own, total, _) in stats.stats.items()
    ]
    rows.sort(key=lambda row: row["own_s"], reverse=True)
    return rows[:n]


def function_share(stats: pstats.Stats, name: str) -> float:
    """Fraction of the profiled time spent inside function ``name`` and what it calls."""
    _check_stats(stats)
    if not isinstance(name, str):
        raise TypeError(f"name must be a function's name (str), got {type(name).__name__}")
    matches = [total for key, (_, _, _, total, _) in stats.stats.items() if key[2] == name]
    if not matches:
        raise ValueError(f"no function named {name!r} in this profile")
    return max(matches) / stats.total_tt if stats.total_tt else 0.0


def format_profile(rows: list[dict]) -> str:
    """``top_functions`` rows as a table."""
    keys = ("own_s", "total_s", "calls", "function")
    check_records("rows", rows, keys, "top_functions")
    columns = (Column("own s", ">", 8, ".3f"), Column("total s", ">", 8, ".3f"), Column("calls", ">", 8), Column("function"))
    return table(columns, [[row[key] for key in keys] for row in rows], sep=(" ", " ", "  "))
