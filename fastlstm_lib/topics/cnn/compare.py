"""Which layout trains faster, by how much, and whether that is more than noise.

The one definition of "faster" (``faster``): speedup = t_slower / t_faster of the median epoch
times, x% faster = (speedup - 1) * 100. ``chart_percent`` signs it by the winner (+ channels_first),
so a chart draws exactly the number the text prints.
"""

from __future__ import annotations

from ...checks import check_dict, check_number, check_records
from ...runtime.keras_backend import device_label
from ...tables import Column, Span, table
from .formats import DATA_FORMATS, check_data_format

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


def variant_key(result: dict) -> tuple:
    """What must match for two results to be compared: everything but the layout."""
    return (result["label"], result["precision"], result["jit_compile"], result["batch_size"], result["replicas"],
            result["images"], result["image_size"], result.get("variant", ""), result["env"].get("device"),
            result.get("file"))


_NEEDED = ("model", "label", "precision", "jit_compile", "batch_size", "replicas", "images", "image_size", "data_format", "env")


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
    for result in results:
        pairs.setdefault(variant_key(result), {})[result["data_format"]] = result
    return [_layout_row(pair) for pair in pairs.values() if set(pair) == set(DATA_FORMATS)]


def _layout_row(pair: dict) -> dict:
    last, first = pair["channels_last"], pair["channels_first"]
    row = {key: last[key] for key in ("model", "label", "precision", "jit_compile", "batch_size", "replicas",
                                      "images", "image_size")}
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
