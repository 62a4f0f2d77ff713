"""Charts shared by the notebooks and the command line. matplotlib is imported when used."""

from __future__ import annotations

from .article import article_numbers


def ladder_chart(results: list[dict], *, published=True, title: str | None = None, ax=None):
    """Horizontal bars: GFLOP/s of each measured step, beside the blog's M40 numbers.

    ``results`` are ``fl.bench`` dicts (any mix of devices: each bar is labelled with its
    device). Simulator results are left out: their times mean nothing. ``published`` is True
    (all published rows), False, or a list of step names to show. Returns the figure.
    """
    import matplotlib.pyplot as plt

    measured = [r for r in results if r.get("times_meaningful")]
    rows = article_numbers() if published is True else [] if not published else [
        row for row in article_numbers() if row["step"] in published
    ]
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 1.2 + 0.3 * (len(measured) + len(rows))))
    else:
        fig = ax.figure
    labels, values, colors = [], [], []
    for row in rows:
        labels.append(f"{row['step']} · Tesla M40 (published)")
        values.append(row["gflops"])
        colors.append("tab:gray")
    palette = ["tab:green", "tab:blue", "tab:orange", "tab:purple"]
    devices = sorted({r["device"]["name"] for r in measured})
    for r in measured:
        origin = r.get("file", "this run")  # committed results carry the file they came from
        labels.append(f"{r['step']} · {r['device']['name']} ({origin})")
        values.append(r["gflops"])
        colors.append(palette[devices.index(r["device"]["name"]) % len(palette)])
    ax.barh(labels[::-1], values[::-1], color=colors[::-1])
    ax.set_xlabel("GFLOP/s (GEMM FLOPs / median time; higher is faster)")
    ax.set_title(title or "LSTM forward pass, hidden 512, batch 64, 100 steps, 4 layers")
    fig.tight_layout()
    return fig


# ---- pictures of the ideas (notebooks 02-08) -------------------------------------------------

GEMM_KERNELS = ("blocked_gemm", "tiled_gemm")


def launch_chart(counts: dict, layer_steps: int, *, ax=None):
    """Stacked bars: kernel launches per layer-step of each step, GEMMs vs point-wise kernels.

    ``counts`` maps a step name to the Counter of ``fl.count_launches()`` over one forward pass
    that made ``layer_steps`` layer-steps.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(counts)))
    else:
        fig = ax.figure
    names = list(counts)[::-1]
    gemms = [sum(n for k, n in counts[s].items() if k in GEMM_KERNELS) / layer_steps for s in names]
    others = [sum(n for k, n in counts[s].items() if k not in GEMM_KERNELS) / layer_steps for s in names]
    ax.barh(names, gemms, color="tab:blue", label="GEMM launches")
    ax.barh(names, others, left=gemms, color="tab:orange", label="element-wise launches")
    for y, (g, o) in enumerate(zip(gemms, others)):
        ax.text(g + o + 0.2, y, f"{g + o:.1f}", va="center")
    ax.set_xlabel("kernel launches per layer-step (one forward pass / layers / steps)")
    ax.set_xlim(0, max(g + o for g, o in zip(gemms, others)) * 1.15)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def stream_timeline(lanes: list, *, title: str, ax=None):
    """A schematic timeline: ``lanes`` = [(stream label, [(start, length, text, color), ...])].

    Units are arbitrary: it shows what may overlap and what must wait, not measured times.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(11, 0.8 + 0.7 * len(lanes)))
    else:
        fig = ax.figure
    for y, (_, boxes) in enumerate(lanes[::-1]):
        for start, length, text, color in boxes:
            ax.broken_barh([(start, length)], (y - 0.35, 0.7), color=color, edgecolor="white")
            ax.text(start + length / 2, y, text, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes)), [label for label, _ in lanes[::-1]])
    ax.set_xlabel("time (schematic, arbitrary units)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def warp_loads(*, rows: int = 8, cols: int = 32, ax=None):
    """Which words of a row-major matrix one warp's 32 loads touch: along a row (B stored (K, N))
    or down a column (B stored (N, K) and read transposed)."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
    else:
        fig, axes = ax.figure, ax
    touched_row = np.zeros((rows, cols))
    touched_row[2, :] = 1
    touched_col = np.zeros((32, cols))
    touched_col[:, 5] = 1
    for axis, touched, title in [
        (axes[0], touched_row, "pre-transposed: 32 neighbours in one row\n= 1 memory transaction of 128 bytes"),
        (axes[1], touched_col, "read transposed: 1 word in each of 32 rows\n= 32 transactions, 4 of 128 bytes used"),
    ]:
        axis.imshow(touched, cmap="Blues", vmin=0, vmax=1.3, aspect="auto")
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("column in memory (consecutive 4-byte words)")
        axis.set_ylabel("row in memory")
    fig.tight_layout()
    return fig


def wavefront_grid(layers: int, chunks: int, *, ax=None):
    """The wavefront's order: cell (layer, chunk) labelled with its diagonal; equal labels may run
    at the same time."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        fig, ax = plt.subplots(figsize=(min(12, 1.5 + 0.7 * chunks), 0.8 + 0.6 * layers))
    else:
        fig = ax.figure
    diagonal = np.add.outer(np.arange(layers), np.arange(chunks))
    ax.imshow(diagonal, cmap="viridis", origin="lower", aspect="auto")
    for layer in range(layers):
        for chunk in range(chunks):
            ax.text(chunk, layer, str(diagonal[layer, chunk]), ha="center", va="center", color="white", fontsize=9)
    ax.set_xlabel("chunk of time steps")
    ax.set_ylabel("layer")
    ax.set_xticks(range(chunks))
    ax.set_yticks(range(layers))
    ax.set_title(f"Wavefront: {layers + chunks - 1} diagonals instead of {layers * chunks} sequential chunks "
                 "(cells with the same number may run at once)")
    fig.tight_layout()
    return fig
