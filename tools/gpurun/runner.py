"""The GPU run's frame: stages in order within one time budget, nothing lost when one fails, and
a later call that resumes where an earlier one stopped.

Each stage has an estimated cost (seconds on the GPU machine, see ``stages.py``). It runs only if
the time left covers that estimate, else it is "not reached" (the budget); a stage this machine
cannot run (no torch, no Nsight) is "skipped", with why. It runs in its own ``try``; its items
(``Context.item``) each in their own too, so one wrong step costs one row, not the stage. The
moment a stage ends, its JSON file is written under ``OUT/results/`` (environment, config, every
row so far, and the traceback if it failed), one line is appended to ``OUT/summary.txt``, the
state of every stage to ``OUT/stages.json``, and this call's archive ``OUT/gpu-run-N.tar.gz`` is
packed again with everything so far: a run killed at any point leaves every finished stage in it.
A watchdog (``faulthandler``) writes every thread's traceback to ``OUT/tracebacks.txt`` shortly
before the budget runs out, so a stage that hangs (a grid barrier whose blocks are not all
resident never returns) says where; the stage under way is then written as it stands ("cut"),
and every stage after it named "not reached".

**Resuming** (``--resume DIR``): DIR holds what earlier calls brought back (their archives, or
their OUT folders unpacked). Their ``stages.json`` say which stages are done (ran, well or not, or
cannot run on this machine); this call is call N (one more than the latest there), runs only the
others, and names the done ones in its summary ("done in call 1"). Every call's summary names
every stage.
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
#: What a stage's status may be: ran (ok, partial, failed), found that nothing after it can work
#: (stopped: smoke, when nothing compiles), cannot run here (skipped), stopped by the budget while
#: running (cut), never started (not reached), or run by an earlier call (done earlier). A resumed
#: call runs again only the stages that were stopped, cut or not reached.
DONE = ("ok", "partial", "failed", "skipped")
STATE = "stages.json"


def archive_name(call: int) -> str:
    """This call's archive: ``gpu-run-1.tar.gz``, ``gpu-run-2.tar.gz``, ..."""
    return f"gpu-run-{call}.tar.gz"


def earlier_calls(folder: Path) -> dict:
    """What earlier calls did, from ``folder``: every ``stages.json`` in it, in a subfolder or in a
    ``gpu-run-*.tar.gz`` there. Returns {"call": the latest call's number (0: none), "done": {stage
    name: (call, status)} for the stages done (``DONE``) in any of them}."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--resume: {folder} is not a folder (it should hold what earlier calls brought back)")
    states = [json.loads(path.read_text()) for path in sorted(folder.rglob(STATE))]
    for path in sorted(folder.rglob("gpu-run*.tar.gz")):
        with tarfile.open(path) as archive:
            if STATE in archive.getnames():
                states.append(json.load(archive.extractfile(STATE)))
    latest, done = 0, {}
    for state in states:
        latest = max(latest, state["call"])
        for name, entry in state["stages"].items():
            if entry["status"] in DONE and name not in done:
                done[name] = (entry.get("call", state["call"]), entry["status"])
    return {"call": latest, "done": done}


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

    def __init__(self, out: Path, budget_s: float, quick: bool, fail: str | None = None, call: int = 1,
                 done: dict | None = None):
        self.out = Path(out)
        self.call = call  # this call's number: 1, or one more than the latest call resumed from
        self.done = dict(done or {})  # stages earlier calls did: {name: (call, status)}
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


def pack(out: Path, call: int = 1) -> Path:
    """This call's archive, ``OUT/gpu-run-N.tar.gz``: the results, the summary, the stages' state, the
    tracebacks and the log, packed anew (never another call's archive)."""
    archive = out / archive_name(call)
    partial = out / (archive.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in sorted(out.rglob("*")):
            if path.is_file() and not path.name.startswith("gpu-run-"):
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


def _finish(ctx: Context, stage: Stage, record: dict, environment: Callable[[], dict], state: dict) -> None:
    """Write the stage's file (where it was tried), its summary line and the stages' state, and pack
    the archive."""
    path = None
    if record["status"] not in ("not reached", "done earlier"):
        record["items"] = list(ctx.rows)
        record["counts"] = outcome_counts(record["items"])
        if record["status"] != "skipped" and "environment" not in record:
            try:
                record["environment"] = environment()
            except Exception as error:  # noqa: BLE001
                record["environment"] = {"error": f"{type(error).__name__}: {error}"}
        path = _stage_file(ctx, stage)
        write_json(path, {**record, "call": ctx.call, "results": list(ctx.kept)})
    status, call = ctx.done[stage.name][::-1] if record["status"] == "done earlier" else (record["status"], ctx.call)
    state["stages"][stage.name] = {"number": stage.number, "status": status, "call": call,
                                   **({"why": record["why"]} if record.get("why") and record["status"] != "done earlier" else {}),
                                   **({"file": str(path.relative_to(ctx.out))} if path else {})}
    write_json(ctx.out / STATE, state)
    line = summary_line(record, path.relative_to(ctx.out) if path else None)
    with open(ctx.out / "summary.txt", "a") as out:
        out.write(line + "\n")
    print(line, flush=True)
    pack(ctx.out, ctx.call)


def run_stages(stages: list[Stage], ctx: Context, environment: Callable[[], dict], note: str = "") -> list[dict]:
    """Run ``stages`` in order within ``ctx``'s budget, but those an earlier call did
    (``ctx.done``); return one record per stage, every stage named in the summary. ``note`` heads
    the summary (the fake GPU's: nothing runs there, times mean nothing)."""
    watchdog = open(ctx.out / "tracebacks.txt", "w")
    faulthandler.dump_traceback_later(max(1.0, ctx.left() - WATCHDOG_MARGIN_S), file=watchdog)
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(ctx.out / "summary.txt", "a") as line_out:
        line_out.write(f"GPU run, call {ctx.call}, {started_at}: budget {ctx.budget_s:.0f} s"
                       f"{' (quick: the rehearsal sizes)' if ctx.quick else ''}{'; ' + note if note else ''}\n")
    (ctx.out / "archive_name").write_text(archive_name(ctx.call) + "\n")  # for gpu_run.sh's last pack
    state = {"call": ctx.call, "started": started_at, "budget_s": ctx.budget_s, "stages": {}}
    records, stopped = [], None
    running: dict = {}  # the stage under way, for the cut

    def record_of(stage: Stage) -> dict:
        return {"stage": stage.number, "name": stage.name, "title": stage.title,
                "estimate_s": stage.quick_cost_s if ctx.quick else stage.cost_s}

    def cut() -> None:
        """The budget is about to run out: keep what the stage under way has, name the stages
        after it, and end."""
        if running:
            faulthandler.dump_traceback(file=watchdog, all_threads=True)
            watchdog.flush()
            stage = running["stage"]
            record = dict(running["record"], status="cut", error="the budget ran out during this stage",
                          seconds=round(time.monotonic() - running["started"], 2))
            _finish(ctx, stage, record, environment, state)
            for later in stages[stages.index(stage) + 1:]:
                _finish(ctx, later, _not_run(ctx, later, record_of(later),
                                             f"the budget ran out during stage {stage.number} ({stage.name})"),
                        environment, state)
            os._exit(CUT_EXIT_STATUS)

    timer = threading.Timer(max(0.5, ctx.left() - CUT_MARGIN_S), cut)
    timer.daemon = True
    timer.start()
    for stage in stages:
        record = record_of(stage)
        ctx.rows, ctx.kept = [], []
        started = time.monotonic()
        unavailable = None if stopped or stage.name in ctx.done else stage.unavailable()
        if stage.name in ctx.done or stopped or (unavailable is None and ctx.left() < record["estimate_s"]):
            record = _not_run(ctx, stage, record, stopped or
                              f"{ctx.left():.0f} s left, it needs about {record['estimate_s']:.0f} s")
        elif unavailable is not None:
            record.update(status="skipped", why=unavailable)
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
                record.update(status="stopped", error=str(error), traceback=traceback.format_exc())
                stopped = f"stage {stage.number} ({stage.name}) stopped the run: {error}"
            except Exception as error:  # noqa: BLE001 - a stage's failure is recorded, the run goes on
                record.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
            running.clear()
        record["seconds"] = round(time.monotonic() - started, 2)
        _finish(ctx, stage, record, environment, state)
        records.append(record)
    timer.cancel()
    (ctx.out / "current_stage").unlink(missing_ok=True)
    faulthandler.cancel_dump_traceback_later()
    watchdog.close()
    with open(ctx.out / "summary.txt", "a") as line_out:
        done = sum(r["status"] in ("ok", "partial") for r in records)
        earlier = sum(r["status"] == "done earlier" for r in records)
        left = [f"{r['stage']} {r['name']}" for r in records if r["status"] == "not reached"]
        line_out.write(f"done: {done} of {len(records)} stages ran in {ctx.elapsed():.0f} s of {ctx.budget_s:.0f} s"
                       + (f", {earlier} done in earlier calls" if earlier else "")
                       + (f"; not reached: {', '.join(left)} (resume: --resume with this call's archive)" if left else "")
                       + "\n")
    pack(ctx.out, ctx.call)
    return records


def name_the_rest(out: Path, stages: list[Stage], why: str) -> list[str]:
    """After a call was killed (it could not end itself at the budget): every stage its
    ``stages.json`` does not name, named "not reached" there and in ``summary.txt``. Returns the lines."""
    out = Path(out)
    path = out / STATE
    state = json.loads(path.read_text()) if path.exists() else {"call": 1, "stages": {}}
    lines = []
    for stage in stages:
        if stage.name not in state["stages"]:
            state["stages"][stage.name] = {"number": stage.number, "status": "not reached", "call": state["call"],
                                           "why": why}
            lines.append(f"stage {stage.number} {stage.name}: not reached ({why})")
    write_json(path, state)
    with open(out / "summary.txt", "a") as summary:
        summary.writelines(line + "\n" for line in lines)
    return lines


def _not_run(ctx: Context, stage: Stage, record: dict, why: str) -> dict:
    """A stage this call does not run: done by an earlier one, or not reached (``why``)."""
    if stage.name in ctx.done:
        call, status = ctx.done[stage.name]
        return dict(record, status="done earlier", call=call, why=f"done in call {call} ({status})")
    return dict(record, status="not reached", why=why)


def summary_line(record: dict, path) -> str:
    head = f"stage {record['stage']} {record['name']}: "
    if record["status"] in ("skipped", "not reached", "done earlier"):
        return head + (record["why"] if record["status"] == "done earlier" else f"{record['status']} ({record['why']})")
    counts = record["counts"]
    rows = f"{counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped"
    text = f"{record['status'].upper() if record['status'] in ('failed', 'cut', 'stopped') else record['status']} in {record['seconds']:.0f} s " \
           f"(estimate {record['estimate_s']:.0f} s): {rows} -> {path}"
    if record["status"] in ("failed", "cut", "stopped"):
        text += f"; {record['error'][:300]}"
    for key in ("headline",):
        if record.get(key):
            text += f"; {record[key]}"
    return head + text
