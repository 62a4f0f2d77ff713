"""One call for each part that every ladder notebook (03-09) has, so a notebook keeps only its own cells.

- ``check(step)``: the step at the course's odd sizes against the float64 reference and Keras,
  with the launches counted in that real run set against ``fl.profile``'s dry run of it. The
  printed words do not depend on the device, so nbval compares them; the errors are returned.
- ``launches(step)``: every step so far, recorded without running (``fl.profile``) at the
  article's size: launches per pass and per layer-step, GEMMs and element-wise kernels, a chart.
- ``bounds(step)``: every step so far at the article's size: bytes, the critical path, and the
  lower bound on an M40 and an H100 with a C++ host and with Python, beside the article's M40
  measurement; a chart. Deterministic: data sheets, counts and dependencies, no clock.
- ``measure(step)``: on a GPU, every step so far checked and timed at the article's size, with
  the committed results and the article in one chart; on the simulator nothing is timed (it would
  measure Python threads) and it says so.

Geometry is an M40's unless a notebook says otherwise (``CHIP``): the article's GPU, so that the
recorded launches are the same on every machine.
"""

from __future__ import annotations

import numpy as np

from . import simulator, steps
from .article import ARTICLE_GPU
from .config import LSTMConfig
from .harness import bench_steps, problem
from .launches import count_launches
from .profile import profile
from .reference import RTOL, relative_error

#: The course's odd sizes: no multiple of any tile (4, 8, 16, 32, 64) or block size.
ODD = LSTMConfig(batch=3, seq_len=5, input_size=7, hidden=13, layers=2)
#: Whose launch geometry the dry runs record (the persistent grid, the GEMM blocking).
CHIP = ARTICLE_GPU
#: The GPUs and hosts the bounds are shown for: the article's GPU and a current one.
BOUND_GPUS = (ARTICLE_GPU, "H100")
GEMM_KERNELS = ("blocked_gemm", "tiled_gemm")


def steps_so_far(step: str) -> list[str]:
    """The ladder up to and including ``step``."""
    order = steps.names()
    return order[: order.index(steps.get(step).name) + 1]


def check(step: str, cfg: LSTMConfig = ODD, *, seed: int = 0, chip: str = CHIP) -> dict:
    """Run ``step`` once at ``cfg`` (output poisoned with NaN first) and compare it with the float64
    reference and with ``keras.layers.LSTM`` holding the same weights. Prints the verdicts; returns
    {"reference": error, "keras": error, "launches": counted}."""
    from .keras_bridge import keras_forward

    x, params, ref = problem(cfg, seed)
    with count_launches() as counted:
        y = steps.get(step).forward(x, params)
    recorded = profile(step, cfg, chip=chip).kernels()
    errors = {"reference": relative_error(y, ref), "keras": relative_error(y, keras_forward(x, params).astype(np.float64)),
              "launches": sum(counted.values())}
    print(f"output {y.shape} {y.dtype} | any NaN left: {bool(np.isnan(y).any())}")
    print(f"{step} equals the float64 reference within {RTOL:g}: {errors['reference'] <= RTOL}")
    print(f"{step} equals keras.layers.LSTM within {RTOL:g}:    {errors['keras'] <= RTOL}")
    print(f"launches counted in this run: {errors['launches']}; recorded by fl.profile without running: "
          f"{sum(recorded.values())}; the same kernels: {dict(counted) == recorded}")
    return errors


def launch_rows(names, cfg: LSTMConfig | None = None, *, chip: str = CHIP) -> list[dict]:
    """Per step: launches per pass at ``cfg`` (the article's by default), GEMMs and element-wise."""
    cfg = LSTMConfig.article() if cfg is None else cfg
    rows = []
    for name in names:
        kernels = profile(name, cfg, chip=chip).kernels()
        gemms = sum(n for kernel, n in kernels.items() if kernel in GEMM_KERNELS)
        total = sum(kernels.values())
        rows.append({"step": name, "launches": total, "gemm": gemms, "other": total - gemms, "kernels": kernels,
                     "per_layer_step": total / (cfg.layers * cfg.seq_len)})
    return rows


def launches(step: str, cfg: LSTMConfig | None = None, *, chip: str = CHIP, chart: bool = True) -> list[dict]:
    """Every step so far, recorded at the article's size: a table and a chart of launches."""
    cfg = LSTMConfig.article() if cfg is None else cfg
    rows = launch_rows(steps_so_far(step), cfg, chip=chip)
    print(f"launches per forward pass at {cfg.as_dict()} (recorded by fl.profile, nothing run):")
    print(f"{'step':<18}{'launches':>9}{'GEMMs':>8}{'element-wise':>14}{'per layer-step':>16}")
    for row in rows:
        print(f"{row['step']:<18}{row['launches']:>9}{row['gemm']:>8}{row['other']:>14}{row['per_layer_step']:>16.2f}")
    if chart:
        import matplotlib.pyplot as plt

        from .plots import launch_chart

        launch_chart({row["step"]: row["kernels"] for row in rows}, cfg.layers * cfg.seq_len)
        plt.show()
    return rows


def bounds(step: str, *, gpus=BOUND_GPUS, chart: bool = True) -> list[dict]:
    """Every step so far at the article's size: traffic, critical path and lower bounds per GPU and
    host, beside the article's measurement. Returns the ``profile.ladder.ladder_bounds`` rows."""
    from .profile.ladder import ladder_bounds, table_text

    rows = ladder_bounds(gpus=gpus, steps=steps_so_far(step), chip=CHIP)
    print("MB loaded and stored: every global load and store the kernels issue (re-reads included, most "
          "served by caches, not DRAM); critical path: launches on the longest chain of dependent launches.")
    print(f"{'step':<18}{'MB loaded':>10}{'MB stored':>11}{'critical path':>15}")
    for row in rows:
        print(f"{row['step']:<18}{row['bytes_read'] / 1e6:>10.0f}{row['bytes_written'] / 1e6:>11.0f}"
              f"{row['critical_launches']:>9} launches")
    print()
    print(table_text(rows, gpus=gpus))
    if chart:
        import matplotlib.pyplot as plt

        from .profile.charts import ladder_bounds_chart

        ladder_bounds_chart(rows, gpus=gpus, title=f"Up to {step}: lower bounds beside the article (ms per pass)")
        plt.show()
    return rows


def measure(step: str, *, chart: bool = True) -> list[dict]:
    """On a GPU: every step so far, checked and timed at the article's size (``fl.bench``), with
    the committed results and the article's numbers in one chart. On the simulator: nothing."""
    if simulator.SIMULATOR:
        print("The CUDA simulator runs kernels as Python threads: a time taken here would say nothing "
              "about a GPU, so nothing is timed. The counts and bounds above stand in for a measurement: they "
              "are computed from what the steps launch and from data sheets. On a GPU this cell times every "
              "step so far at the article's size.")
        return []
    from .results import committed_results, format_table

    article = LSTMConfig.article()
    so_far = steps_so_far(step)
    results = bench_steps(so_far, article)
    print(format_table(results))
    if chart:
        import matplotlib.pyplot as plt

        from .plots import ladder_chart

        committed = [r for r in committed_results() if r["config"] == article.as_dict() and r["step"] in so_far]
        ladder_chart(committed + results, published=so_far,
                     title=f"Up to {step}: GFLOP/s at the article's size (higher is faster)")
        plt.show()
    return results
