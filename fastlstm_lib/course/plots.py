"""Charts shared by the notebooks and the command line, one GPU per panel (the rule and its helpers
are in ``gpus.py``, re-exported here for the notebooks). matplotlib is imported when used.
"""

from __future__ import annotations

from ..gpus import gpus_named, one_gpu, panel_gpus, several_gpus  # noqa: F401  (the rule, for the notebooks)
from .article import article_numbers
from ..checks import check_int, check_str, check_writable_path
from ..kernels.versions import family_of
from .results import check_results

#: What ``ladder_chart`` reads of a result (measured ones: those whose times mean something).
CHART_KEYS = ("step", "times_meaningful", "device.name", "gflops")


def check_image_path(name: str, path):
    """A path matplotlib can save a figure to: writable (``checks.check_writable_path``), its
    suffix an image format matplotlib writes (.png, .svg, .pdf, ...). Returns a pathlib.Path."""
    path = check_writable_path(name, path)
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ValueError(f"{name}: drawing a chart needs matplotlib (pip install matplotlib)") from None
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if path.suffix.lower().lstrip(".") not in formats:
        raise ValueError(f"{name} must end in an image format matplotlib writes (.{', .'.join(formats)}), "
                         f"got {str(path)!r}")
    return path


def figure_axes(ax, figsize: tuple, nrows: int = 1, ncols: int = 1):
    """(figure, axes): ``ax`` and its figure, else a new figure of ``nrows`` x ``ncols`` axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        return plt.subplots(nrows, ncols, figsize=figsize)
    return ax.figure, ax


def ladder_chart(results: list[dict]):
    """GFLOP/s of each measured step, one panel per GPU: the article's M40, then each device of
    ``results`` (simulator results left out). Returns the figure."""
    results = check_results("results", results, keys=CHART_KEYS)
    import matplotlib.pyplot as plt

    from .article import ARTICLE_GPU

    measured = [r for r in results if r.get("times_meaningful")]
    panels = {f"{ARTICLE_GPU} (published)": [(row["step"], row["gflops"]) for row in article_numbers()]}
    for r in measured:
        origin = r.get("file", "this run")  # committed results carry the file they came from
        panels.setdefault(f"{r['device']['name']} ({origin})", []).append((r["step"], r["gflops"]))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 0.8 + sum(0.6 + 0.3 * len(bars) for bars in panels.values())),
                             sharex=True, squeeze=False, gridspec_kw={"height_ratios": [len(b) + 1 for b in panels.values()]})
    palette = ["tab:gray", "tab:green", "tab:blue", "tab:orange", "tab:purple"]
    for index, (ax, (device, bars)) in enumerate(zip(axes[:, 0], panels.items())):
        ax.barh([step for step, _ in bars][::-1], [gflops for _, gflops in bars][::-1], color=palette[index % len(palette)])
        ax.set_title(device, fontsize="medium")
        one_gpu(ax, device.rsplit(" (", 1)[0])
    axes[-1, 0].set_xlabel("GFLOP/s (GEMM FLOPs / median time; higher is faster)")
    fig.suptitle("LSTM forward pass, hidden 512, batch 64, 100 steps, 4 layers, one GPU per panel")
    fig.tight_layout()
    return fig


# ---- pictures of the ideas (notebooks 02-08) -------------------------------------------------



def launch_chart(counts: dict, layer_steps: int, *, ax=None):
    """Stacked bars: launches per layer-step of each step, GEMMs against the rest. ``counts``: step ->
    ``fl.count_launches()`` Counter of one pass of ``layer_steps`` layer-steps."""
    if not isinstance(counts, dict):
        raise TypeError(f"counts must be a dict of step name -> Counter of launches, got {type(counts).__name__} {counts!r:.80}")
    if not counts:
        raise ValueError("counts must hold at least one step, got an empty dict")
    for step, counter in counts.items():
        if not isinstance(counter, dict) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                    for n in counter.values()):
            raise TypeError(f"counts[{step!r}] must be a Counter of launches by kernel name (fl.count_launches()), "
                            f"got {type(counter).__name__} {counter!r:.80}")
    layer_steps = check_int("layer_steps", layer_steps)
    fig, ax = figure_axes(ax, (8, 0.9 + 0.45 * len(counts)))
    names = list(counts)[::-1]
    gemms = [sum(n for k, n in counts[s].items() if family_of(k) == "gemm") / layer_steps for s in names]
    others = [sum(n for k, n in counts[s].items() if family_of(k) != "gemm") / layer_steps for s in names]
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
    """A schematic timeline: ``lanes`` = [(stream label, [(start, length, text, color), ...])], arbitrary units."""
    _check_lanes(lanes)
    check_str("title", title)
    fig, ax = figure_axes(ax, (11, 0.8 + 0.7 * len(lanes)))
    for y, (_, boxes) in enumerate(lanes[::-1]):
        for start, length, text, color in boxes:
            ax.broken_barh([(start, length)], (y - 0.35, 0.7), color=color, edgecolor="white")
            ax.text(start + length / 2, y, text, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes)), [label for label, _ in lanes[::-1]])
    ax.set_xlabel("time (schematic, arbitrary units)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _check_lanes(lanes) -> None:
    """``stream_timeline``'s lanes: [(label, [(start, length, text, color), ...]), ...], not empty."""
    if not isinstance(lanes, (list, tuple)):
        raise TypeError(f"lanes must be a list of (stream label, boxes), got {type(lanes).__name__} {lanes!r:.80}")
    if not lanes:
        raise ValueError("lanes must hold at least one (stream label, boxes), got an empty list")
    for i, lane in enumerate(lanes):
        if not isinstance(lane, (list, tuple)) or len(lane) != 2 or not isinstance(lane[1], (list, tuple)):
            raise TypeError(f"lanes[{i}] must be (stream label, [(start, length, text, color), ...]), got {lane!r:.80}")
        for j, box in enumerate(lane[1]):
            if not isinstance(box, (list, tuple)) or len(box) != 4 or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in box[:2]):
                raise TypeError(f"lanes[{i}] box {j} must be (start, length, text, color) with numbers first, "
                                f"got {box!r:.80}")


def warp_loads():
    """Which words of a row-major matrix one warp's 32 loads touch: along a row (B stored (K, N))
    or down a column (B stored (N, K) and read transposed)."""
    import numpy as np

    fig, axes = figure_axes(None, (11, 3.2), 1, 2)
    touched_row = np.zeros((8, 32))
    touched_row[2, :] = 1
    touched_col = np.zeros((32, 32))
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
    layers = check_int("layers", layers)
    chunks = check_int("chunks", chunks)
    import numpy as np

    fig, ax = figure_axes(ax, (min(12, 1.5 + 0.7 * chunks), 0.8 + 0.6 * layers))
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


def fragment_grid(operand: str, lanes, registers, *, wrong=None, ax=None):
    """One ``mma.m16n8k8`` operand's matrix ("a", "b" or "c": 16 x 8, 8 x 8, 16 x 8), each element
    labelled with the lane and register that hold it ("T5 a2") and coloured by the lane's group of
    4 (lane // 4); ``lanes`` and ``registers``: int arrays of the matrix's shape, -1 where no lane
    holds the element (drawn "?"); ``wrong``: a bool array of the same shape, drawn red."""
    import matplotlib
    import numpy as np

    from ..kernels.mma.layout import OPERANDS

    if operand not in OPERANDS:
        raise ValueError(f"operand must be one of {sorted(OPERANDS)}, got {operand!r}")
    shape = OPERANDS[operand][0]
    lanes, registers = np.asarray(lanes), np.asarray(registers)
    for name, array in (("lanes", lanes), ("registers", registers)):
        if array.shape != shape:
            raise ValueError(f"{name} must have {operand}'s shape {shape}, got {array.shape}")
    wrong = np.zeros(shape, dtype=bool) if wrong is None else np.asarray(wrong, dtype=bool)
    fig, ax = figure_axes(ax, (0.75 * shape[1] + 1, 0.32 * shape[0] + 1.2))
    colors = np.array(matplotlib.colormaps["tab10"].colors)
    image = np.ones(shape + (3,))
    held = lanes >= 0
    image[held] = 0.55 + 0.45 * colors[lanes[held] // 4 % 10]  # one pale colour per group of 4 lanes
    image[wrong] = (1.0, 0.45, 0.45)
    ax.imshow(image, aspect="auto")
    for (row, col), lane in np.ndenumerate(lanes):
        text = f"T{lane} {operand}{registers[row, col]}" if lane >= 0 else "?"
        ax.text(col, row, text, ha="center", va="center", fontsize=7)
    names = {"a": ("row m of A", "column k of A"), "b": ("row k of B", "column n of B"),
             "c": ("row m of C and D", "column n of C and D")}[operand]
    ax.set(ylabel=names[0], xlabel=names[1], xticks=range(shape[1]), yticks=range(shape[0]))
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    return fig
