"""One call for each part that every ladder notebook (03-09) has, so a notebook keeps only its own
cells: ``standing``, ``check``, ``ladder_chart``, ``nsight`` and ``measure``. What they print does
not depend on the device (nbval compares it); launch geometry is the article's M40's (``CHIP``).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..runtime.device import DEVICE
from .. import steps
from .article import ARTICLE_GPU, article_ms, article_numbers
from ..config import LSTMConfig
from ..gpus import find_gpu
from ..harness import bench_steps, problem
from .kept import kept
from ..kernels.versions import every, family_of
from ..launches import count_launches
from ..runtime.nvtx import DOMAIN as DOMAIN_NAME
from .profile.record import shared_profile as profile  # read-only here: no copy needed
from ..numerics import RTOL, relative_error
from .results import check_results, committed_results, format_table

#: The course's odd sizes: no multiple of any tile (4, 8, 16, 32, 64) or block size.
ODD = LSTMConfig(batch=3, seq_len=5, input_size=5, hidden=7, layers=2)
#: Whose launch geometry the dry runs record (the persistent grid, the GEMM blocking).
CHIP = ARTICLE_GPU
#: The GPUs and hosts the bounds are shown for: the article's GPU and a current one.
BOUND_GPUS = (ARTICLE_GPU, "H100")
#: The GEMM family's kernels (kernels/gemm/), as recorded launches name them.
GEMM_KERNELS = tuple(spec.name for spec in every() if spec.family == "gemm")


def steps_so_far(step: str) -> list[str]:
    """The ladder up to and including ``step``."""
    order = steps.names()
    return order[: order.index(steps.get(step).name) + 1]


def check(step: str, cfg: LSTMConfig = ODD, *, seed: int = 0, chip: str = CHIP) -> dict:
    """Run ``step`` once at ``cfg`` and compare it with the float64 reference and Keras; print the
    verdicts, return {"reference": error, "keras": error, "launches": counted}."""
    from ..keras_bridge import keras_forward

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


def launch_rows(names, *, chip: str = CHIP) -> list[dict]:
    """Per step: launches per pass at the article's size, by kind."""
    rows = []
    for name in names:
        kernels = profile(name, LSTMConfig.article(), chip=chip).kernels()
        gemms = sum(n for kernel, n in kernels.items() if family_of(kernel) == "gemm")
        layers = sum(n for kernel, n in kernels.items() if family_of(kernel) == "persistent")
        total = sum(kernels.values())
        rows.append({"step": name, "launches": total, "gemm": gemms, "persistent": layers,
                     "other": total - gemms - layers, "kernels": kernels})
    return rows


#: What ``launch_rows`` counts, as the standing's first line names them.
KINDS = (("gemm", "GEMMs"), ("persistent", "persistent layers"), ("other", "element-wise"))
ARTICLE_LABEL = "the article's M40"
#: The timeline model's estimates a ladder notebook shows (notebook 02 explains the model): the
#: article's GPU issued from C++ (the article's own setting) and an H100 issued from Python (ours).
ESTIMATES = ((ARTICLE_GPU, "cpp"), ("H100", "python"))
HOST_WORDS = {"cpp": "C++", "python": "Python"}


def _change(before, now, fmt: str = "{:,}") -> str:
    """ "old -> new", or "new" where there is no step before."""
    return fmt.format(now) if before is None else f"{fmt.format(before)} -> {fmt.format(now)}"


def estimate_ms(step: str, gpu: str, host: str) -> float | None:
    """The timeline model's ms for one pass of ``step`` at the article's size on ``gpu`` issued by
    ``host``, or None where it cannot run there; kept on disk (``kept.py``)."""
    name = steps.get(step).name
    return kept(("estimate_ms", name, gpu, host, LSTMConfig.article().as_dict()), lambda: _estimate_ms(name, gpu, host),
                (float, type(None)))


def _estimate_ms(name: str, gpu: str, host: str) -> float | None:
    from .timeline.story import estimated_pass

    try:
        return estimated_pass(name, gpu, host, LSTMConfig.article())[1].total_ms
    except ValueError:
        return None


def _recorded(name: str, chip: str) -> dict:
    """What ``step_line`` counts in a pass recorded at the article's size with ``chip``'s geometry."""
    p = profile(name, LSTMConfig.article(), chip=chip)
    totals, gemms = p.totals, [launch for launch in p.launches if family_of(launch.kernel) == "gemm"]
    return {"launches": totals["launches"], "gb": (totals["bytes_read"] + totals["bytes_written"]) / 1e9,
            "streams": len({launch.stream for launch in p.launches}), "critical": p.critical_path()["launches"],
            "transposed": sum(launch.transpose_b for launch in gemms) / len(gemms) if gemms else 0.0}


def _number(name: str) -> str:
    """The notebook that teaches ladder step ``name`` ("04"), from its module's file name."""
    return re.search(r"step(\d\d)_", type(steps.get(name)).__module__).group(1)


def step_line(step: str, *, chip: str = CHIP) -> str:
    """One line for ``step`` beside the step before: what it changes (recorded), the article's M40
    (measured) and the model's M40 from a C++ host (estimated), each labelled."""
    name = steps.get(step).name
    earlier = steps.previous(name)
    was, now = (_recorded(earlier.name, chip) if earlier else None), _recorded(name, chip)

    def change(key, fmt="{:,}"):
        return _change(None if was is None else was[key], now[key], fmt)

    parts = [f"launches {change('launches')}", f"{change('gb', '{:.2f}')} GB loaded and stored"]
    if was is None:
        parts += [f"{now['streams']} stream{'s' * (now['streams'] > 1)}", f"critical path {now['critical']:,} launches"]
    else:
        parts += [text for key, text in (("streams", f"streams {change('streams')}"),
                                         ("critical", f"critical path {change('critical')} launches"),
                                         ("transposed", f"GEMMs reading B with 'T' {change('transposed', '{:.0%}')}"))
                  if was[key] != now[key]]
    published = {row["step"]: row for row in article_numbers()}
    measured = article_ms()
    if name not in measured:
        article = f"{ARTICLE_LABEL}: not measured (the article ends at {list(measured)[-1]})"
    elif earlier is None or earlier.name not in measured:
        article = f"{ARTICLE_LABEL}: {measured[name]:.1f} ms (measured)"
    else:
        before_ms, speedup = measured[earlier.name], published[name]["speedup"]
        article = (f"{ARTICLE_LABEL}: {before_ms:.1f} -> {measured[name]:.1f} ms, {before_ms / measured[name]:.2f}x "
                   f"(measured; {speedup:g}x its baseline)")
    gpu, host = ESTIMATES[0]
    model_before = estimate_ms(earlier.name, gpu, host) if earlier else None
    model_now = estimate_ms(name, gpu, host)
    label = f"the model's {gpu}, {HOST_WORDS[host]} host"
    if model_now is None:
        model = f"{label}: cannot run there, {_why_not(name, gpu)}"
    elif model_before is None:
        model = f"{label}: {model_now:.1f} ms (estimated)"
    else:
        model = f"{label}: {model_before:.1f} -> {model_now:.1f} ms, {model_before / model_now:.2f}x (estimated)"
    geometry = "" if chip == CHIP else f" with the {chip}'s launch geometry"
    return (f"{_number(name)} {name} ({steps.get(name).title}): " + ", ".join(parts) + f" (recorded{geometry}) | "
            + article + " | " + model)


def _why_not(name: str, gpu: str) -> str:
    """Why ``name`` cannot be recorded for ``gpu`` (the persistent kernel's limit, in a few words)."""
    from ..kernels.persistent import PersistentLimitError

    try:
        profile(name, LSTMConfig.article(), chip=gpu)
    except PersistentLimitError as error:
        return error.reason
    return "no estimate"


def standing(step: str, cfg: LSTMConfig = ODD, *, chip: str = CHIP) -> dict:
    """Where ``step`` stands, in one cell: ``step_line``, the launches by kind, an H100 from Python
    (bound and estimate), then ``check`` at ``cfg``. Returns {"errors", "launches", "bounds"}, the
    last two for every step so far."""
    from .profile.ladder import ladder_bounds

    names = steps_so_far(step)
    counted = launch_rows(names, chip=chip)
    rows = ladder_bounds(gpus=BOUND_GPUS, steps=names, chip=CHIP)  # the persistent step is planned per GPU there
    now, was = rows[-1], (rows[-2] if len(rows) > 1 else None)
    old = (lambda key: None) if was is None else (lambda key: was[key])
    gpu, host = ESTIMATES[-1]
    print(step_line(step, chip=chip))
    kinds = ", ".join(f"{counted[-1][kind]:,} {what}" for kind, what in KINDS if counted[-1][kind] or kind == "gemm")
    after, earlier = estimate_ms(names[-1], gpu, host), was and estimate_ms(was["step"], gpu, host)
    estimate = ("cannot run there" if after is None else
                _change(earlier, after, "{:.1f}") + " ms" if earlier is not None or was is None else f"{after:.1f} ms")
    print(f"  launches per pass: {kinds}")
    print(f"  {gpu}, {HOST_WORDS[host]} host: lower bound "
          f"{_change(old(f'{gpu} {host} ms'), now[f'{gpu} {host} ms'], '{:.1f}')} ms, set by "
          f"{now[f'{gpu} {host} binding']}; estimate {estimate} (bound and model: notebook 02)\n")
    errors = check(step, cfg, chip=chip)
    return {"errors": errors, "launches": counted, "bounds": rows}


def ladder_times(step: str, measured=()) -> list[dict]:
    """Per step so far, at the article's size: {"step", label: ms} from every source the ladder chart
    shows: the article, committed results, ``measured`` (this run), and the model's estimates."""
    names = steps_so_far(step)
    article = LSTMConfig.article()
    ran = [dict(r, file="this run") for r in check_results("measured", list(measured)) if "skipped" not in r]
    found = [r for r in committed_results() + ran
             if r.get("times_meaningful") and r["config"] == article.as_dict() and r["step"] in names]
    estimated = list(ESTIMATES)
    for r in found:
        gpu = find_gpu(r["device"]["name"])
        if gpu is not None and (gpu["name"], "python") not in estimated:
            estimated.append((gpu["name"], "python"))
    published = article_ms()
    rows = []
    for name in names:
        row = {"step": name}
        if name in published:
            row[f"{ARTICLE_LABEL} (measured, published)"] = published[name]
        for r in found:
            if r["step"] == name:
                row[f"{r['device']['name']} (measured, {r['file']})"] = r["time_ms"]["median"]
        for gpu, host in estimated:
            ms = estimate_ms(name, gpu, host)
            if ms is not None:
                row[f"{gpu}, {HOST_WORDS[host]} host (estimate)"] = ms
        rows.append(row)
    return rows


def label_gpu(label: str) -> str:
    """The GPU a ``ladder_times`` label is about."""
    if label.startswith(ARTICLE_LABEL):
        return ARTICLE_GPU
    if label.endswith("(estimate)"):
        return label.split(",")[0]
    device = label.split(" (measured")[0]
    row = find_gpu(device)
    return row["name"] if row else device


def panel_title(gpu: str, labels: list[str]) -> str:
    """A ladder chart panel's title: what is measured, and the host its estimates assume."""
    hosts = [host for host, words in HOST_WORDS.items() if any(label.endswith(f"{words} host (estimate)") for label in labels)]
    estimated = f"estimated (hatched), {' and '.join(HOST_WORDS[h] for h in hosts)} host" if hosts else ""
    if any(not label.endswith("(estimate)") for label in labels):
        return f"{gpu}: measured (solid)" + (f" and {estimated}" if estimated else "")
    flat = "; where issuing binds, steps that launch as many kernels look flat" if "python" in hosts else ""
    return f"{gpu}: nothing measured; {estimated}{flat}"


def ladder_chart(step: str, measured=()):
    """The ladder so far (``ladder_times``), one panel per GPU, measured bars solid and estimates
    hatched, log scale. Returns the figure."""
    rows = ladder_times(step, measured)
    import matplotlib.pyplot as plt

    from ..gpus import one_gpu
    from .profile.charts import cannot_run

    labels = list(dict.fromkeys(label for row in rows for label in row if label != "step"))
    gpus = list(dict.fromkeys(label_gpu(label) for label in labels))
    panels = {gpu: [label for label in labels if label_gpu(label) == gpu] for gpu in gpus}
    heights = [1.0 + 0.22 * len(rows) * len(mine) for mine in panels.values()]
    fig, axes = plt.subplots(len(gpus), 1, figsize=(12, sum(heights) + 0.6 * len(gpus)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    colors = plt.get_cmap("tab10").colors
    least = min(value for row in rows for label, value in row.items() if label != "step")
    left = 10 ** math.floor(math.log10(least / 1.5))  # bars start at a power of ten, not at the data
    for ax, (gpu, mine) in zip(axes[:, 0], panels.items()):
        height = 0.8 / len(mine)
        for index, label in enumerate(mine):
            colour = colors[labels.index(label) % len(colors)]
            ys = [len(rows) - 1 - i - 0.4 + height * (index + 0.5) for i, row in enumerate(rows) if label in row]
            ms = [row[label] for row in rows if label in row]
            estimate = label.endswith("(estimate)")
            ax.barh(ys, ms, height=height * 0.92, color="white" if estimate else colour, edgecolor=colour,
                    hatch="///" if estimate else None, label=label)
            for y, value in zip(ys, ms):
                ax.annotate(f"{value:.3g}", (value, y), xytext=(3, 0), textcoords="offset points", va="center",
                            fontsize=7)
        for i, row in enumerate(rows):
            if not any(label in row for label in mine):
                why = f"cannot run on the {gpu}: {cannot_run(gpu)}" if find_gpu(gpu) else "not measured"
                ax.text(left * 1.1, len(rows) - 1 - i, why, va="center", fontsize="small")
        ax.set_yticks(range(len(rows)), [row["step"] for row in rows][::-1])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xscale("log")
        ax.set_xlim(left, None)
        ax.set_title(panel_title(gpu, mine), fontsize="medium")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # beside the bars, never on one
        one_gpu(ax, gpu)
    axes[-1, 0].set_xlabel("milliseconds per forward pass at the article's size (log scale; shorter is faster)")
    fig.suptitle(f"The ladder so far, up to {steps.get(step).name}, one GPU per panel")
    fig.tight_layout()
    return fig


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
    "combined_inputs": "on the side stream one input GEMM per 2 steps (the default chunk), running ahead from the "
                       "start of each layer; on the main one only the recurrence (one GEMM and one cell per step), "
                       "and how much the two overlap",
    "wavefront": "one stream per layer: their kernels overlapping along diagonals, a layer starting its chunk as "
                 "soon as the layer below has finished it",
    "persistent": "one long persistent_layer kernel per layer after its input GEMM: 8 kernels in the whole pass; "
                  "its length against the wavefront's pass is the barriers' and loads' real cost",
}
#: Nsight Compute's counters for sectors per warp-wide load (a request) of global loads.
SECTOR_METRICS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"


def nsight(step: str) -> None:
    """Print how to record ``step`` and the step before with Nsight Systems (Nsight Compute for the
    pre-transposed weights), and what to look for. Nothing is run."""
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
        print(f"  ncu --kernel-name regex:_gemm --launch-count 4 --metrics {SECTOR_METRICS} \\\n"
              f"      python -m fastlstm_lib bench --steps {name} --config article --warmup 0 --repeats 1")
        print("  sectors / requests = sectors per warp-wide load: 4 when a warp's 32 floats are 128 contiguous bytes")


#: Notebook 13's experiment that times a ladder step's mechanism on the CPU, where it has one: its
#: section's heading there and the function that times it (``cpu_speed``). A test holds the headings.
ON_YOUR_CPU = {
    "combined_gemms": ("## 1 · Combined GEMMs (notebook 03): 8 products against 2", "cpu_speed.stacked_gemms"),
    "fused_pointwise": ("## 2 · The fused cell (notebook 05): 26 NumPy passes against one loop", "cpu_speed.fused_pointwise"),
    "combined_inputs": ("## 3 · Combined inputs (notebook 07): one product per step against one tall product",
                        "cpu_speed.combined_inputs"),
}


def on_your_cpu(step: str) -> str | None:
    """Where notebook 13 times ``step``'s mechanism on this CPU (section and function), or None."""
    name = steps.get(step).name
    if name not in ON_YOUR_CPU:
        return None
    heading, function = ON_YOUR_CPU[name]
    return (f"The same mechanism, timed on this CPU in a few seconds: notebook 13 (13_on_your_cpu.ipynb), "
            f"section \"{heading.lstrip('# ')}\" ({function}).")


def measure(step: str) -> list[dict]:
    """On a GPU, every step so far timed at the article's size (a table); on the simulator nothing is
    timed and it says so. Then ``ladder_chart``."""
    results = []
    if DEVICE.small:
        print("The CUDA simulator runs kernels as Python threads: a time taken here would say nothing "
              "about a GPU, so nothing is timed. The chart shows the article's M40, any GPU result committed "
              "under data/results/, and the timeline model's estimates. On a GPU this cell times every step "
              "so far at the article's size and adds them.")
        if on_your_cpu(step):
            print(on_your_cpu(step))
    else:
        results = bench_steps(steps_so_far(step), LSTMConfig.article())
        print(format_table(results))
    import matplotlib.pyplot as plt

    ladder_chart(step, results)
    plt.show()
    return results
