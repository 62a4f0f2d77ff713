"""Charts of profiles and bounds (notebooks 04, 06 and 11), one GPU per panel (``gpus.one_gpu``).
matplotlib is imported when a chart is drawn.
"""

from __future__ import annotations

from ...checks import check_int
from ...kernels.versions import spec_of
from ..plots import figure_axes
from ...gpus import one_gpu
from .bound import Bound

#: The colour of each role a kernel's spec gives it (``Spec.role``), the legend's groups.
ROLE_COLORS = {"GEMM": "tab:blue", "fused cell": "tab:green", "persistent layer": "tab:purple", "fill": "tab:gray"}
ELEMENTWISE = "element-wise"
ELEMENTWISE_COLOR = "tab:orange"


def role(kernel: str) -> str:
    """The legend's group of a launch's kernel (its name): its spec's role; "element-wise" for a
    kernel of no spec."""
    spec = spec_of(kernel)
    return ELEMENTWISE if spec is None else spec.role


def timeline_chart(bound: Bound, first: int | None = None, count: int = 30, *, ax=None):
    """Launches per stream over time in the bound's schedule, over the span of launches ``first`` to
    ``first + count - 1`` (default: 30 a tenth of the way in), with a row of host issues; hatched
    bars are limited by DRAM bytes. A lower bound's schedule, not a picture of a GPU."""
    from matplotlib.patches import Patch

    if not isinstance(bound, Bound):
        raise TypeError(f"timeline_chart() needs a Bound (fl.lower_bound(...)), got {type(bound).__name__}")
    first = len(bound.timeline) // 10 if first is None else check_int("first", first, minimum=0)
    count = check_int("count", count)
    chosen = [e for e in bound.timeline if first <= e["launch"] < first + count]
    if not chosen:
        raise ValueError(f"no launch {first}..{first + count - 1} in a pass of {len(bound.timeline)}")
    start, end = min(e["start_ms"] for e in chosen), max(e["end_ms"] for e in chosen)
    shown = [e for e in bound.timeline if e["end_ms"] > start and e["start_ms"] < end]
    streams = sorted({e["stream"] for e in shown})
    fig, ax = figure_axes(ax, (10, 1.4 + 0.55 * (len(streams) + 1)))
    row = {stream: i for i, stream in enumerate(streams)}
    for e in shown:
        color = ROLE_COLORS.get(role(e["kernel"]), ELEMENTWISE_COLOR)
        left = max(e["start_ms"], start)
        ax.barh(row[e["stream"]], (min(e["end_ms"], end) - left) * 1e3, left=(left - start) * 1e3, height=0.6,
                color=color, edgecolor="black", linewidth=0.4, hatch="//" if e["limit"] == "bytes" else None)
    issued = [(e["issued_ms"] - start) * 1e3 for e in bound.timeline if start <= e["issued_ms"] <= end]
    ax.vlines(issued, len(streams) - 0.3, len(streams) + 0.3, color="black", linewidth=0.8)
    ax.set_yticks(range(len(streams) + 1),
                  [f"stream {s}" + (" (default)" if s == 0 else "") for s in streams] + ["host issues"])
    ax.set_xlim(0, (end - start) * 1e3)
    ax.set_xlabel(f"time in the lower-bound schedule (µs after {start:.3f} ms)\n"
                  "the lower bound's schedule: each launch drawn at the whole GPU's peak; "
                  "kernels that overlap here in fact share the SMs")
    kinds = dict.fromkeys(role(e["kernel"]) for e in shown)
    ax.legend(handles=[Patch(color=ROLE_COLORS.get(kind, ELEMENTWISE_COLOR), label=kind) for kind in kinds],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_title(f"{bound.step} on {bound.gpu}, host {bound.host}: bound {bound.bound_ms:.2f} ms per pass, set by "
                 f"{bound.binding}")
    fig.tight_layout()
    return fig


def sectors_chart(rows: list[dict], *, ax=None):
    """Bars: 32-byte sectors per warp-wide load (``sectors.measure()``), against the 4 that 32
    neighbouring floats need."""
    fig, ax = figure_axes(ax, (9, 0.9 + 0.5 * len(rows)))
    labels = [f"{r['load']}\n{r['layout']}" for r in rows]
    values = [r["sectors_per_warp_load"] for r in rows]
    colors = ["tab:red" if v > 4 else "tab:green" for v in values]
    ax.barh(labels[::-1], values[::-1], color=colors[::-1])
    ax.axvline(4, color="black", linestyle="--", linewidth=1, label="32 neighbouring floats: 4 sectors")
    ax.set_xlabel("32-byte sectors per warp-wide load (measured on the simulator; fewer is better)")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def cannot_run(gpu: str) -> str:
    """Why the persistent step has no bar for ``gpu``: no grid barrier at all, or it does not fit."""
    from ...gpus import chip

    return "does not fit" if chip(gpu).cooperative_launch else "no cooperative launch (no grid barrier)"


def ladder_bounds_chart(rows: list[dict], gpus=("M40", "H100"), hosts=("cpp", "python")):
    """Per step, the lower bound per host (``ladder_bounds`` rows), one panel per GPU, the article's
    time in its M40's panel. Returns the figure."""
    import numpy as np

    from ..article import ARTICLE_GPU

    gpus = tuple(gpus)
    panel = 0.6 + 0.14 * len(rows) * (len(hosts) + 1)
    fig, axes = figure_axes(None, (11, 0.6 + panel * len(gpus)), len(gpus), 1)
    axes = list(axes) if len(gpus) > 1 else [axes]
    palette = ["tab:blue", "lightsteelblue", "tab:orange", "navajowhite", "tab:green", "palegreen"]
    positions = np.arange(len(rows))[::-1]
    keys = [f"{gpu} {host} ms" for gpu in gpus for host in hosts] + ["article_ms"]
    smallest = min(row[key] for row in rows for key in keys if row.get(key) is not None)
    for ax, gpu in zip(axes, gpus):
        series = [(f"{gpu} {host} ms", f"bound, {'C++' if host == 'cpp' else 'Python'} host", palette[k % len(palette)])
                  for k, host in enumerate(hosts)]
        if gpu == ARTICLE_GPU:
            series.append(("article_ms", "the article's implementation, measured", "black"))
        height = 0.8 / len(series)
        for k, (key, label, color) in enumerate(series):
            for y, row in zip(positions, rows):
                bar_y = y + 0.4 - (k + 0.5) * height  # the legend's order, top to bottom
                if row.get(key) is not None:
                    ax.barh(bar_y, row[key], height=height, color=color, label=label)
                    label = None  # once in the legend
                elif row.get(f"{gpu} {hosts[0]} binding") == "does not fit" and k == 0:
                    ax.text(smallest, y, f" cannot run on the {gpu}: {cannot_run(gpu)}", va="center", fontsize="small")
        ax.set_yticks(positions, [row["step"] for row in rows])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xscale("log")
        ax.set_xlim(smallest / 2, None)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        ax.set_title(f"on the {gpu}", fontsize="medium")
        one_gpu(ax, gpu)
    shared = max(ax.get_xlim()[1] for ax in axes)
    for ax in axes:
        ax.set_xlim(smallest / 2, shared)
        ax.set_xlabel("milliseconds per forward pass (log scale; lower is faster)")
    fig.suptitle("Lower bounds from launches, FLOPs, bytes and dependencies, one GPU per panel\n"
                 "hidden 512, batch 64, 100 steps, 4 layers")
    fig.tight_layout()
    return fig


def article_ratio_chart(checked: list[dict], *, ax=None):
    """Bars: the article's M40 time / our C++-host M40 bound per step (``ladder.article_check``).
    At 1 the article's implementation would be at the limit; below 1 the bound would be wrong."""
    fig, ax = figure_axes(ax, (8, 1.0 + 0.4 * len(checked)))
    labels = [f"{r['step']} (bound by {r['binding_cpp']})" for r in checked]
    ratios = [r["measured_over_bound"] for r in checked]
    ax.barh(labels[::-1], ratios[::-1], color=["tab:blue" if r >= 1 else "tab:red" for r in ratios[::-1]])
    ax.axvline(1, color="black", linewidth=1, label="at the bound")
    ax.set_xlabel("article's M40 time / lower bound (C++ host): how far from the limit")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("the article's time over the lower bound, step by step", fontsize="medium")
    one_gpu(ax, "M40")
    fig.tight_layout()
    return fig
