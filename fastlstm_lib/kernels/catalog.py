"""Every kernel version, each runnable on its own against float64 NumPy: the one validate-then-time
runner (``python -m fastlstm_lib.kernels``, llm.c-style), which validates everywhere and times on a GPU.

One ``Version`` per kernel version: its spec (``spec.py``: its family, its number, the kernel's
name, one line on what it adds) and ``case(size, rng)``: fresh inputs at ``size`` ("odd": no
dimension a multiple of any tile or block, except the exact-tile GEMMs, which run only where their
tile divides the shape; "article": the article's shapes, for a GPU), its outputs poisoned with
NaN, and ``Case`` s (``case.py``) that launch it and know the float64 answer, the work done and
the tolerance (``reference.TOLERANCES``). The GEMM family's version files hold their own cases
(``gemm/v<N>_*.py``; version 0 is cuBLAS, the yardstick every GEMM version is set beside in
``gemm_table``; ``gemm/launch.py``'s are ``gemm()`` as the backward pass calls it); the one-file
families' cases are here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
from numba import cuda

from ..runtime.device import DEVICE
from ..reference import TOLERANCES, sigmoid64
from ..tables import Column, table
from ..timing import summarize, time_launches
from . import gemm, persistent, persistent_plan, pointwise as pw, pointwise_backward as pwb, reduce, vector
from .case import Case, Unavailable, f32, poisoned  # noqa: F401  (Unavailable: the runner's skip)
from .spec import Spec
from .versions import every

SIZES = ("odd", "article")
#: Launches per timed repeat, warm-up repeats, timed repeats.
INNER, WARMUP, REPEATS = 20, 3, 30


@dataclasses.dataclass(frozen=True)
class Version:
    """A kernel version's spec (its family file's ``SPECS``) and its ``case``."""

    spec: Spec
    case: Callable[[str, np.random.Generator], Case]

    family = property(lambda self: self.spec.family)
    number = property(lambda self: self.spec.number)
    what = property(lambda self: self.spec.what)
    kernel = property(lambda self: self.spec.label)

    @property
    def label(self) -> str:
        return f"{self.family} {self.number}: {self.kernel}" if self.number is not None else f"{self.family}: {self.kernel}()"


# ---- pointwise.py, pointwise_backward.py --------------------------------------------------------
#: (rows, hidden units): the element-wise kernels run on (rows, 4 x units) or (rows, units).
CELL_SHAPES = {"odd": (3, 7), "article": (64, 512)}


def _elementwise_case(name: str):
    def case(size, rng):
        rows, units = CELL_SHAPES[size]
        cols = 4 * units
        a, b, bias = f32(rng, rows, cols), f32(rng, rows, cols), f32(rng, cols)
        a_d, b_d, bias_d, out = cuda.to_device(a), cuda.to_device(b), cuda.to_device(bias), poisoned(rows, cols)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        runs = {
            "fill": (lambda: pw.fill(out, 0.5), np.full((rows, cols), 0.5), 1),
            "add": (lambda: pw.add(a_d, b_d, out), a64 + b64, 3),
            "add_bias": (lambda: pw.add_bias(a_d, bias_d, out), a64 + bias, 3),
            "mul": (lambda: pw.mul(a_d, b_d, out), a64 * b64, 3),
            "sigmoid": (lambda: pw.sigmoid(a_d, out), sigmoid64(a64), 2),
            "tanh": (lambda: pw.tanh(a_d, out), np.tanh(a64), 2),
            "sigmoid_backward": (lambda: pwb.sigmoid_backward(a_d, b_d, out), a64 * b64 * (1 - b64), 3),
            "tanh_backward": (lambda: pwb.tanh_backward(a_d, b_d, out), a64 * (1 - b64 * b64), 3),
        }
        launch, want, arrays = runs[name]
        return [Case(f"{rows} x {cols}", launch, {"out": out}, {"out": want}, rows * cols, 4.0 * arrays * rows * cols)]
    return case


def _cell64(x_gates, h_gates, bias, c):
    z = x_gates.astype(np.float64) + h_gates + bias
    units = c.shape[1]
    i, f, gg, o = (z[:, q * units:(q + 1) * units] for q in range(4))
    i, f, gg, o = sigmoid64(i), sigmoid64(f), np.tanh(gg), sigmoid64(o)
    c_new = f * c + i * gg
    return c_new, o * np.tanh(c_new), np.concatenate([i, f, gg, o], axis=1)


def _cell_case(train: bool):
    def case(size, rng):
        rows, units = CELL_SHAPES[size]
        x_gates, h_gates = f32(rng, rows, 4 * units, scale=0.5), f32(rng, rows, 4 * units, scale=0.5)
        bias, c0 = f32(rng, 4 * units, scale=0.1), f32(rng, rows, units, scale=0.5)
        c_new, h_new, gates = _cell64(x_gates, h_gates, bias, c0.astype(np.float64))
        xg, hg, b_d, c_d, h_d = (cuda.to_device(x_gates), cuda.to_device(h_gates), cuda.to_device(bias),
                                 cuda.to_device(c0), poisoned(rows, units))
        outputs, expected = {"c": c_d, "h": h_d}, {"c": c_new, "h": h_new}
        if train:
            gates_d, saved_d = poisoned(rows, 4 * units), poisoned(rows, units)
            outputs.update(gates=gates_d, c_saved=saved_d)
            expected.update(gates=gates, c_saved=c_new)

            def launch():
                pwb.lstm_cell_train(xg, hg, b_d, c_d, h_d, gates_d, saved_d)
        else:
            def launch():
                pw.lstm_cell(xg, hg, b_d, c_d, h_d)
        words = 9 * units + 5 * units * train  # per row: 2 x 4H in, c in and out, h out (+ gates, c saved)
        return [Case(f"{rows} x {units} units", launch, outputs, expected, 40.0 * rows * units,
                     4.0 * rows * words + 16.0 * units, reset=lambda: c_d.copy_to_device(c0))]
    return case


def _split_cell_case(size, rng):
    """Version 3 of the fused cell: the recurrent product in 4 parts, as gemm_split leaves it."""
    rows, units = CELL_SHAPES[size]
    x_gates, h_parts = f32(rng, rows, 4 * units, scale=0.5), f32(rng, 4, rows, 4 * units, scale=0.25)
    bias, c0 = f32(rng, 4 * units, scale=0.1), f32(rng, rows, units, scale=0.5)
    c_new, h_new, _ = _cell64(x_gates, h_parts.astype(np.float64).sum(axis=0), bias, c0.astype(np.float64))
    xg, hp, b_d, c_d, h_d = (cuda.to_device(x_gates), cuda.to_device(h_parts), cuda.to_device(bias),
                             cuda.to_device(c0), poisoned(rows, units))

    def launch():
        pw.lstm_cell_split(xg, hp, b_d, c_d, h_d)

    words = 4 * units + 16 * units + 3 * units  # per row: x_gates, 4 parts of 4H, c in and out, h out
    return [Case(f"{rows} x {units} units, 4 parts", launch, {"c": c_d, "h": h_d}, {"c": c_new, "h": h_new},
                 (40.0 + 12.0) * rows * units, 4.0 * rows * words + 16.0 * units, reset=lambda: c_d.copy_to_device(c0))]


def _cell_backward_case(size, rng):
    rows, units = CELL_SHAPES[size]
    dh_out, dh_rec, c_prev, dc = (f32(rng, rows, units) for _ in range(4))
    gates = np.concatenate([1 / (1 + np.exp(-f32(rng, rows, units))), 1 / (1 + np.exp(-f32(rng, rows, units))),
                            np.tanh(f32(rng, rows, units)), 1 / (1 + np.exp(-f32(rng, rows, units)))], axis=1).astype(np.float32)
    c = f32(rng, rows, units)
    i, f, gg, o = (gates[:, q * units:(q + 1) * units].astype(np.float64) for q in range(4))
    dh = dh_out.astype(np.float64) + dh_rec
    tanh_c = np.tanh(c.astype(np.float64))
    dc_t = dh * o * (1 - tanh_c ** 2) + dc
    dz = np.concatenate([dc_t * gg * i * (1 - i), dc_t * c_prev * f * (1 - f), dc_t * i * (1 - gg ** 2),
                         dh * tanh_c * o * (1 - o)], axis=1)
    arrays = [cuda.to_device(a) for a in (dh_out, dh_rec, gates, c, c_prev, dc)]
    dz_d = poisoned(rows, 4 * units)

    def launch():
        pwb.lstm_cell_backward(*arrays, dz_d)

    return [Case(f"{rows} x {units} units", launch, {"dc": arrays[5], "dz": dz_d}, {"dc": dc_t * f, "dz": dz},
                 30.0 * rows * units, 4.0 * rows * units * 14, reset=lambda: arrays[5].copy_to_device(dc))]


# ---- reduce.py -----------------------------------------------------------------------------------
REDUCE_SHAPES = {"odd": (13, 37), "article": (6400, 2048)}  # dZ of every step: (T x B, 4H)


def _column_sum_case(size, rng):
    rows, cols = REDUCE_SHAPES[size]
    a = f32(rng, rows, cols)
    a_d, out = cuda.to_device(a), poisoned(cols)
    return [Case(f"{rows} x {cols}", lambda: reduce.column_sum(a_d, out), {"out": out},
                 {"out": a.astype(np.float64).sum(axis=0)}, float(rows * cols), 4.0 * (rows * cols + cols))]


# ---- persistent.py -------------------------------------------------------------------------------
#: (batch, steps, hidden): one layer's whole sequence.
PERSISTENT_SHAPES = {"odd": (3, 5, 7), "article": (64, 100, 512)}


def _persistent_case(size, rng):
    from ..config import LSTMConfig
    from ..params import init_params, random_input
    from ..reference import lstm_layer64

    batch, steps, hidden = PERSISTENT_SHAPES[size]
    cfg = LSTMConfig(batch=batch, seq_len=steps, input_size=hidden, hidden=hidden, layers=1)
    (layer,), x = init_params(cfg, seed=0), random_input(cfg, seed=1)  # unsaturated gates
    kernel, recurrent, bias = layer
    x_gates = np.ascontiguousarray((x @ kernel).transpose(1, 0, 2))  # (T, B, 4H), as step 09's input GEMM leaves it
    want = lstm_layer64(x, layer)[0].transpose(1, 0, 2)  # float64 from x: x_gates' FP32 rounding counts as error
    plan = persistent_plan.plan(hidden, batch)
    arrays = [cuda.to_device(a) for a in (x_gates, recurrent, bias)]
    hs = poisoned(steps, batch, hidden)
    flop = steps * batch * hidden * (8.0 * hidden + 40.0)
    moved = 4.0 * (x_gates.size + recurrent.size + bias.size + hs.size + plan.blocks * (steps - 1) * batch * hidden)
    return [Case(f"batch {batch}, {steps} steps, hidden {hidden}: {plan.blocks} blocks x {plan.threads} threads",
                 lambda: persistent.launch(plan, *arrays, hs), {"hs": hs}, {"hs": want}, flop, moved)]


#: Each version's case, by (family, number, kernel name), where the family is one file (the GEMM's
#: version files hold their own).
CASES = {
    **{("pointwise", 1, "_" + name): _elementwise_case(name) for name in ("fill", "add", "add_bias", "mul", "sigmoid", "tanh")},
    ("pointwise", 2, "_lstm_cell"): _cell_case(False),
    ("pointwise", 3, "_lstm_cell_split"): _split_cell_case,
    ("pointwise_backward", 1, "_lstm_cell_train"): _cell_case(True),
    **{("pointwise_backward", 2, "_" + name): _elementwise_case(name) for name in ("sigmoid_backward", "tanh_backward")},
    ("pointwise_backward", 3, "_lstm_cell_backward"): _cell_backward_case,
    ("reduce", 1, "column_sum"): _column_sum_case,
    ("persistent", 1, "persistent_layer"): _persistent_case,
}
VERSIONS = tuple(Version(module.SPEC, module.case) for module in (*gemm.VERSIONS, gemm.launch)) + tuple(
    Version(spec, CASES[spec.family, spec.number, spec.name]) for spec in every() if spec.family != "gemm")


def select(name: str | None = None, number: int | None = None) -> list[Version]:
    """The versions of family or kernel ``name`` (all when None), of number ``number`` (all when
    None). A name or number that matches nothing raises ValueError naming what exists."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str (a family or a kernel), got {type(name).__name__}")
    if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
        raise TypeError(f"version must be an int, got {type(number).__name__}")
    found = [v for v in VERSIONS if name in (None, v.family, v.kernel, v.spec.name.lstrip("_"))
             and number in (None, v.number)]
    if not found:
        families = sorted({v.family for v in VERSIONS})
        kernels = sorted({v.kernel for v in VERSIONS})
        raise ValueError(f"no kernel version matches name {name!r}, version {number!r}: families {families}, "
                         f"kernels {kernels}")
    return found


# ---- validate, then time ---------------------------------------------------------------------------

def checked(case: Case, when: str = "", check: bool = True) -> float:
    """The case's relative error after a fresh launch; AssertionError beyond its tolerance (NaN
    too). ``check=False`` (a fake GPU, which computes nothing): launched, not compared, NaN returned."""
    case.reset()
    case.launch()
    if not check:
        return float("nan")
    error = case.error()
    if not error <= case.rtol:
        raise AssertionError(f"{case.shape}{', ' + case.variant if case.variant else ''}: relative error {error:.2g} > {case.rtol:g}{' ' + when if when else ''}")
    return error


def timed(launch, counts: tuple = (INNER, WARMUP, REPEATS)) -> dict:
    """``timing.summarize`` of the milliseconds per ``launch()``: CUDA events (``time_launches``)
    around ``inner`` launches back to back, after ``warmup`` repeats, over ``repeats`` (``counts``)."""
    inner, warmup, repeats = counts

    def launches():
        for _ in range(inner):
            launch()

    return summarize(np.asarray(time_launches(launches, warmup=warmup, repeats=repeats)) / inner)


def measure(version: Version, sizes=SIZES, seed: int = 0, check: bool | None = None,
            counts: tuple | None = None) -> list[dict]:
    """One row per case of ``version`` at ``sizes``: checked against float64 (AssertionError if
    wrong); at the article's shapes, where values are computed on a GPU, also timed and checked
    again, with GFLOP/s (GEMMs, persistent) or GB/s (the memory-bound rest) beside the chip's peak
    (data/gpus.csv). ``check`` (default: wherever values are computed) and ``counts`` (launches,
    warm-up, repeats; default ``INNER``, ``WARMUP``, ``REPEATS``, or 2, 0, 2 where nothing is
    computed) make the GPU run's rehearsal on a fake GPU: every launch and event, no value compared,
    few repeats. ``Unavailable`` where the version cannot run here (cuBLAS without torch)."""
    from ..runtime.device import device_info
    from ..gpus import find_gpu

    computed = DEVICE.computes
    check = computed if check is None else check
    counts = ((INNER, WARMUP, REPEATS) if computed else (2, 0, 2)) if counts is None else counts
    chip = find_gpu(device_info()["name"]) if DEVICE.compiled else None
    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        for case in version.case(size, rng):
            row = {"kernel": version.kernel, "family": version.family, "version": version.number, "size": size,
                   "shape": case.shape, "variant": case.variant, "relative_error": checked(case, check=check), "rtol": case.rtol,
                   "flop": case.flop, "bytes": case.bytes}
            if size == "article" and DEVICE.compiled:  # timed on a GPU, rehearsed on the fake one
                row["time_ms"] = timed(case.launch, counts)
                row["relative_error_after"] = checked(case, "after timing", check)
                seconds = row["time_ms"]["median"] * 1e-3
                if version.family in ("gemm", "persistent"):
                    row["gflops"] = case.flop / seconds / 1e9
                    row["peak_gflops"] = chip["fp32_tflops"] * 1e3 if chip else None
                else:
                    row["gb_s"] = case.bytes / seconds / 1e9
                    row["peak_gb_s"] = chip["memory_gb_s"] if chip else None
            rows.append(row)
    return rows


def gemm_table(rows: list[dict]) -> str:
    """The GEMM family's timed rows as SGEMM_CUDA's README tables them: one line per version, its
    GFLOP/s at each of the article's shapes and, where cuBLAS (version 0) ran, its share of
    cuBLAS's; then one line per variant (B's layouts, the weight gradient). Empty where nothing was
    timed."""
    timed_rows = [row for row in rows if row.get("family") == "gemm" and "gflops" in row]
    if not timed_rows:
        return ""
    cublas_at = {row["shape"]: row["gflops"] for row in timed_rows if row["version"] == 0}

    def cell(row) -> str:
        share = f" ({row['gflops'] / cublas_at[row['shape']]:.0%})" if row["version"] and row["shape"] in cublas_at else ""
        return f"{row['gflops']:,.0f}{share}"

    plain = [row for row in timed_rows if not row.get("variant")]
    shapes = list(dict.fromkeys(row["shape"] for row in plain))
    versions = {row["version"]: row["kernel"] for row in plain}
    found = {(row["version"], row["shape"]): cell(row) for row in plain}
    text = table([Column("GEMM version, GFLOP/s (share of cuBLAS)", "<", 40)] + [Column(shape, ">", 20) for shape in shapes],
                 [[f"{number} {versions[number]}"] + [found.get((number, shape), "-") for shape in shapes]
                  for number in sorted(versions)])
    variants = [f"{row['kernel'] + '()' if row['version'] is None else str(row['version']) + ' ' + row['kernel']}, {row['shape']}, {row['variant']}: {cell(row)} GFLOP/s"
                for row in timed_rows if row.get("variant")]
    return "\n".join([text, *variants])
