"""``plot_timeline(estimate)``: an estimated pass drawn as Nsight Systems draws a measured one.

One row for the host (each launch issued: a tick) and one per stream (each launch a bar from its
first block to its last, coloured by kernel), time in ms along x; a window (t0, t1) zooms in.
Matplotlib is imported on first use only.
"""

from __future__ import annotations

import numbers

from .result import Estimate


def plot_timeline(estimate: Estimate, window=None, ax=None):
    """Draw ``estimate``'s timeline (an ``Estimate``); ``window``: (t0_ms, t1_ms) or None for the
    whole pass; ``ax``: a Matplotlib Axes to draw on (a new figure otherwise). Returns the Axes."""
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate (fl.estimate(...)), got {type(estimate).__name__}")
    if window is not None:
        if (not isinstance(window, (tuple, list)) or len(window) != 2
                or not all(isinstance(t, numbers.Real) and not isinstance(t, bool) for t in window)):
            raise TypeError(f"window must be (t0_ms, t1_ms), two numbers, or None; got {window!r}")
        if not 0 <= window[0] < window[1]:
            raise ValueError(f"window must satisfy 0 <= t0_ms < t1_ms, got {tuple(window)}")
    import matplotlib.pyplot as plt

    t0, t1 = window if window is not None else (0.0, estimate.total_ms)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.6))
    streams = sorted({entry["stream"] for entry in estimate.timeline})
    rows = {stream: i + 1 for i, stream in enumerate(streams)}
    kernels = sorted({entry["kernel"] for entry in estimate.timeline})
    colours = {kernel: plt.get_cmap("tab10")(i % 10) for i, kernel in enumerate(kernels)}
    shown = set()
    for entry in estimate.timeline:
        if entry["end_ms"] < t0 or entry["start_ms"] > t1:
            continue
        kernel = entry["kernel"]
        ax.broken_barh([(entry["start_ms"], entry["end_ms"] - entry["start_ms"])], (rows[entry["stream"]] - 0.4, 0.8),
                       facecolors=colours[kernel], edgecolor="white", linewidth=0.3,
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
