"""The process above the stages' process: it starts it, watches it, and starts it again after a
stage hung or crashed, so that one stage stuck in a call costs its share of the time, not the call.

Why a process, not a thread: a stage cannot be abandoned inside its process. A call into C
(the driver waiting on a kernel whose grid barrier never completes) cannot be interrupted from
Python; one that holds the interpreter keeps every other thread from running, the stages' own
watchdog (``runner.run_stages``) included; and a CUDA context whose kernel never returns serves
no later stage. So the stages run in a child process (``python -m gpurun --child``), and:

- a stage past its share is written "stuck" by the child's own watchdog, which ends the child
  (``STUCK_EXIT_STATUS``); if the child does not end within ``GRACE_S`` of that share (its call
  holds the interpreter), the supervisor asks it for every thread's traceback (SIGUSR1,
  faulthandler), kills it, and writes the stage "stuck" itself (``runner.mark_ended``);
- a child that dies (a crash inside the driver: exit 139; a kill) is written "crashed" at the
  stage it had under way;
- either way a fresh child continues the same call (``--continue``: its ``stages.json``) with the
  stages after, while ``RESTART_MIN_S`` or more are left;
- at the budget's end the child writes the stage under way "cut" and ends (``CUT_EXIT_STATUS``);
  one still running ``GRACE_S`` later is killed and its stage written "cut".

Standard library only: it runs before anything the bundle brings is importable.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from .runner import CUT_EXIT_STATUS, FINAL, STUCK_EXIT_STATUS, call_line, load_state, mark_ended, pack, save_state

#: Seconds past a stage's share (or the budget) after which a child that has not ended is killed.
GRACE_S = 10
#: Seconds between asking a stuck child for its tracebacks (SIGUSR1) and killing it.
TRACEBACK_WAIT_S = 2
#: A fresh child is started only with at least this many seconds left (importing and compiling again).
RESTART_MIN_S = 20
#: How often the supervisor looks at the child and its stages.json.
POLL_S = 0.5


def describe(status: int) -> str:
    """A child's exit status in words: "exit 3", "signal 11 (SIGSEGV)"."""
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "?"
        return f"signal {-status} ({name})"
    return f"exit {status}"


def _kill(child: subprocess.Popen) -> None:
    """Every thread's traceback first (the child's faulthandler writes them on SIGUSR1), then SIGKILL."""
    try:
        child.send_signal(signal.SIGUSR1)
        child.wait(TRACEBACK_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    if child.poll() is None:
        child.kill()
        child.wait()


def _watch(child: subprocess.Popen, out: Path, deadline: float) -> tuple[int, str | None]:
    """Wait for ``child``; kill it GRACE_S past its stage's share or past ``deadline`` (monotonic).
    Returns (its exit status, None) or (its status, "stuck" or "cut") when the supervisor killed it."""
    while True:
        try:
            return child.wait(POLL_S), None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > deadline + GRACE_S:
            _kill(child)
            return child.returncode, "cut"
        try:
            running = (load_state(out) or {}).get("running")
        except (OSError, ValueError):  # being replaced this instant: look again
            continue
        if running and time.time() > running["deadline_epoch"] + GRACE_S:
            _kill(child)
            return child.returncode, "stuck"


def supervise(out: Path, budget_s: float, command: Callable[[float, bool], list[str]], stages,
              call: int = 1) -> int:
    """Run the stages' process ``command(seconds_left, continuing)`` (an argv) within ``budget_s``,
    again after a stage hung or crashed, until every stage of ``stages`` (objects with ``number``
    and ``name``) has ended or the time is out; ``call``: this call's number, for a state written
    here when the first child wrote none. Returns the last child's exit status (0 every stage
    ran; 1 one failed, hung or crashed; CUT_EXIT_STATUS the budget ran out), after making sure
    the summary names every stage and the archive holds it."""
    out = Path(out)
    deadline = time.monotonic() + budget_s
    continuing, worst = False, 0
    while True:
        left = deadline - time.monotonic()
        child = subprocess.Popen(command(left, continuing))
        status, killed = _watch(child, out, deadline)
        if status in (0, 1, CUT_EXIT_STATUS) and killed is None:
            return max(status, worst) if status != CUT_EXIT_STATUS else status
        during = None
        if killed == "cut":
            during = mark_ended(out, "cut", f"the budget ran out, and the stages' process did not end itself "
                                            f"within {GRACE_S} s: killed ({describe(status)})", stages, call)
        elif killed == "stuck":
            during = mark_ended(out, "stuck", f"still running {GRACE_S} s past its share, in a call that kept its own "
                                              "watchdog from running (tracebacks.txt): the supervisor killed its process",
                                stages, call)
        elif status != STUCK_EXIT_STATUS:  # the child wrote nothing: it died
            during = mark_ended(out, "crashed", f"the stages' process died ({describe(status)}): tracebacks.txt and "
                                                "log.txt say where", stages, call)
        worst = 1
        state = load_state(out)
        left = deadline - time.monotonic()
        remaining = [name for name, entry in state["stages"].items() if entry["status"] not in FINAL]
        outside = status != STUCK_EXIT_STATUS and during is None  # it died before or between stages: it would again
        if killed == "cut" or not remaining or left < RESTART_MIN_S or outside:
            if remaining and killed != "cut":
                state["notes"].append("it died outside any stage: not started again" if outside else
                                      f"{left:.0f} s left: too few to start the stages' process again "
                                      f"(at least {RESTART_MIN_S} s)")
            state["tail"] = [call_line(state)]
            save_state(out, state)
            pack(out, state["call"])
            if outside:
                return status if status > 0 else 1
            return CUT_EXIT_STATUS if remaining else worst
        print(f"gpurun: the stages' process ended ({describe(status)}); {len(remaining)} stages left, "
              f"{left:.0f} s: starting it again", flush=True)
        continuing = True


def child_command(argv: list[str]) -> Callable[[float, bool], list[str]]:
    """The stages' process for ``python -m gpurun``'s own arguments ``argv`` (without ``--budget``):
    this Python, faulthandler on, ``--child``, the seconds left and when they end (``--until``: the child's
    imports count), and ``--continue`` when it continues."""
    import sys

    def command(left: float, continuing: bool) -> list[str]:
        return [sys.executable, "-X", "faulthandler", "-m", "gpurun", *argv, "--child", "--budget", f"{left:.1f}",
                "--until", f"{time.time() + left:.1f}", *(["--continue"] if continuing else [])]

    return command

