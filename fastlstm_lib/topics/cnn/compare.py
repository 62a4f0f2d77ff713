"""Which layout trains faster and by how much (``faster``, the one definition), in words, tables beside
the article's numbers (data/article_channels_first.csv) and charts (matplotlib loads inside)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ...checks import check_dict, check_number, check_records
from ...runtime.keras_backend import device_label
from ...tables import Column, Span, table
from .models import ARTICLE_NAMES, DATA_FORMATS, check_data_format

#: What the chart and the tables say "% faster" means.
FASTER_DEFINITION = "x% faster = (t_slower / t_faster - 1) * 100, from median epoch times"


def faster(last_ms: float, first_ms: float) -> dict:
    """The one definition of faster: {"winner", "speedup", "percent_faster"} for two median
    epoch times (any unit, the same for both). speedup = t_slower / t_faster;
    percent_faster = (speedup - 1) * 100. Equal times: no winner, speedup 1, 0%."""
    last_ms = check_number("last_ms", last_ms, minimum=0)
    first_ms = check_number("first_ms", first_ms, minimum=0)
    if last_ms <= 0 or first_ms <= 0:
        raise ValueError(f"epoch times must be > 0, got channels_last {last_ms}, channels_first {first_ms}")
    if last_ms == first_ms:
        return {"winner": None, "speedup": 1.0, "percent_faster": 0.0}
    winner = "channels_first" if first_ms < last_ms else "channels_last"
    speedup = max(last_ms, first_ms) / min(last_ms, first_ms)
    return {"winner": winner, "speedup": speedup, "percent_faster": (speedup - 1) * 100}


def chart_percent(winner: str | None, percent_faster: float) -> float:
    """The signed bar length: +x when channels_first is x% faster, -x when channels_last is."""
    percent_faster = check_number("percent_faster", percent_faster, minimum=0)
    if winner is None:
        return 0.0
    return percent_faster if check_data_format(winner) == "channels_first" else -percent_faster


#: What a variant is, besides its model and layout.
_VARIANT = ("label", "precision", "jit_compile", "batch_size", "replicas", "images", "image_size")
_NEEDED = ("model", *_VARIANT, "data_format", "env")


def _check_results(results) -> None:
    check_records("results", results, _NEEDED, "time_layouts")
    for index, result in enumerate(results):
        check_data_format(result["data_format"])
        if not result.get("error") and not {"time_ms", "epoch_ms"} <= set(result):
            raise ValueError(f"results[{index}] has neither an error nor its times (time_ms, epoch_ms)")


def compare_layouts(results: list[dict]) -> list[dict]:
    """One row per variant with both layouts: ``faster``'s winner, speedup and percent_faster;
    ``clear`` when the faster layout won every round (round i against round i), else within noise;
    ``origin``: "this run" or the results file."""
    _check_results(results)
    pairs: dict[tuple, dict] = {}
    for result in results:  # a pair: the same variant in every respect but the layout
        key = (*(result[k] for k in _VARIANT), result.get("variant", ""), result["env"].get("device"), result.get("file"))
        pairs.setdefault(key, {})[result["data_format"]] = result
    return [_layout_row(pair) for pair in pairs.values() if set(pair) == set(DATA_FORMATS)]


def _layout_row(pair: dict) -> dict:
    last, first = pair["channels_last"], pair["channels_first"]
    row = {key: last[key] for key in ("model", *_VARIANT)}
    row.update(variant=last.get("variant", ""), device=device_label(last["env"]), data=last.get("data"),
               origin=last.get("file") or "this run", last_ms=None, first_ms=None, speedup=None,
               percent_faster=None, rounds=0, error=None)
    failed = [result for result in (last, first) if result.get("error")]
    if failed:
        works = [f for f in DATA_FORMATS if not pair[f].get("error")]
        row.update(winner=works[0] if len(works) == 1 else None, clear=len(works) == 1,
                   error="; ".join(f"{r['data_format']}: {r['error']}" for r in failed))
        return row
    row.update(last_ms=last["time_ms"]["median"], first_ms=first["time_ms"]["median"])
    row.update(faster(row["last_ms"], row["first_ms"]))
    fast, slow = (first, last) if row["winner"] == "channels_first" else (last, first)
    rounds = list(zip(fast["epoch_ms"], slow["epoch_ms"]))
    row.update(rounds=len(rounds), clear=row["winner"] is not None and all(f < s for f, s in rounds))
    return row


_ROW_KEYS = ("label", "precision", "jit_compile", "replicas", "winner", "clear", "error")


def outcome(row: dict) -> str:
    """What a compare_layouts row says, in words, with the one definition of faster."""
    check_dict("row", row, _ROW_KEYS, "compare_layouts")
    if row.get("error"):
        if row["winner"]:
            return f"only {row['winner']} runs ({row['error']})"
        return f"neither layout runs ({row['error']})"
    if row["winner"] is None:
        return "both layouts took the same median time"
    measured = f"{row['winner']} {row['percent_faster']:.0f}% faster, speedup {row['speedup']:.2f}x"
    if not row["clear"]:
        return f"no clear winner ({measured} at the median, but it did not win all {row['rounds']} rounds)"
    return f"{row['winner']} is {row['percent_faster']:.0f}% faster (speedup {row['speedup']:.2f}x, won all {row['rounds']} rounds)"


def verdict(row: dict) -> str:
    """One sentence for one compare_layouts row: the variant it measured, then its ``outcome``."""
    words = outcome(row)  # checks the row before the rest is read
    what = f"{row['label']}, {row['precision']}, XLA {'on' if row['jit_compile'] else 'off'}"
    if row.get("variant"):
        what += f", {row['variant']}"
    if row["replicas"] > 1:
        what += f", {row['replicas']} GPUs"
    return f"{what}: {words}"


RESULT_COLUMNS = (Column("model", "<", 50), Column("layout", "<", 15), Column("precision", "<", 14),
                  Column("XLA", "<", 4), Column("batch", ">", 5), Column("compile ep s", ">", 12, ".2f"),
                  Column("median s", ">", 9, ".3f"), Column("min-max s", ">", 15), Column("images/s", ">", 9, ".0f"),
                  Column("test acc", ">", 8, ".3f"))


def format_results(results: list[dict]) -> str:
    """A text table of time_layouts results (epoch times in seconds)."""
    _check_results(results)
    rows = []
    for r in results:
        name = r["label"] + (f" [{r['variant']}]" if r.get("variant") else "")
        head = [name, r["data_format"], r["precision"], "on" if r["jit_compile"] else "off", r["batch_size"]]
        if r.get("error"):
            rows.append(head + [Span(f" FAILS: {r['error']}")])  # two spaces after the batch
            continue
        t = {key: value / 1e3 for key, value in r["time_ms"].items()}
        rows.append(head + [r["first_epoch_ms"] / 1e3, t["median"], f"{t['min']:>7.3f}-{t['max']:<7.3f}",
                            r["images_per_s"], r.get("test_accuracy", "-")])
    return table(RESULT_COLUMNS, rows)

ARTICLE_CSV = Path(__file__).resolve().parents[3] / "data" / "article_channels_first.csv"
#: The article's setup, for labels.
ARTICLE_SETUP = "RTX 2080 Ti · TF 1.13 · CUDA 10.0 · cuDNN 7.5 · CIFAR-10 32x32"


def article_channels_first() -> list[dict]:
    """The article's measurements: one row per experiment."""
    with ARTICLE_CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return [dict(row, gpus=int(row["gpus"]), cf_faster_pct=float(row["cf_faster_pct"])) for row in rows]


def article_channels_first_source() -> str:
    """The comment lines at the top of the CSV: source and conditions."""
    return "\n".join(line[2:].rstrip() for line in ARTICLE_CSV.read_text().splitlines() if line.startswith("#"))


_TABLE_KEYS = ("model", "label", "precision", "jit_compile", "batch_size", "replicas", "variant", "device", "winner", "clear")


def _matches(article: dict, row: dict) -> bool:
    """A measured row of the article's experiment: its model family, float32, no XLA, as many GPUs."""
    models = [model for model, name in ARTICLE_NAMES.items() if name in article["model"]]
    return (row["model"] in models and row["precision"] == article["precision"] and not row["jit_compile"]
            and not row["variant"] and row["replicas"] == article["gpus"])


def _measured_line(row: dict) -> str:
    size = f", {row['image_size']}x{row['image_size']}" if row.get("image_size") else ""
    data = f" {row['data']}" if row.get("data") else ""
    images = f", {row['images']:,}{data} images" if row.get("images") else ""
    devices = f" · {row['replicas']} GPUs" if row["replicas"] > 1 else ""
    variant = f" · {row['variant']}" if row.get("variant") else ""
    origin = row.get("origin", "this run")
    return (f"{origin}  [{row['device']} · {row['label']} · {row['precision']} · XLA {'on' if row['jit_compile'] else 'off'}"
            f"{variant}{devices} · batch {row['batch_size']}{size}{images}]: {outcome(row)}")


def format_then_and_now(rows: list[dict]) -> str:
    """The article's numbers and measured ``compare_layouts`` rows side by side, as text."""
    check_records("rows", rows, _TABLE_KEYS, "compare_layouts")
    lines, matched = [f"'% faster' everywhere below: {FASTER_DEFINITION}"], set()
    for article in article_channels_first():
        gpus = f"{article['gpus']} GPU{'s' if article['gpus'] > 1 else ''}"
        lines.append(f"{article['model']}, {gpus}, {article['precision']}, no XLA")
        lines.append(f"  the post [{ARTICLE_SETUP}]: channels_first {article['qualifier']} "
                     f"{article['cf_faster_pct']:.0f}% faster (the post's words, not a measured time)")
        ours = [index for index, row in enumerate(rows) if _matches(article, row)]
        lines += ["  " + _measured_line(rows[index]) for index in ours]
        matched.update(ours)
        if not ours:
            lines.append("  measured: nothing" + (f" (needs {article['gpus']} GPUs)" if article["gpus"] > 1 else ""))
    others = [row for index, row in enumerate(rows) if index not in matched]
    if others:
        lines.append("Measured variants the channels_first post has no counterpart for:")
        lines += ["  " + _measured_line(row) for row in others]
    return "\n".join(lines)


def _bars(rows: list[dict]) -> dict:
    """{panel: [(label, value, colour, note), ...]}: one panel per GPU or machine, the post's
    first (grey), then each measured device with its rows."""
    panels = {f"the channels_first post (2019), its words: {ARTICLE_SETUP}": [
        (f"{row['model']} · {row['gpus']} GPU · {row['precision']} · no XLA", row["cf_faster_pct"], "tab:gray",
         f"{row['qualifier']} {row['cf_faster_pct']:.0f}%") for row in article_channels_first()]}
    for row in rows:
        variant = f" · {row['variant']}" if row.get("variant") else ""
        gpus = f" · {row['replicas']} GPUs" if row["replicas"] > 1 else ""
        label = (f"{row['label']} · {row['precision']} · {'XLA' if row['jit_compile'] else 'no XLA'}{variant}{gpus}\n"
                 f"batch {row['batch_size']} ({row.get('origin', 'this run')})")
        bars = panels.setdefault(f"measured on {row['device']}", [])
        if row.get("error"):
            bars.append((label, 0.0, "white", f"only {row['winner']} runs" if row["winner"] else "neither runs"))
            continue
        value = chart_percent(row["winner"], row["percent_faster"])
        note = f"{row['percent_faster']:.0f}%" + ("" if row["clear"] else ", within noise")
        bars.append((label, value, "tab:blue" if value >= 0 else "tab:orange", note))
    return panels


def speedup_chart(rows: list[dict]):
    """Bars of "% faster" (right: channels_first faster), one panel per GPU or machine at one
    scale (``gpus.one_gpu``): the post's numbers in grey, then each device's ``compare_layouts``
    rows, each bar's note in a column right of its panel. Returns the figure."""
    check_records("rows", rows, _TABLE_KEYS, "compare_layouts")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    from ...gpus import gpus_named, one_gpu

    panels = _bars(rows)
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(11, 0.9 + sum(0.6 + 0.5 * max(1, len(b)) for b in panels.values())),
                             gridspec_kw={"height_ratios": [max(1, len(b)) + 0.5 for b in panels.values()]})
    axes = list(axes[:, 0])
    values_all = [value for bars in panels.values() for _, value, _, _ in bars]
    span = max([abs(v) for v in values_all] + [10.0])
    for axis, (title, bars) in zip(axes, panels.items()):
        positions = np.arange(len(bars))[::-1]
        labels, values, colors, notes = zip(*bars) if bars else ((), (), (), ())
        axis.barh(positions, values, color=colors, edgecolor="black", linewidth=0.5)
        axis.set_yticks(positions, labels, fontsize=7)
        axis.axvline(0, color="black", linewidth=0.8)
        column = blended_transform_factory(axis.transAxes, axis.transData)
        for y, note in zip(positions, notes):
            axis.text(1.01, y, note, transform=column, va="center", ha="left", fontsize=7)
        axis.set_xlim(-1.3 * span, 1.3 * span)
        axis.set_title(title, fontsize=8)
        named = gpus_named(title)
        if named:
            one_gpu(axis, sorted(named)[0])
    axes[-1].set_xlabel("% faster = (t_slower / t_faster - 1) x 100, median epochs\n"
                        "right of 0: channels_first faster · left of 0: channels_last faster")
    fig.suptitle("channels_first vs channels_last, one GPU or machine per panel")
    fig.tight_layout()
    return fig


def epoch_chart(results: list[dict], *, title: str = ""):
    """Bars of ms per 1000 training images (median epoch, whiskers min-max), a pair per variant."""
    _check_results(results)
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__} {title!r}")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((r["label"], r["precision"], r["jit_compile"], r.get("variant", "")) for r in results))
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * max(1, len(groups))))
    for offset, (data_format, color) in zip((0.2, -0.2), zip(DATA_FORMATS, ("tab:orange", "tab:blue"))):
        for row, group in enumerate(groups):
            y = len(groups) - 1 - row + offset
            match = [r for r in results if (r["label"], r["precision"], r["jit_compile"], r.get("variant", "")) == group
                     and r["data_format"] == data_format]
            if not match or match[0].get("error"):
                ax.text(0, y, f"  {data_format}: fails", va="center", fontsize=8, color=color)
                continue
            r = match[0]
            per_1000 = {key: r["time_ms"][key] / r["images"] * 1000 for key in ("median", "min", "max")}
            ax.barh(y, per_1000["median"], height=0.4, color=color, label=data_format if row == 0 else None)
            ax.errorbar(per_1000["median"], y, xerr=[[per_1000["median"] - per_1000["min"]], [per_1000["max"] - per_1000["median"]]],
                        color="black", capsize=3, linewidth=1)
    labels = [f"{label} · {precision} · {'XLA' if jit else 'no XLA'}" + (f" · {variant}" if variant else "")
              for label, precision, jit, variant in groups]
    ax.set_yticks(range(len(groups))[::-1], labels, fontsize=8)
    ax.set_xlabel("ms per 1000 training images (median epoch; whiskers: min-max of the rounds; shorter is faster)")
    ax.set_title(title or "Training time per epoch", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)  # outside: never over a bar
    fig.tight_layout()
    return fig
