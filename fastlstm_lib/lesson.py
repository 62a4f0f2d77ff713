"""One call for each part that every ladder notebook (03-09) has, so a notebook keeps only its own cells.

- ``check(step)``: the step at the course's odd sizes against the float64 reference and Keras,
  with the launches counted in that real run set against ``fl.profile``'s dry run of it. The
  printed words do not depend on the device, so nbval compares them; the errors are returned.
- ``launches(step)``: every step so far, recorded without running (``fl.profile``) at the
  article's size: launches per pass and per layer-step, GEMMs and element-wise kernels, a chart.
- ``bounds(step)``: every step so far at the article's size: bytes, the critical path, and the
  lower bound on an M40 and an H100 with a C++ host and with Python, beside the article's M40
  measurement; a chart. Deterministic: data sheets, counts and dependencies, no clock.
- ``standing(step)``: the three above in one cell, as the ladder notebooks show them: the check's
  verdicts, this step beside the one before (launches, critical path, bytes, bounds: a few lines),
  and one chart of the ladder so far, which grows by one step per notebook.
- ``nsight(step)``: how to see the step's effect on a GPU with Nsight Systems (each pass an NVTX
  range, ``nvtx.py``), or Nsight Compute where a kernel's memory access is the point: the commands,
  and what to look for. Printed the same on every machine; nothing is run.
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
from .nvtx import DOMAIN as DOMAIN_NAME
from .profile.record import shared_profile as profile  # read-only here: no copy needed
from .reference import RTOL, relative_error
from .tables import Column, table

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


LAUNCH_COLUMNS = (Column("step", "<", 18), Column("launches", ">", 9), Column("GEMMs", ">", 8),
                  Column("element-wise", ">", 14), Column("per layer-step", ">", 16, ".2f"))
TRAFFIC_COLUMNS = (Column("step", "<", 18), Column("MB loaded", ">", 10, ".0f"), Column("MB stored", ">", 11, ".0f"),
                   Column("critical path", ">", 15))


def launches(step: str, cfg: LSTMConfig | None = None, *, chip: str = CHIP, chart: bool = True) -> list[dict]:
    """Every step so far, recorded at the article's size: a table and a chart of launches."""
    cfg = LSTMConfig.article() if cfg is None else cfg
    rows = launch_rows(steps_so_far(step), cfg, chip=chip)
    print(f"launches per forward pass at {cfg.as_dict()} (recorded by fl.profile, nothing run):")
    print(table(LAUNCH_COLUMNS, [[row[key] for key in ("step", "launches", "gemm", "other", "per_layer_step")]
                                 for row in rows], sep=""))
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
    print(table(TRAFFIC_COLUMNS, [[row["step"], row["bytes_read"] / 1e6, row["bytes_written"] / 1e6,
                                   f"{row['critical_launches']:>9} launches"] for row in rows], sep=""))
    print()
    print(table_text(rows, gpus=gpus))
    if chart:
        import matplotlib.pyplot as plt

        from .profile.charts import ladder_bounds_chart

        ladder_bounds_chart(rows, gpus=gpus, title=f"Up to {step}: lower bounds beside the article (ms per pass)")
        plt.show()
    return rows


ARTICLE_LABEL = "the article's M40"


def _change(before, now, fmt: str = "{:,}") -> str:
    """ "old -> new", or "new" where there is no step before."""
    return fmt.format(now) if before is None else f"{fmt.format(before)} -> {fmt.format(now)}"


def _bound(row: dict, gpu: str, host: str) -> str:
    ms = row.get(f"{gpu} {host} ms")
    return "does not fit" if ms is None else f"{ms:.2f} ms ({row[f'{gpu} {host} binding']})"


def standing(step: str, cfg: LSTMConfig = ODD, *, chip: str = CHIP, gpus=BOUND_GPUS, chart: bool = True) -> dict:
    """Where ``step`` stands, in one call: ``check`` at ``cfg`` (the verdicts printed), then, at the
    article's size and recorded without running, its launches, critical path, bytes and lower
    bounds beside the step before (the change in a few lines), and one chart of every step so far
    that grows by one step per notebook. ``chip``: the launch geometry of the check's recording and
    of the launch counts (the bounds always use ``CHIP``'s, planning the persistent step per GPU). Deterministic: nbval compares all of it. Returns
    {"errors": ``check``'s dict, "launches": ``launch_rows``, "bounds": ``ladder_bounds`` rows},
    every step so far in both."""
    from .profile.ladder import HOSTS, ladder_bounds

    errors = check(step, cfg, chip=chip)
    names = steps_so_far(step)
    counted = launch_rows(names, chip=chip)
    rows = ladder_bounds(gpus=gpus, steps=names, chip=CHIP)  # the persistent step is planned per GPU there
    now, was = rows[-1], (rows[-2] if len(rows) > 1 else None)
    old = (lambda key: None) if was is None else (lambda key: was[key])
    print(f"\nAt the article's size, recorded by fl.profile without running"
          + (f" ({was['step']} -> {step}):" if was else f" ({step}):"))
    changes = [["launches per pass", _change(old("launches"), now["launches"])
                + f"  ({counted[-1]['gemm']:,} GEMMs, {counted[-1]['other']:,} element-wise)"],
               ["critical path", f"{_change(old('critical_launches'), now['critical_launches'])} launches"]]
    megabytes = old("bytes_read") and old("bytes_read") / 1e6
    changes.append(["MB loaded", _change(megabytes, now["bytes_read"] / 1e6, "{:,.0f}")])
    for gpu in gpus:
        for host in HOSTS:
            label = f"bound, {gpu}, {'C++' if host == 'cpp' else 'Python'} host"
            changes.append([label, _bound(now, gpu, host) if was is None else
                            f"{_bound(was, gpu, host)} -> {_bound(now, gpu, host)}"])
    if "article_ms" in now:
        article = _change(was.get("article_ms") if was else None, now["article_ms"], "{:.1f}")
        changes.append([ARTICLE_LABEL, f"{article} ms (measured)"])
    print(table((Column("", "<", 25), Column()), changes, sep="", indent="  ", header=False))
    print("  binding: host = issuing launches, flop = all FLOPs at peak, chain = dependent launches, bytes = DRAM; "
          "hosts: data/host_launch_costs.csv")
    if chart:
        import matplotlib.pyplot as plt

        from .plots import launch_chart
        from .profile.charts import ladder_bounds_chart

        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 1.8 + 0.55 * len(rows)), gridspec_kw={"width_ratios": [2, 3]})
        launch_chart({row["step"]: row["kernels"] for row in counted}, LSTMConfig.article().layers * LSTMConfig.article().seq_len,
                     ax=left)
        ladder_bounds_chart(rows, gpus=gpus, ax=right, title="lower bounds, and the article's M40 measured")
        left.set_xlabel("kernel launches per layer-step")
        left.legend(loc="lower right", fontsize="small")
        right.set_xlabel("milliseconds per forward pass at the article's size (log scale)")
        right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / len(rows)), ncol=3, fontsize="small")
        fig.suptitle(f"The ladder so far, up to {step}")
        fig.tight_layout()
        plt.show()
    return {"errors": errors, "launches": counted, "bounds": rows}


#: Per ladder step: what its change looks like in Nsight Systems' timeline (or Nsight Compute's counters).
LOOK_FOR = {
    "baseline": "per layer-step, 8 small GEMM kernels and 17 element-wise ones, one after another on one stream, "
                "with a gap before each: the launch latency, and on the host row the time Python takes to issue it",
    "combined_gemms": "2 GEMM kernels per layer-step instead of 8 (stacked: 4x the columns each), and a shorter "
                      "'combined_gemms pass' range than the 'baseline pass' one",
    "streams": "a second stream: each input GEMM on it, overlapping the recurrent GEMM and the element-wise kernels "
               "of the main stream; where the host issues launches more slowly than the GPU runs them, no overlap",
    "fused_pointwise": "1 element-wise kernel (_lstm_cell) per layer-step instead of 17: the row of small kernels "
                       "and their gaps is gone",
    "pretransposed": "the same kernels, the same times: in Nsight Compute, the GEMM's global loads take 4 sectors "
                     "per request (32-byte sectors per warp-wide load; notebook 06's count) in both layouts",
    "combined_inputs": "one tall input GEMM at the start of each layer on the side stream, then only the recurrence "
                       "(one GEMM and one cell per step) on the main one",
    "wavefront": "one stream per layer: their kernels overlapping along diagonals, a layer starting its chunk as "
                 "soon as the layer below has finished it",
    "persistent": "one long persistent_layer kernel per layer after its input GEMM: 8 kernels in the whole pass; "
                  "its length against the wavefront's pass is the barriers' and loads' real cost",
}
#: Nsight Compute's counters for sectors per warp-wide load (a request) of global loads.
SECTOR_METRICS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"


def nsight(step: str) -> None:
    """Print how to record ``step`` and the step before it with Nsight Systems (and Nsight Compute
    for the pre-transposed weights), and what to look for. Nothing is run: the same on every machine."""
    name = steps.get(step).name
    if name not in LOOK_FOR:
        raise ValueError(f"step must be one of the ladder's ({', '.join(LOOK_FOR)}), got {step!r}")
    before = steps.previous(name)
    pair = f"{before.name} {name}" if before is not None else name
    print("On a machine with an NVIDIA GPU and Nsight Systems (nsys), in a terminal, nothing else running:")
    print(f"  nsys profile -t cuda,nvtx -o {name} --force-overwrite true \\\n"
          f"      python -m fastlstm_lib bench --steps {pair} --config article --warmup 1 --repeats 3")
    print(f"  nsys stats --report nvtx_sum,cuda_gpu_kern_sum {name}.nsys-rep   # or open {name}.nsys-rep in the GUI")
    print(f"Each pass is an NVTX range \"<step> pass\" (domain {DOMAIN_NAME}). Look for: {LOOK_FOR[name]}.")
    if name == "pretransposed":
        print("Nsight Compute (ncu), sectors per warp-wide load of the GEMM's global loads, measured:")
        print(f"  ncu --kernel-name regex:blocked_gemm --launch-count 4 --metrics {SECTOR_METRICS} \\\n"
              f"      python -m fastlstm_lib bench --steps {name} --config article --warmup 0 --repeats 1")
        print("  sectors / requests = sectors per warp-wide load: 4 when a warp's 32 floats are 128 contiguous bytes")


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
