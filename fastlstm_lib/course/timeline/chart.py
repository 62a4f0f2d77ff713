"""``plot_timeline(estimate)``: an estimated pass drawn as Nsight Systems draws a measured one:
``by="stream"`` (a host row and a row per stream) or ``by="sm"`` (resident warps per SM).
matplotlib is imported on first use.
"""

from __future__ import annotations

import numbers

from ...checks import check_choice, check_str
from ...kernels.versions import spec_of
from .api import Estimate


BY = ("stream", "sm")
#: Where a kernel's spec names no colour: tab10's, from its name (the offset keeps the colours
#: these kernels have always had).
NAME_OFFSET = 11


def colour(kernel: str, plt):
    """The kernel's colour (its name), the same in every chart: its spec's (``Spec.colour``: every
    blocked GEMM version shares one), else one of tab10's picked from its name."""
    spec = spec_of(kernel)
    if spec is not None and spec.colour is not None:
        return spec.colour
    return plt.get_cmap("tab10")((NAME_OFFSET + sum(map(ord, kernel))) % 10)


def plot_timeline(estimate: Estimate, window=None, ax=None, by: str = "stream"):
    """Draw ``estimate``'s timeline over ``window`` (t0_ms, t1_ms; None: all) on ``ax`` (None: a new
    figure), ``by`` "stream" or "sm". Returns the Axes."""
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate (fl.estimate(...)), got {type(estimate).__name__}")
    if window is not None:
        if (not isinstance(window, (tuple, list)) or len(window) != 2
                or not all(isinstance(t, numbers.Real) and not isinstance(t, bool) for t in window)):
            raise TypeError(f"window must be (t0_ms, t1_ms), two numbers, or None; got {window!r}")
        if not 0 <= window[0] < window[1]:
            raise ValueError(f"window must satisfy 0 <= t0_ms < t1_ms, got {tuple(window)}")
    check_choice("by", check_str("by", by), BY)
    import matplotlib.pyplot as plt

    t0, t1 = window if window is not None else (0.0, estimate.total_ms)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.6 if by == "stream" else 4.5))
    if by == "sm":
        return _by_sm(estimate, t0, t1, ax, plt)
    streams = sorted({entry["stream"] for entry in estimate.timeline})
    rows = {stream: i + 1 for i, stream in enumerate(streams)}
    shown = set()
    for entry in estimate.timeline:
        if entry["end_ms"] < t0 or entry["start_ms"] > t1:
            continue
        kernel = entry["kernel"]
        ax.broken_barh([(entry["start_ms"], entry["end_ms"] - entry["start_ms"])], (rows[entry["stream"]] - 0.4, 0.8),
                       facecolors=colour(kernel, plt), edgecolor="white", linewidth=0.3,
                       label=None if kernel in shown else kernel.lstrip("_"))
        shown.add(kernel)
        if t0 <= entry["issued_ms"] <= t1:
            ax.plot([entry["issued_ms"]] * 2, [-0.3, 0.3], color="0.3", linewidth=0.6)
    ax.set_yticks([0] + [rows[s] for s in streams], ["host issues"] + [f"stream {s}" for s in streams])
    ax.set_ylim(-0.6, len(streams) + 0.6)
    ax.invert_yaxis()
    ax.set_xlim(t0, t1)
    ax.set_xlabel("time since the pass began (ms, ESTIMATED)")
    ax.set_title(f"{estimate.step} on the {estimate.gpu}, {estimate.host} host, {estimate.gemm} GEMM: "
                 f"{estimate.total_ms:.2f} ms estimated")
    if shown:
        ax.legend(loc="upper right", fontsize="small", ncol=min(4, len(shown)))
    return ax


def _by_sm(estimate: Estimate, t0: float, t1: float, ax, plt):
    """A heat strip: one row per SM, its colour the warps resident on it over time."""
    from ...gpus import gpu as gpu_row

    edges, grid = estimate.resident_warps((t0, t1), bins=300)
    most = gpu_row(estimate.gpu)["max_threads_per_sm"] // 32
    image = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=most,
                      extent=(edges[0], edges[-1], grid.shape[0] - 0.5, -0.5))
    ax.figure.colorbar(image, ax=ax, label=f"warps resident per SM (of {most})", pad=0.01)
    ax.set_xlim(t0, t1)
    ax.set_ylabel("SM")
    ax.set_xlabel("time since the pass began (ms, ESTIMATED)")
    ax.set_title(f"{estimate.step} on the {estimate.gpu}, warps resident per SM ({estimate.host} host, "
                 f"{estimate.gemm} GEMM): {estimate.total_ms:.2f} ms estimated")
    return ax
