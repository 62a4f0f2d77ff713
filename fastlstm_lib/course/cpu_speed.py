"""Three of the ladder's ideas timed on the learner's own CPU (notebooks 03, 05, 07, 13): each
experiment checks its variants against float64 NumPy before and after timing, with every thread
pool held at ``threads``, and returns a JSON-able dict for ``summary`` and ``chart``.
"""

from __future__ import annotations

import os
import platform
import time

import numba
import numpy as np

from ..checks import check_bool, check_dict, check_int, check_seconds, check_str
from ..config import LSTMConfig
from .cpu_cells import fused_cell_libm, fused_cell_rational, numpy_cell
from ..harness import WrongResultError
from .plots import figure_axes
from ..progress import progress_bar
from ..runtime.keras_backend import cpu_name
from ..numerics import RTOL, relative_error, sigmoid64
from ..tables import Column, table
from ..timing import IDLE_ENOUGH, cpu_busy_elsewhere, cpu_snapshot, summarize, wall_times

_ARTICLE = LSTMConfig.article()
_F32 = np.float32


def _rng_array(rng, shape, scale=1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def machine() -> dict:
    """What the times were taken on: the CPU, its logical CPUs, NumPy and its BLAS, Numba."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # an older or unusual NumPy build: the BLAS is then simply not named
        blas = "unknown"
    return {"cpu": cpu_name(), "machine": platform.machine(), "logical_cpus": os.cpu_count(), "numpy": np.__version__,
            "blas": blas, "numba": numba.__version__, "python": platform.python_version()}


def _check(experiment: str, checks: dict, when: str) -> dict:
    """{variant: relative error}: each check runs its variant on poisoned outputs against float64."""
    errors = {}
    for label, check in checks.items():
        errors[label] = error = max(relative_error(got, want) for got, want in check())
        if not error <= RTOL:
            raise WrongResultError(f"{experiment}: {label!r} differs from float64 NumPy {when} timing: relative "
                                   f"error {error:.2e} > {RTOL:g}; its time is not reported")
    return errors


def _run(experiment, sizes, unit, per, variants, checks, *, repeats, max_seconds, progress, started, threads,
         flop=None) -> dict:
    """Check, warm up, time rounds of every variant (alternating order), check again, thread pools held
    at ``threads``. ``flop``: FLOPs of one unit, or None."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=threads):
        errors = _check(experiment, checks, "before")  # the first calls: a njit loop compiles here
        labels = list(variants)
        snapshot = cpu_snapshot()
        for label in labels:  # one warm-up round
            variants[label]()
        times, timing_started = {label: [] for label in labels}, time.perf_counter()
        for number in progress_bar(range(repeats), experiment, "round", enabled=progress):
            if number >= 3 and time.perf_counter() - timing_started > max_seconds:
                continue  # out of time: the rounds left are skipped (not broken off: the bar would turn red)
            for label in labels if number % 2 == 0 else labels[::-1]:
                times[label] += [t / per for t in wall_times(variants[label], warmup=0, repeats=1)]
        busy = cpu_busy_elsewhere(since=snapshot) if snapshot else None
        errors_after = _check(experiment, checks, "after")
    rows = [{"name": label, **summarize(times[label]), "times_ms": times[label],
             "relative_error": max(errors[label], errors_after[label])} for label in labels]
    return {"experiment": experiment, "unit": unit, "sizes": sizes, "flop": flop, "variants": rows,
            "ratio": rows[0]["median"] / rows[-1]["median"], "rounds": len(times[labels[0]]), "repeats": repeats,
            "seconds": time.perf_counter() - started, "busy_elsewhere": busy, "machine": machine(),
            "hardware_dependent": True, "threads": threads,
            "thread_pools": sorted({f"{pool['internal_api']}" for pool in threadpool_info()})}


def _validate(sizes: dict, repeats, max_seconds, seed, progress, threads) -> tuple:
    for name, value in sizes.items():
        check_int(name, value)
    return (check_int("repeats", repeats), check_seconds("max_seconds", max_seconds),
            np.random.default_rng(check_int("seed", seed, minimum=0)), check_bool("progress", progress),
            check_int("threads", threads))


def stacked_gemms(batch: int = _ARTICLE.batch, input_size: int = _ARTICLE.input_size,
                  hidden: int = _ARTICLE.hidden, *, steps: int = 10, repeats: int = 15,
                  max_seconds: float = 2.0, seed: int = 0, progress: bool = True, threads: int = 1) -> dict:
    """Notebook 03 on the CPU: a layer-step's 8 per-gate products against the 2 stacked ones; ms per
    layer-step, each sample ``steps`` of them."""
    sizes = {"batch": batch, "input_size": input_size, "hidden": hidden, "steps": steps}
    repeats, max_seconds, rng, progress, threads = _validate(sizes, repeats, max_seconds, seed, progress, threads)
    started = time.perf_counter()
    H = hidden
    x, h = _rng_array(rng, (batch, input_size)), _rng_array(rng, (batch, H))
    W, U = _rng_array(rng, (input_size, 4 * H), input_size ** -0.5), _rng_array(rng, (H, 4 * H), H ** -0.5)
    W_g = [np.ascontiguousarray(W[:, g * H:(g + 1) * H]) for g in range(4)]  # one matrix per gate, as stored
    U_g = [np.ascontiguousarray(U[:, g * H:(g + 1) * H]) for g in range(4)]
    per_gate, stacked = np.empty((8, batch, H), _F32), np.empty((2, batch, 4 * H), _F32)
    want = (x.astype(np.float64) @ W, h.astype(np.float64) @ U)

    def eight():
        for _ in range(steps):
            for g in range(4):
                np.matmul(x, W_g[g], out=per_gate[g])
                np.matmul(h, U_g[g], out=per_gate[4 + g])

    def two():
        for _ in range(steps):
            np.matmul(x, W, out=stacked[0])
            np.matmul(h, U, out=stacked[1])

    def check_eight():
        per_gate.fill(np.nan)
        eight()
        return [(np.concatenate(list(per_gate[4 * k:4 * k + 4]), axis=1), want[k]) for k in (0, 1)]

    def check_two():
        stacked.fill(np.nan)
        two()
        return list(zip(stacked, want))

    labels = ("8 products, one per gate", "2 products, gates stacked")
    return _run("stacked_gemms", sizes, "ms per layer-step", steps, dict(zip(labels, (eight, two))),
                dict(zip(labels, (check_eight, check_two))), repeats=repeats, max_seconds=max_seconds,
                progress=progress, started=started, threads=threads, flop=2 * batch * (input_size + H) * 4 * H)


def fused_pointwise(batch: int = _ARTICLE.batch, hidden: int = _ARTICLE.hidden, *, steps: int = 20,
                    repeats: int = 15, max_seconds: float = 2.0, seed: int = 0, progress: bool = True,
                    threads: int = 1) -> dict:
    """Notebook 05 on the CPU: one layer-step's element-wise work, ``numpy_cell`` against the two
    fused loops (``cpu_cells``); ms per layer-step."""
    sizes = {"batch": batch, "hidden": hidden, "steps": steps}
    repeats, max_seconds, rng, progress, threads = _validate(sizes, repeats, max_seconds, seed, progress, threads)
    started = time.perf_counter()
    x_gates, h_gates = _rng_array(rng, (batch, 4 * hidden), 2.0), _rng_array(rng, (batch, 4 * hidden), 2.0)
    bias, c0 = _rng_array(rng, 4 * hidden), _rng_array(rng, (batch, hidden))
    z = x_gates.astype(np.float64) + h_gates + bias
    i, f, g, o = (sigmoid64(part) if k != 2 else np.tanh(part) for k, part in enumerate(np.split(z, 4, axis=1)))
    c_want = f * c0 + i * g
    want = (o * np.tanh(c_want), c_want)
    cells = {"NumPy: 26 passes": numpy_cell, "one njit loop, C library's tanh and exp": fused_cell_libm,
             "one njit loop, rational tanh (vectorized)": fused_cell_rational}
    c, h = c0.copy(), np.empty_like(c0)

    def timed(cell):
        def run():
            for _ in range(steps):
                cell(x_gates, h_gates, bias, c, h)
        return run

    def checked(cell):
        def run():
            c_out, h_out = c0.copy(), np.full_like(c0, np.nan)
            cell(x_gates, h_gates, bias, c_out, h_out)
            return [(h_out, want[0]), (c_out, want[1])]
        return run

    return _run("fused_pointwise", sizes, "ms per layer-step", steps,
                {label: timed(cell) for label, cell in cells.items()},
                {label: checked(cell) for label, cell in cells.items()},
                repeats=repeats, max_seconds=max_seconds, progress=progress, started=started, threads=threads)


def combined_inputs(batch: int = _ARTICLE.batch, seq_len: int = _ARTICLE.seq_len,
                    input_size: int = _ARTICLE.input_size, hidden: int = _ARTICLE.hidden, *, repeats: int = 10,
                    max_seconds: float = 2.0, seed: int = 0, progress: bool = True, threads: int = 1) -> dict:
    """Notebook 07 on the CPU: ``seq_len`` input products of a layer against one tall one; ms per layer."""
    sizes = {"batch": batch, "seq_len": seq_len, "input_size": input_size, "hidden": hidden}
    repeats, max_seconds, rng, progress, threads = _validate(sizes, repeats, max_seconds, seed, progress, threads)
    started = time.perf_counter()
    x, W = _rng_array(rng, (seq_len, batch, input_size)), _rng_array(rng, (input_size, 4 * hidden), input_size ** -0.5)
    out = np.empty((seq_len, batch, 4 * hidden), _F32)
    want = x.astype(np.float64) @ W

    def per_step():
        for t in range(seq_len):
            np.matmul(x[t], W, out=out[t])

    def tall():
        np.matmul(x.reshape(seq_len * batch, input_size), W, out=out.reshape(seq_len * batch, 4 * hidden))

    def checked(run):
        def check():
            out.fill(np.nan)
            run()
            return [(out, want)]
        return check

    labels = (f"{seq_len} products, one per step", "1 tall product for all steps")
    return _run("combined_inputs", sizes, "ms per layer", 1, dict(zip(labels, (per_step, tall))),
                {label: checked(run) for label, run in zip(labels, (per_step, tall))}, repeats=repeats,
                max_seconds=max_seconds, progress=progress, started=started, threads=threads,
                flop=2 * seq_len * batch * input_size * 4 * hidden)


_RESULT_KEYS = ("experiment", "unit", "sizes", "variants", "rounds", "seconds", "busy_elsewhere", "machine", "threads",
               "thread_pools")


def _check_result(result) -> dict:
    """A dict one of this module's experiments returned: TypeError / ValueError naming ``result``."""
    check_dict("result", result, _RESULT_KEYS, "a cpu_speed experiment")
    if not result["variants"]:
        raise ValueError("result must hold at least one variant (a dict from a cpu_speed experiment)")
    return result


def _speed_words(ratio: float) -> str:
    """``ratio``: the first variant's time / this one's."""
    if ratio >= 1.05:
        return f"{ratio:.1f}x as fast as"
    if ratio <= 1 / 1.05:
        return f"{1 / ratio:.1f}x slower than"
    return "about as fast (within 5%) as"


def summary(result: dict) -> str:
    """A result in words: each variant's median and spread, each against the first variant (here,
    on this machine), the machine, and whether other processes disturbed the times."""
    result = _check_result(result)
    first = result["variants"][0]
    sizes = ", ".join(f"{name} {value}" for name, value in result["sizes"].items())
    lines = [f"{result['experiment']} ({sizes}; {result['rounds']} rounds, {result['seconds']:.1f} s in all):"]
    rows = []
    for row in result["variants"]:
        rate = f", {result['flop'] / row['median'] / 1e6:.1f} GFLOP/s" if result.get("flop") else ""
        rows.append([row["name"], row["median"], f"{result['unit']} (min {row['min']:.3f}, max {row['max']:.3f}{rate})"])
    lines.append(table((Column("variant", "<", 44), Column("median", ">", 9, ".3f"), Column("spread")), rows,
                       sep=("", " "), indent="  ", header=False))
    for row in result["variants"][1:]:
        lines.append(f"here: {row['name']} is {_speed_words(first['median'] / row['median'])} {first['name']} "
                     f"({first['median'] / row['median']:.2f}x, medians)")
    m = result["machine"]
    lines.append(f"machine: {m['cpu']}, {m['logical_cpus']} logical CPUs, NumPy {m['numpy']} ({m['blas']}), "
                  f"Numba {m['numba']}")
    lines.append(f"thread pools ({', '.join(result['thread_pools']) or 'none found'}) held at {result['threads']} "
                 f"thread{'s' if result['threads'] > 1 else ''} each (threadpoolctl)")
    busy = result["busy_elsewhere"]
    if busy is None:
        lines.append("how busy other processes kept the CPUs cannot be read here (no /proc): let nothing else run")
    else:
        lines.append(f"other processes used {busy:.0%} of the CPUs meanwhile: " + (
            "the times are this run's own" if busy < IDLE_ENOUGH else
            "the times are disturbed; run again with nothing else running"))
    return "\n".join(lines)


def chart(result: dict, *, ax=None, title: str | None = None):
    """Horizontal bars: each variant's median, a line from its min to its max. Returns the figure."""
    result = _check_result(result)
    if title is not None:
        check_str("title", title)
    rows = result["variants"][::-1]  # the first variant on top
    fig, ax = figure_axes(ax, (8, 0.6 + 0.5 * len(rows)))
    medians = [row["median"] for row in rows]
    spread = [[row["median"] - row["min"] for row in rows], [row["max"] - row["median"] for row in rows]]
    ax.barh([row["name"] for row in rows], medians, xerr=spread, capsize=3,
            color=["tab:green"] + ["tab:gray"] * (len(rows) - 1))
    for y, value in enumerate(medians):
        ax.text(value, y, f" {value:.3g}", va="bottom", fontsize="small")
    ax.set_xlabel(f"{result['unit']} (median; the line: min to max), on this CPU")
    ax.set_title(title or f"{result['experiment']}, {result['machine']['cpu']}", fontsize="medium")
    ax.set_xlim(0, max(row["max"] for row in rows) * 1.2)
    return fig
