"""The fake-GPU tours of tests/test_fake_gpu.py, started in the background when the session starts.

Each tour is a fresh Python (``FASTLSTM_FAKE_GPU=<GPU> python -m fastlstm_lib.fakegpu.tour``),
one after another on one thread, so they use the second core while the rest of the suite (the
notebooks) runs on the first; conftest.py moves their tests to the end of the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

#: The GPUs CI proves every path on: Colab's T4, an A100, an L4, an H100, and the article's M40.
GPUS = ("T4", "A100", "L4", "H100", "M40")
TIMEOUT_S = 900
_results: dict = {}
_thread: threading.Thread | None = None
_running: list = []  # the tour in progress, so that the session's end can stop it
_stopped = threading.Event()


def _run_all() -> None:
    for gpu in GPUS:
        if _stopped.is_set():
            _results[gpu] = (None, "", "the test session ended first")
            continue
        env = {**os.environ, "FASTLSTM_FAKE_GPU": gpu, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        env.pop("FASTLSTM_SIMULATOR", None)
        process = subprocess.Popen([sys.executable, "-m", "fastlstm_lib.fakegpu.tour"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
        _running[:] = [process]
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
            _results[gpu] = (process.returncode, stdout, stderr)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            _results[gpu] = (None, stdout, f"timed out after {TIMEOUT_S} s\n{stderr}")


def stop() -> None:
    """At the session's end: no tour outlives pytest."""
    _stopped.set()
    for process in _running:
        if process.poll() is None:
            process.kill()


def start() -> None:
    global _thread
    if _thread is None and sys.platform.startswith("linux"):
        _thread = threading.Thread(target=_run_all, name="fake-gpu tours", daemon=True)
        _thread.start()


def result(gpu: str) -> dict:
    """The tour's JSON report for ``gpu`` (waits for it); AssertionError with its stderr if it failed."""
    start()
    _thread.join(timeout=TIMEOUT_S * len(GPUS))
    code, stdout, stderr = _results[gpu]
    assert code == 0, f"the {gpu} tour exited {code}:\n{stderr[-4000:]}"
    return json.loads(stdout)
