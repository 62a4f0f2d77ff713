"""The fake-GPU tours of tests/test_fake_gpu.py, started in the background when the session starts.

Each tour is a fresh Python (``FASTLSTM_FAKE_GPU=<GPU> python -m fakegpu.tour``, tests/ on PYTHONPATH),
``TOURS_AT_ONCE`` at a time from a background thread, while the rest of the suite runs; conftest.py
moves their tests to the end of the session.

Under pytest-xdist (``make test-tools`` runs two workers) every worker collects the same tests, but only
the first worker (``gw0``) runs the tours; each tour's outcome goes to a file in a folder named
after the run (``PYTEST_XDIST_TESTRUNUID``, the same in every worker), which any worker's
``result`` reads when it gets there. The worker that runs them waits for the last one before it
ends, so no tour outlives the session and none is cut short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: The GPUs CI proves every path on: Colab's T4, an A100, an L4, an H100, and the article's M40.
GPUS = ("T4", "A100", "L4", "H100", "M40")
TIMEOUT_S = 900
#: Tours run side by side: each is one process, mostly one core's compiling (CI has 2 cores).
TOURS_AT_ONCE = 2
_results: dict = {}
_thread: threading.Thread | None = None
_running: list = []  # the tours started, so that the session's end can stop any still running
_stopped = threading.Event()


def _worker() -> str | None:
    """This process's pytest-xdist worker id ("gw0", ...), or None without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def _shared_folder() -> Path:
    """Where the tours' outcomes go under xdist: one folder per test run, shared by its workers."""
    return Path(tempfile.gettempdir()) / f"fastlstm-fake-gpu-{os.environ['PYTEST_XDIST_TESTRUNUID']}"


def _publish(gpu: str, outcome: tuple) -> None:
    _results[gpu] = outcome
    if _worker() is not None:
        folder = _shared_folder()
        folder.mkdir(exist_ok=True)
        code, stdout, stderr = outcome
        scratch = folder / f".{gpu}.json"
        scratch.write_text(json.dumps({"code": code, "stdout": stdout, "stderr": stderr}))
        os.replace(scratch, folder / f"{gpu}.json")  # whole or absent: a reader never sees half of it


def _run_one(gpu: str) -> None:
    if _stopped.is_set():
        _publish(gpu, (None, "", "the test session ended first"))
        return
    import fakegpu

    env = fakegpu.child_environment(gpu, {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "3"})
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID"):
        env.pop(name, None)
    process = subprocess.Popen([sys.executable, "-m", "fakegpu.tour"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    _running.append(process)
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        _publish(gpu, (process.returncode, stdout, stderr))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        _publish(gpu, (None, stdout, f"timed out after {TIMEOUT_S} s\n{stderr}"))


def _run_all() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=TOURS_AT_ONCE) as pool:
        list(pool.map(_run_one, GPUS))


def stop() -> None:
    """At the session's end: no tour outlives pytest. Under xdist the worker running the tours
    waits for them first, since other workers may still need their outcomes."""
    if _thread is not None and _worker() is not None:
        _thread.join(timeout=TIMEOUT_S * len(GPUS))
    _stopped.set()
    for process in _running:
        if process.poll() is None:
            process.kill()


def start() -> None:
    """Start the tours in the background, once per test run: in this process, or under xdist in
    the first worker only."""
    global _thread
    if _thread is not None or not sys.platform.startswith("linux"):
        return
    if _worker() not in (None, "gw0"):
        return
    _thread = threading.Thread(target=_run_all, name="fake-gpu tours", daemon=True)
    _thread.start()


def _wait_for_file(gpu: str) -> tuple:
    path = _shared_folder() / f"{gpu}.json"
    deadline = time.monotonic() + TIMEOUT_S * len(GPUS)
    while not path.exists():
        if time.monotonic() > deadline:
            return None, "", f"no outcome of the {gpu} tour after {TIMEOUT_S * len(GPUS)} s (worker gw0 runs them)"
        time.sleep(1.0)
    record = json.loads(path.read_text())
    return record["code"], record["stdout"], record["stderr"]


def result(gpu: str) -> dict:
    """The tour's JSON report for ``gpu`` (waits for it); AssertionError with its stderr if it failed."""
    start()
    if _thread is not None:
        _thread.join(timeout=TIMEOUT_S * len(GPUS))
        code, stdout, stderr = _results[gpu]
    else:  # another xdist worker runs the tours
        code, stdout, stderr = _wait_for_file(gpu)
    assert code == 0, f"the {gpu} tour exited {code}:\n{stderr[-4000:]}"
    return json.loads(stdout)
