"""Charts shared by the notebooks and the command line. matplotlib is imported when used."""

from __future__ import annotations

from .published import article_numbers


def ladder_chart(results: list[dict], *, published: bool = True, title: str | None = None, ax=None):
    """Horizontal bars: GFLOP/s of each measured step, beside the blog's M40 numbers.

    ``results`` are ``fl.bench`` dicts (any mix of devices: each bar is labelled with its
    device). Simulator results are left out: their times mean nothing. Returns the figure.
    """
    import matplotlib.pyplot as plt

    measured = [r for r in results if r.get("times_meaningful")]
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.5 + 0.35 * max(1, len(measured) + (7 if published else 0))))
    else:
        fig = ax.figure
    labels, values, colors = [], [], []
    if published:
        for row in article_numbers():
            labels.append(f"{row['step']} · Tesla M40 (published)")
            values.append(row["gflops"])
            colors.append("tab:gray")
    palette = ["tab:green", "tab:blue", "tab:orange", "tab:purple"]
    devices = sorted({r["device"]["name"] for r in measured})
    for r in measured:
        labels.append(f"{r['step']} · {r['device']['name']}")
        values.append(r["gflops"])
        colors.append(palette[devices.index(r["device"]["name"]) % len(palette)])
    ax.barh(labels[::-1], values[::-1], color=colors[::-1])
    ax.set_xlabel("GFLOP/s (GEMM FLOPs / median time; higher is faster)")
    ax.set_title(title or "LSTM forward pass, hidden 512, batch 64, 100 steps, 4 layers")
    fig.tight_layout()
    return fig
