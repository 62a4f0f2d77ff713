"""The GPU run's frame: stages in order within one time budget, nothing lost when one fails or
hangs, and a later call that resumes where an earlier one stopped.

Each stage has an estimated cost (seconds on the GPU machine, see ``stages.py``). It runs only if
the time left covers that estimate, else it is "not reached" (the budget); a stage this machine
cannot run (no torch, no Nsight) is "skipped", with why. It runs in its own ``try``; its items
(``Context.item``) each in their own too, so one wrong step costs one row, not the stage.

**Every stage is named from the start.** ``OUT/stages.json`` holds every stage's state and its
summary line from the moment a call begins ("not reached" first, "under way" while it runs, then
how it ended), and ``OUT/summary.txt`` is rewritten from it at every change, so whatever ends the
process (the budget, a kill, a crash inside the driver) the summary names every stage with the
last state known. When a stage ends, its JSON file is written under ``OUT/results/`` (environment,
config, every row so far, and the traceback if it failed), and this call's archive
``OUT/gpu-run-N.tar.gz`` is packed again with everything so far.

**A stage has a share of the time** (``share_s``: a multiple of its estimate, plus some slack).
A watchdog thread stops a stage still running past its share: it writes every thread's traceback
to ``OUT/tracebacks.txt``, records the stage as it stands, "stuck" (in the call where the main
thread was), and ends the process (``STUCK_EXIT_STATUS``); the supervisor (``supervisor.py``)
then starts a fresh process that goes on with the next stage. At the budget's end the same
watchdog writes the stage under way as "cut" and ends the process (``CUT_EXIT_STATUS``). A stage
cannot be abandoned inside its process (a C call cannot be interrupted, and a GPU context
whose kernel never returns serves no later stage), so the process is; a call that holds the
interpreter so that even the watchdog cannot run is killed by the supervisor, which marks the
stage itself (``mark_ended``).

**Resuming** (``--resume DIR``): DIR holds what earlier calls brought back (their archives, or
their OUT folders unpacked). Their ``stages.json`` say which stages are done (``FINAL``: ran, well
or not, cannot run on this machine, or hung or crashed there); this call is call N (one more than
the latest there), runs only the others, and names the done ones in its summary ("done in call
1"). A process the supervisor starts again within the same call continues that call's own
``stages.json`` (``continuing``).
"""

from __future__ import annotations

import dataclasses
import datetime
import faulthandler
import json
import math
import os
import signal
import sys
import tarfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

#: Seconds before the budget's end at which the stage still running is written as it stands
#: ("cut"), packed, and the process ends with CUT_EXIT_STATUS.
CUT_MARGIN_S = 5
CUT_EXIT_STATUS = 124
#: The exit status of a process whose stage ran past its share (recorded "stuck"): the supervisor
#: starts a fresh process for the stages after it.
STUCK_EXIT_STATUS = 125
#: A stage's share of the time: SHARE_FACTOR times its estimate plus SHARE_SLACK_S (see
#: ``share_s``). The estimates are the GPU machine's; the rehearsal on a 2-core machine 2.6x slower
#: than this project's took up to 2.9x an estimate (gemm, 58 s against 20 s), so 3x plus a minute.
SHARE_FACTOR = 3.0
SHARE_SLACK_S = 60.0
#: What a stage's status may be: ran (ok, partial, failed), found that nothing after it can work
#: (stopped: smoke, when nothing compiles), cannot run here (skipped), ran past its share and was
#: stopped (stuck), ended the process under it (crashed), stopped by the budget while running
#: (cut), never started (not reached), running (under way), or run by an earlier call (done
#: earlier). A resumed call runs again only the stages that were stopped, cut or not reached:
#: FINAL are the others (a stage that hung or crashed once would again).
DONE = ("ok", "partial", "failed", "skipped")
FINAL = DONE + ("stuck", "crashed")
STATE = "stages.json"
#: Where every thread's traceback goes (a stuck stage, a fatal signal, the supervisor's SIGUSR1).
TRACEBACKS = "tracebacks.txt"


def archive_name(call: int) -> str:
    """This call's archive: ``gpu-run-1.tar.gz``, ``gpu-run-2.tar.gz``, ..."""
    return f"gpu-run-{call}.tar.gz"


def earlier_calls(folder: Path) -> dict:
    """What earlier calls did, from ``folder``: every ``stages.json`` in it, in a subfolder or in a
    ``gpu-run-*.tar.gz`` there. Returns {"call": the latest call's number (0: none), "done": {stage
    name: (call, status)} for the stages done (``FINAL``) in any of them}."""
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
            if entry["status"] in FINAL and name not in done:
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
                 done: dict | None = None, continuing: bool = False, share_factor: float = SHARE_FACTOR,
                 share_slack_s: float = SHARE_SLACK_S):
        self.out = Path(out)
        self.call = call  # this call's number: 1, or one more than the latest call resumed from
        self.done = dict(done or {})  # stages earlier calls did: {name: (call, status)}
        #: Whether this process continues its call's own OUT/stages.json (the supervisor started it
        #: again after a stage hung or crashed): the call's number and what is done come from there.
        self.continuing = continuing
        self.share_factor, self.share_slack_s = share_factor, share_slack_s
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

    def share_s(self, estimate_s: float) -> float:
        """Seconds a stage estimated at ``estimate_s`` may run before the watchdog stops it."""
        return self.share_factor * estimate_s + self.share_slack_s

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


# ---- the state of every stage, and the summary written from it -----------------------------------

#: Why a stage is "not reached" before anything else is known: the line it keeps if the call ends
#: (a kill, a crash) before it.
NOT_YET = "the call ended before it"


def load_state(out: Path) -> dict | None:
    path = Path(out) / STATE
    return json.loads(path.read_text()) if path.is_file() else None


def save_state(out: Path, state: dict) -> None:
    """``stages.json`` and ``summary.txt`` (rewritten whole from the state: its head, one line per
    stage in their order, its notes and its last line), each replaced in one step."""
    out = Path(out)
    write_json(out / STATE, state)
    lines = list(state.get("head", []))
    for name, _ in sorted(state["stages"].items(), key=lambda item: item[1]["number"]):
        lines.append(state["lines"][name])
    lines += state.get("notes", []) + state.get("tail", [])
    partial = out / "summary.txt.partial"
    partial.write_text(state.get("before", "") + "".join(line + "\n" for line in lines))
    os.replace(partial, out / "summary.txt")


def new_state(out: Path, stages, call: int, done: dict, head: list[str], budget_s: float) -> dict:
    """A call's state before its first stage: every stage named, done in an earlier call (``done``:
    {name: (call, status)}) or not reached (``NOT_YET``); ``stages``: objects with ``number`` and
    ``name``. A summary already in ``out`` (an earlier call into the same folder) is kept above."""
    out = Path(out)
    earlier = (out / "summary.txt").read_text() if (out / "summary.txt").is_file() else ""
    state = {"call": call, "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "started_epoch": time.time(), "budget_s": budget_s, "before": earlier, "head": head, "notes": [],
             "tail": [], "stages": {}, "lines": {}}
    for stage in stages:
        if stage.name in done:
            earlier_call, status = done[stage.name]
            state["stages"][stage.name] = {"number": stage.number, "status": status, "call": earlier_call}
            state["lines"][stage.name] = f"stage {stage.number} {stage.name}: done in call {earlier_call} ({status})"
        else:
            state["stages"][stage.name] = {"number": stage.number, "status": "not reached", "call": call, "why": NOT_YET}
            state["lines"][stage.name] = f"stage {stage.number} {stage.name}: not reached ({NOT_YET})"
    return state


def call_line(state: dict) -> str:
    """The summary's last line: how many stages ran, in how long, and which are left."""
    entries = state["stages"].values()
    done = sum(e["status"] in ("ok", "partial") and e["call"] == state["call"] for e in entries)
    earlier = sum(e["call"] != state["call"] for e in entries)
    left = [f"{e['number']} {name}" for name, e in sorted(state["stages"].items(), key=lambda item: item[1]["number"])
            if e["status"] in ("not reached", "cut", "stopped")]
    return (f"done: {done} of {len(entries)} stages ran in {time.time() - state['started_epoch']:.0f} s "
            f"of {state['budget_s']:.0f} s" + (f", {earlier} done in earlier calls" if earlier else "")
            + (f"; not reached: {', '.join(left)} (resume: --resume with this call's archive)" if left else ""))


def mark_ended(out: Path, status: str, why: str, stages=None, call: int = 1) -> str | None:
    """After this call's stages' process ended without saying so (killed, crashed, or stuck in a
    call that kept even its watchdog from running): the stage it had under way is written
    ``status`` ("stuck", "crashed", "cut") with ``why``, a note says how the process ended, and the
    archive is packed again. Where the process ended before writing any state, every stage of
    ``stages`` is named not reached. Returns the name of the stage that was under way, if any."""
    out = Path(out)
    state = load_state(out)
    if state is None:
        state = new_state(out, stages or [], call, {}, [f"GPU run, call {call}: the stages' process ended before "
                                                       "its first stage"], 0)
    running = state.pop("running", None)
    if running:
        seconds = time.time() - running["started_epoch"]
        entry = state["stages"][running["name"]]
        entry.update(status=status, call=state["call"], why=why)
        state["lines"][running["name"]] = (f"stage {entry['number']} {running['name']}: "
                                           f"{status.upper()} after {seconds:.0f} s (estimate {running['estimate_s']:.0f} s, "
                                           f"share {running['share_s']:.0f} s): {why}")
    state.setdefault("notes", []).append(f"the stages' process ended at {time.time() - state['started_epoch']:.0f} s"
                                         + (f" during stage {running['number']} ({running['name']})" if running else "")
                                         + f": {why}")
    save_state(out, state)
    pack(out, state["call"])
    return running["name"] if running else None


# ---- running the stages ------------------------------------------------------------------------

def _finish(ctx: Context, stage: Stage, record: dict, environment: Callable[[], dict], state: dict) -> None:
    """Write the stage's file (where it was tried), its state and summary line, and pack the archive."""
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
    if state.get("running", {}).get("name") == stage.name:
        del state["running"]
    line = summary_line(record, path.relative_to(ctx.out) if path else None)
    state["lines"][stage.name] = line
    save_state(ctx.out, state)
    print(line, flush=True)
    pack(ctx.out, ctx.call)


def _where_main_is() -> str:
    """The main thread's innermost Python frame, "file:line in function" (a C call is inside it)."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None:
        return "an unknown place"
    last = traceback.extract_stack(frame)[-1]
    return f"{Path(last.filename).name}:{last.lineno} in {last.name}"


def _open_state(ctx: Context, stages: list[Stage], note: str) -> dict:
    """This call's state: continued (``ctx.continuing``: its call number and what is done taken from
    it), or new, every stage named."""
    state = load_state(ctx.out) if ctx.continuing else None
    if state is not None:
        ctx.call = state["call"]
        ctx.done = {name: (entry["call"], entry["status"]) for name, entry in state["stages"].items()
                    if entry["status"] in FINAL}
        state["tail"] = []
        return state
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    head = [f"GPU run, call {ctx.call}, {started_at}: budget {ctx.budget_s:.0f} s"
            f"{' (quick: the rehearsal sizes)' if ctx.quick else ''}{'; ' + note if note else ''}"]
    return new_state(ctx.out, stages, ctx.call, ctx.done, head, ctx.budget_s)


def trace_faults(out: Path):
    """Where this process dies of a fatal signal (a crash inside the driver), and where the
    supervisor asks (SIGUSR1) before it kills a stage stuck holding the interpreter: every thread's
    traceback to ``OUT/tracebacks.txt``. (No timed dump from faulthandler's own thread,
    ``dump_traceback_later``: it reads the frames of a thread that is running, and may crash the
    process it watches: the likely end, exit 139, of a rehearsal whose dump was cut short.) For the
    stages' process only (``python -m gpurun --child``): it holds the file open for good."""
    tracebacks = open(Path(out) / TRACEBACKS, "a")
    faulthandler.enable(file=tracebacks, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=tracebacks, all_threads=True)
    return tracebacks


def run_stages(stages: list[Stage], ctx: Context, environment: Callable[[], dict], note: str = "") -> list[dict]:
    """Run ``stages`` in order within ``ctx``'s budget, but those an earlier call did
    (``ctx.done``), each within its share of the time (``Context.share_s``); return one record per
    stage, every stage named in the summary from the start. ``note`` heads the summary (the fake
    GPU's: nothing runs there, times mean nothing)."""
    tracebacks = open(ctx.out / TRACEBACKS, "a")
    state = _open_state(ctx, stages, note)
    if ctx.continuing:
        state.setdefault("notes", []).append(f"call {ctx.call} goes on in a fresh process at "
                                             f"{time.time() - state['started_epoch']:.0f} s")
    save_state(ctx.out, state)
    (ctx.out / "archive_name").write_text(archive_name(ctx.call) + "\n")  # for gpu_run.sh's last pack
    pack(ctx.out, ctx.call)
    records, stopped = [], None
    running: dict = {}  # the stage under way, for the watchdog
    lock, finished = threading.Lock(), threading.Event()

    def record_of(stage: Stage) -> dict:
        return {"stage": stage.number, "name": stage.name, "title": stage.title,
                "estimate_s": stage.quick_cost_s if ctx.quick else stage.cost_s}

    def stop_the_stage() -> None:
        """The stage under way ran past its share (stuck) or to the budget's end (cut): keep what it
        has, say where it was, and end the process."""
        stage, share = running["stage"], running["share_s"]
        where = _where_main_is()
        tracebacks.write(f"\n--- {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: "
                         f"stage {stage.number} ({stage.name}) {'stuck' if running['stuck'] else 'cut'} in {where}\n")
        tracebacks.flush()
        faulthandler.dump_traceback(file=tracebacks, all_threads=True)  # this thread holds the interpreter: safe
        tracebacks.flush()
        seconds = round(time.monotonic() - running["started"], 2)
        if running["stuck"]:
            record = dict(running["record"], status="stuck", seconds=seconds, share_s=share,
                          error=f"stuck in {where} past its share of {share:.0f} s: stopped, the next stage goes "
                                "on in a fresh process")
            _finish(ctx, stage, record, environment, state)
            state["notes"].append(f"the stages' process ended (exit {STUCK_EXIT_STATUS}): stage {stage.number} "
                                  f"({stage.name}) ran past its share of {share:.0f} s, stuck in {where}")
            save_state(ctx.out, state)
            pack(ctx.out, ctx.call)
            os._exit(STUCK_EXIT_STATUS)
        record = dict(running["record"], status="cut", seconds=seconds,
                      error=f"the budget ran out during this stage (in {where})")
        _finish(ctx, stage, record, environment, state)
        for later in stages[stages.index(stage) + 1:]:
            if state["stages"][later.name]["status"] not in FINAL:
                _finish(ctx, later, _not_run(ctx, later, record_of(later),
                                             f"the budget ran out during stage {stage.number} ({stage.name})"),
                        environment, state)
        state["tail"] = [call_line(state)]
        save_state(ctx.out, state)
        pack(ctx.out, ctx.call)
        os._exit(CUT_EXIT_STATUS)

    def watch() -> None:
        while not finished.wait(0.2):
            with lock:  # held to the end: the stage cannot finish while it is being written as stopped
                if running and time.monotonic() >= running["deadline"]:
                    stop_the_stage()

    watchdog = threading.Thread(target=watch, name="gpurun-watchdog", daemon=True)
    watchdog.start()
    for stage in stages:
        record = record_of(stage)
        ctx.rows, ctx.kept = [], []
        started = time.monotonic()
        entry = state["stages"][stage.name]
        if ctx.continuing and entry["status"] in FINAL:  # done by this call's earlier process, or an earlier call
            records.append(dict(record, status=entry["status"] if entry["call"] == ctx.call else "done earlier",
                                **({"why": entry["why"]} if entry.get("why") else {})))
            continue
        unavailable = None if stopped or stage.name in ctx.done else stage.unavailable()
        if stage.name in ctx.done or stopped or (unavailable is None and ctx.left() < record["estimate_s"]):
            record = _not_run(ctx, stage, record, stopped or
                              f"{ctx.left():.0f} s left, it needs about {record['estimate_s']:.0f} s")
        elif unavailable is not None:
            record.update(status="skipped", why=unavailable)
        else:
            share = ctx.share_s(record["estimate_s"])
            print(f"stage {stage.number} {stage.name}: {stage.title} (about {record['estimate_s']:.0f} s, "
                  f"share {share:.0f} s, {ctx.left():.0f} s left)", flush=True)
            deadline = min(started + share, ctx.deadline - CUT_MARGIN_S)
            state["stages"][stage.name] = {"number": stage.number, "status": "under way", "call": ctx.call}
            state["running"] = {"name": stage.name, "number": stage.number, "started_epoch": time.time(),
                                "deadline_epoch": time.time() + deadline - started, "estimate_s": record["estimate_s"],
                                "share_s": share}
            state["lines"][stage.name] = (f"stage {stage.number} {stage.name}: UNDER WAY since "
                                          f"{time.time() - state['started_epoch']:.0f} s into the call (estimate "
                                          f"{record['estimate_s']:.0f} s, share {share:.0f} s): if this line stays, "
                                          f"the call ended during this stage ({TRACEBACKS} says where)")
            save_state(ctx.out, state)
            pack(ctx.out, ctx.call)
            with lock:
                running.update(stage=stage, record=record, started=started, share_s=share, deadline=deadline,
                               stuck=started + share < ctx.deadline - CUT_MARGIN_S)
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
            with lock:  # waits here for good if the watchdog is ending the process
                running.clear()
        record["seconds"] = round(time.monotonic() - started, 2)
        _finish(ctx, stage, record, environment, state)
        records.append(record)
    finished.set()
    watchdog.join()
    state["tail"] = [call_line(state)]
    save_state(ctx.out, state)
    pack(ctx.out, ctx.call)
    return records


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
    loud = ("failed", "cut", "stopped", "stuck")
    shown = "CUT (stuck)" if record["status"] == "stuck" else record["status"].upper() \
        if record["status"] in loud else record["status"]
    text = f"{shown} in {record['seconds']:.0f} s (estimate {record['estimate_s']:.0f} s" \
           f"{', share %.0f s' % record['share_s'] if 'share_s' in record else ''}): {rows} -> {path}"
    if record["status"] in loud:
        text += f"; {record['error'][:300]}"
    for key in ("headline",):
        if record.get(key):
            text += f"; {record[key]}"
    return head + text
