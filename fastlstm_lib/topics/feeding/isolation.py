"""Child processes with a time limit: ``run_isolated`` (a function in ``ISOLATED``), ``run_script``
(a script's text), ``call_in_spawned_process`` (a *spawn* pool, as on macOS and Windows).
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
from multiprocessing.reduction import ForkingPickler
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...checks import check_seconds, check_str

#: What ``run_isolated`` may run: function name -> the module that defines it. The child imports
#: that module by name, so each must be importable from a fresh interpreter (no notebook code).
ISOLATED = {
    "compare_feeders": "fastlstm_lib.topics.feeding.feeders",
    "tf_thread_probe": "fastlstm_lib.topics.feeding.threads",
}

#: The folder that holds the fastlstm_lib package: the child finds this very copy of it.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


class IsolatedRunTimeout(TimeoutError):
    """The child process ran past its time limit and was killed, with everything it started."""


def run_isolated(function: str, kwargs: dict | None = None, *, timeout_s: float = 120.0, env: dict | None = None):
    """``<function>(**kwargs)`` (a name from ``ISOLATED``) in a fresh Python process in its own
    process group: its JSON result, ``IsolatedRunTimeout`` after ``timeout_s`` (the group killed),
    ``RuntimeError`` when it fails. ``env``: extra environment variables."""
    check_str("function", function, example=next(iter(ISOLATED)))
    if function not in ISOLATED:
        raise ValueError(f"function must be one of {tuple(ISOLATED)}, got {function!r}")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    if env is not None and not isinstance(env, dict):
        raise TypeError(f"env must be a dict of environment variables, got {type(env).__name__}")
    timeout_s = check_seconds("timeout_s", timeout_s)
    try:
        json.dumps(kwargs)
    except (TypeError, ValueError) as error:
        raise TypeError(f"kwargs must be JSON-able (the child reads them from a file), got {kwargs!r}: {error}") from None
    with tempfile.TemporaryDirectory(prefix="fastlstm-isolated-") as folder:
        request, answer = Path(folder, "request.json"), Path(folder, "answer.json")
        request.write_text(json.dumps({"function": function, "kwargs": kwargs}))
        code = f"from fastlstm_lib.topics.feeding.isolation import _isolated_main; _isolated_main({str(request)!r}, {str(answer)!r})"
        child_env = _child_env(env)
        child = subprocess.Popen([sys.executable, "-c", code], env=child_env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=(os.name == "posix"))
        try:
            _, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(child)
            child.communicate()
            raise IsolatedRunTimeout(f"{function} did not finish within {timeout_s:g} s; its processes were killed") from None
        if child.returncode != 0 or not answer.exists():
            tail = stderr.decode(errors="replace").strip().splitlines()[-15:]
            raise RuntimeError(f"{function} failed in the child process (exit {child.returncode}):\n" + "\n".join(tail))
        return json.loads(answer.read_text())


#: Colour requests a child must not inherit: ipykernel sets FORCE_COLOR, and Python 3.13 then colours
#: its tracebacks with escape codes, so the text a notebook prints would differ by Python version.
_COLOUR_VARIABLES = ("FORCE_COLOR", "PYTHON_COLORS", "CLICOLOR_FORCE")


def _child_env(extra: dict | None = None) -> dict:
    """The caller's environment plus ``extra``, colour off, this copy of fastlstm_lib first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in _COLOUR_VARIABLES}
    env.update(extra or {})
    env.update(NO_COLOR="1", PYTHON_COLORS="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
    return env


def kill_group(child: subprocess.Popen) -> None:
    """Kill ``child`` and every process it started (its process group, on POSIX)."""
    if os.name == "posix":
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the child and the pool workers it forked
        except ProcessLookupError:
            pass
    else:  # pragma: no cover - no process groups: the child only
        child.kill()


def _isolated_main(request_path: str, answer_path: str) -> None:
    """The child's side of ``run_isolated``: import the named function, run it, write JSON."""
    request = json.loads(Path(request_path).read_text())
    if request["function"] not in ISOLATED:
        raise SystemExit(f"not allowed: {request['function']!r}")
    module = importlib.import_module(ISOLATED[request["function"]])
    result = getattr(module, request["function"])(**request["kwargs"])
    Path(answer_path).write_text(json.dumps(result))


def run_script(source: str, *, timeout_s: float = 60.0) -> dict:
    """Run ``source`` as a script in a fresh Python, killed after ``timeout_s``: {returncode, stdout, stderr, timed_out}."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the script's text (str), got {type(source).__name__}")
    timeout_s = check_seconds("timeout_s", timeout_s)
    with tempfile.TemporaryDirectory(prefix="fastlstm-script-") as folder:
        script = Path(folder, "script.py")
        script.write_text(source)
        child = subprocess.Popen([sys.executable, str(script)], cwd=folder, env=_child_env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=(os.name == "posix"))
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
            return {"returncode": child.returncode, "stdout": stdout, "stderr": stderr, "timed_out": False}
        except subprocess.TimeoutExpired:
            kill_group(child)
            stdout, stderr = child.communicate()
            return {"returncode": child.returncode, "stdout": stdout, "stderr": stderr, "timed_out": True}


def _quiet_worker() -> None:
    # A worker that dies prints its traceback to stderr; in a notebook that would land in the
    # cell's output. The outcome is reported by call_in_spawned_process instead.
    sys.stderr = open(os.devnull, "w")


def call_in_spawned_process(function, *args, timeout_s: float = 10.0) -> dict:
    """``function(*args)`` in a one-process *spawn* pool (both pickled: importable by name), waiting at
    most ``timeout_s``: {"outcome": "returned" | "raised" | "timed out", "detail": str}."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    timeout_s = check_seconds("timeout_s", timeout_s)
    try:  # what the pool would send; its error names the cause the same way on every Python
        ForkingPickler.dumps((function, args))
    except Exception as error:  # noqa: BLE001 - PicklingError, or AttributeError on Python 3.13 and newer
        return {"outcome": "raised", "detail": f"cannot be pickled for the spawned process: "
                                               f"{type(error).__name__}: {error}"}
    pool = multiprocessing.get_context("spawn").Pool(1, initializer=_quiet_worker)
    try:
        pending = pool.apply_async(function, args)
        try:
            return {"outcome": "returned", "detail": repr(pending.get(timeout=timeout_s))}
        except multiprocessing.TimeoutError:
            return {"outcome": "timed out", "detail": f"no answer within {timeout_s:g} s"}
        except Exception as error:  # noqa: BLE001 - reporting what the user's code raised
            return {"outcome": "raised", "detail": f"{type(error).__name__}: {error}"}
    finally:
        pool.terminate()  # also ends a worker stuck on a task it could not unpickle
        pool.join()
