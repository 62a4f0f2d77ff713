"""The GPU run's frame: stages in order within one time budget, nothing lost when one fails.

Each stage has an estimated cost (seconds on the GPU machine, see ``stages.py``). It runs only if
the time left covers that estimate, else it is recorded as skipped with the reason. It runs in
its own ``try``; its items (``Context.item``) each in their own too, so one wrong step costs one
row, not the stage. The moment a stage ends, its JSON file is written under ``OUT/results/``
(environment, config, every row so far, and the traceback if it failed), one line is appended to
``OUT/summary.txt``, and ``OUT/gpu-run.tar.gz`` is packed again with everything so far: a run
killed at any point leaves every finished stage in the archive. A watchdog (``faulthandler``)
writes every thread's traceback to ``OUT/tracebacks.txt`` shortly before the budget runs out,
so a stage that hangs (a grid barrier whose blocks are not all resident never returns) says where.
"""

from __future__ import annotations

import dataclasses
import datetime
import faulthandler
import json
import math
import os
import tarfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

#: Seconds before the budget's end at which the watchdog dumps every thread's traceback
#: (``faulthandler``, from C: it works even while a call holds the interpreter).
WATCHDOG_MARGIN_S = 20
#: Seconds before the budget's end at which the stage still running is written as it stands
#: ("cut"), packed, and the process ends with CUT_EXIT_STATUS.
CUT_MARGIN_S = 5
CUT_EXIT_STATUS = 124


class StopRun(RuntimeError):
    """A stage found that nothing later can work (nothing compiles): the run stops, saying why."""


@dataclasses.dataclass(frozen=True)
class Stage:
    number: int
    name: str
    title: str
    run: Callable  # run(ctx) -> dict of extra top-level fields (optional); rows go through ctx
    cost_s: float  # estimated seconds on the GPU machine at full size
    quick_cost_s: float  # the same in --quick (the rehearsal's small sizes)
    file: str  # the result file's name, "{date}" filled in
    #: Why this stage cannot run in this process, or None (checked before its cost).
    unavailable: Callable[[], str | None] = lambda: None


class Context:
    """What a stage sees: its output folder, the clock, the sizes, and where rows go."""

    def __init__(self, out: Path, budget_s: float, quick: bool, fail: str | None = None):
        self.out = Path(out)
        self.results_dir = self.out / "results"
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.quick = quick
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.budget_s = budget_s
        self.date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")
        self.fail = fail  # a stage name told to raise (the test of the frame)
        self.rows: list[dict] = []  # the stage's items, each with its outcome
        self.kept: list[dict] = []  # its measurements, in the form the notebooks read (``keep``)
        self.shared: dict = {}  # what one stage finds and a later one uses (the environment, compiled kernels)
        #: Errors that mean "this GPU cannot run it", recorded as skipped, not failed.
        self.unable: tuple = ()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def keep(self, result: dict) -> dict:
        """A measurement for the stage file's ``results`` (what ``fl.load_results`` returns)."""
        self.kept.append(result)
        return result

    def item(self, name: str, call: Callable, *, cost_s: float = 0.0, **fields):
        """Run ``call()`` as one row of the stage: its result (a dict is merged into the row),
        its time and its outcome, "ok", "failed: ...", or "skipped: ..." when the budget left is
        under ``cost_s``. Returns what ``call`` returned, None if it failed or was skipped."""
        row = {"item": name, **fields}
        if cost_s and self.left() < cost_s:
            row["outcome"] = f"skipped: {self.left():.0f} s left, it needs about {cost_s:.0f} s"
            self.rows.append(row)
            return None
        started = time.perf_counter()
        try:
            value = call()
        except StopRun:
            raise
        except self.unable as error:  # the library's own "this GPU cannot run it" (the persistent grid on an M40)
            row.update(outcome=f"skipped: {error}", seconds=round(time.perf_counter() - started, 3))
            self.rows.append(row)
            return None
        except Exception as error:  # noqa: BLE001 - every failure is a row, and the stage goes on
            row.update(outcome=f"failed: {type(error).__name__}: {str(error)[:2000]}",
                       traceback=traceback.format_exc()[-6000:], seconds=round(time.perf_counter() - started, 3))
            self.rows.append(row)
            print(f"  {name}: FAILED: {type(error).__name__}: {str(error)[:300]}", flush=True)
            return None
        row["seconds"] = round(time.perf_counter() - started, 3)
        if isinstance(value, dict):  # its plain fields (the whole of a measurement goes to ``keep``)
            row.update({k: v for k, v in value.items() if k not in row and (v is None or isinstance(v, (str, int, float)))})
        elif value is not None:
            row["value"] = value
        row.setdefault("outcome", "ok")
        self.rows.append(row)
        return value


def jsonable(value):
    """Floats that JSON can hold (NaN and infinity as strings), NumPy scalars and arrays as Python's."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def write_json(path: Path, data) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(jsonable(data), indent=2) + "\n")
    os.replace(partial, path)


def pack(out: Path) -> Path:
    """``OUT/gpu-run.tar.gz``: the results, the summary, the tracebacks and the log, packed anew."""
    archive = out / "gpu-run.tar.gz"
    partial = out / "gpu-run.tar.gz.partial"
    with tarfile.open(partial, "w:gz") as tar:
        for path in sorted(out.rglob("*")):
            if path.is_file() and not path.name.startswith("gpu-run.tar.gz"):
                tar.add(path, arcname=str(path.relative_to(out)))
    os.replace(partial, archive)
    return archive


def outcome_counts(rows: list[dict]) -> dict:
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    for row in rows:
        counts[row.get("outcome", "ok").split(":")[0]] = counts.get(row.get("outcome", "ok").split(":")[0], 0) + 1
    return counts


def _stage_file(ctx: Context, stage: Stage) -> Path:
    return ctx.results_dir / stage.file.format(date=ctx.date)


def _finish(ctx: Context, stage: Stage, record: dict, environment: Callable[[], dict]) -> None:
    """Write the stage's file and summary line, and pack the archive."""
    record["items"] = list(ctx.rows)
    record["counts"] = outcome_counts(record["items"])
    if record["status"] != "skipped" and "environment" not in record:
        try:
            record["environment"] = environment()
        except Exception as error:  # noqa: BLE001
            record["environment"] = {"error": f"{type(error).__name__}: {error}"}
    path = _stage_file(ctx, stage)
    write_json(path, {**record, "results": list(ctx.kept)})
    line = summary_line(record, path.relative_to(ctx.out))
    with open(ctx.out / "summary.txt", "a") as out:
        out.write(line + "\n")
    print(line, flush=True)
    pack(ctx.out)


def run_stages(stages: list[Stage], ctx: Context, environment: Callable[[], dict], note: str = "") -> list[dict]:
    """Run ``stages`` in order within ``ctx``'s budget; return one record per stage. ``note``
    heads the summary (the fake GPU's: nothing runs there, times mean nothing)."""
    watchdog = open(ctx.out / "tracebacks.txt", "w")
    faulthandler.dump_traceback_later(max(1.0, ctx.left() - WATCHDOG_MARGIN_S), file=watchdog)
    with open(ctx.out / "summary.txt", "a") as line_out:
        line_out.write(f"GPU run {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: "
                       f"budget {ctx.budget_s:.0f} s{' (quick: the rehearsal sizes)' if ctx.quick else ''}"
                       f"{'; ' + note if note else ''}\n")
    records, stopped = [], None
    running: dict = {}  # the stage under way, for the cut

    def cut() -> None:
        """The budget is about to run out: keep what the stage under way has, and end."""
        if running:
            faulthandler.dump_traceback(file=watchdog, all_threads=True)
            watchdog.flush()
            record = dict(running["record"], status="cut", error="the budget ran out during this stage",
                          seconds=round(time.monotonic() - running["started"], 2))
            _finish(ctx, running["stage"], record, environment)
            os._exit(CUT_EXIT_STATUS)

    timer = threading.Timer(max(0.5, ctx.left() - CUT_MARGIN_S), cut)
    timer.daemon = True
    timer.start()
    for stage in stages:
        record = {"stage": stage.number, "name": stage.name, "title": stage.title,
                  "estimate_s": stage.quick_cost_s if ctx.quick else stage.cost_s}
        ctx.rows, ctx.kept = [], []
        started = time.monotonic()
        why_not = stopped or stage.unavailable()
        if why_not is None and ctx.left() < record["estimate_s"]:
            why_not = f"{ctx.left():.0f} s left, it needs about {record['estimate_s']:.0f} s"
        if why_not is not None:
            record.update(status="skipped", why=why_not)
        else:
            print(f"stage {stage.number} {stage.name}: {stage.title} (about {record['estimate_s']:.0f} s, "
                  f"{ctx.left():.0f} s left)", flush=True)
            running.update(stage=stage, record=record, started=started)
            (ctx.out / "current_stage").write_text(f"{stage.number} {stage.name}\n")  # for the wrapper's last resort
            try:
                if ctx.fail == stage.name:
                    raise RuntimeError(f"stage {stage.name!r} told to fail (--fail {stage.name}): the frame's own test")
                record.update(stage.run(ctx) or {})
                record["status"] = "partial" if outcome_counts(ctx.rows)["failed"] else "ok"
            except StopRun as error:
                record.update(status="failed", error=str(error), traceback=traceback.format_exc())
                stopped = f"stage {stage.number} ({stage.name}) stopped the run: {error}"
            except Exception as error:  # noqa: BLE001 - a stage's failure is recorded, the run goes on
                record.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
            running.clear()
        record["seconds"] = round(time.monotonic() - started, 2)
        _finish(ctx, stage, record, environment)
        records.append(record)
    timer.cancel()
    (ctx.out / "current_stage").unlink(missing_ok=True)
    faulthandler.cancel_dump_traceback_later()
    watchdog.close()
    with open(ctx.out / "summary.txt", "a") as line_out:
        done = sum(r["status"] in ("ok", "partial") for r in records)
        line_out.write(f"done: {done} of {len(records)} stages ran in {ctx.elapsed():.0f} s of {ctx.budget_s:.0f} s\n")
    pack(ctx.out)
    return records


def summary_line(record: dict, path) -> str:
    head = f"stage {record['stage']} {record['name']}: "
    if record["status"] == "skipped":
        return head + f"skipped ({record['why']})"
    counts = record["counts"]
    rows = f"{counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped"
    text = f"{record['status'].upper() if record['status'] in ('failed', 'cut') else record['status']} in {record['seconds']:.0f} s " \
           f"(estimate {record['estimate_s']:.0f} s): {rows} -> {path}"
    if record["status"] in ("failed", "cut"):
        text += f"; {record['error'][:300]}"
    for key in ("headline",):
        if record.get(key):
            text += f"; {record[key]}"
    return head + text
