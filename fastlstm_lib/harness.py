"""The one harness every step is measured with.

For each step: the same seeded weights and input; run once and check against the float64
reference (refuse to go on if wrong); warm up; time many repeats; poison the output, run once
more and check again (a step that goes wrong only after repeated runs is refused too). On a GPU
the time of each repeat comes from a pair of CUDA events around the launches; on the simulator
from a wall clock, and the result says those times mean nothing.
"""

from __future__ import annotations

import datetime
import functools
import json
import time
from pathlib import Path

import numpy as np
from numba import cuda

from . import _device
from .config import LSTMConfig, flops
from .params import init_params, random_input
from .reference import reference_forward, relative_error
from . import steps as steps_registry

#: fp32 relative tolerance (max |y - ref| / max |ref|) every step must meet.
RTOL = 1e-5


class WrongResultError(RuntimeError):
    """A step's output disagrees with the float64 reference: its time is not reported."""


@functools.lru_cache(maxsize=4)
def problem(cfg: LSTMConfig, seed: int = 0):
    """(x, params, reference output) for ``cfg``: the same inputs for every step."""
    params = init_params(cfg, seed=seed)
    x = random_input(cfg, seed=seed + 1)
    return x, params, reference_forward(x, params)


def check(runner, ref: np.ndarray, step_name: str, when: str, rtol: float) -> float:
    """Poison, run, compare. Returns the relative error; raises WrongResultError if too large."""
    runner.poison()
    runner.launch()
    error = relative_error(runner.result(), ref)
    if not error <= rtol:
        raise WrongResultError(
            f"step {step_name!r} is wrong {when} timing: relative error {error:.3g} > {rtol:g}; "
            "its time is not reported"
        )
    return error


def time_launches(launch, warmup: int, repeats: int, synchronize=None) -> list[float]:
    """Milliseconds per call of ``launch``, after ``warmup`` untimed calls.

    CUDA events on a GPU. A wall clock on the simulator (no events there), and for work that
    runs outside Numba's streams (Keras), where ``synchronize()`` waits for it to finish.
    """
    wall_clock = _device.SIMULATOR or synchronize is not None
    synchronize = synchronize or cuda.synchronize
    for _ in range(warmup):
        launch()
    synchronize()
    times = []
    if wall_clock:
        for _ in range(repeats):
            start = time.perf_counter()
            launch()
            synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    for _ in range(repeats):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return times


#: (warmup, repeats) on real hardware: a GPU, or the CPU that Keras runs on beside the simulator.
REAL_REPEATS = (3, 20)


def default_repeats() -> tuple[int, int]:
    """(warmup, repeats): many on a GPU; on the simulator, where a run takes seconds and times
    mean nothing anyway, just enough to exercise the code path."""
    return (0, 2) if _device.SIMULATOR else REAL_REPEATS


def bench(step, cfg: LSTMConfig | None = None, *, warmup: int | None = None, repeats: int | None = None,
          seed: int = 0, rtol: float = RTOL, **options) -> dict:
    """Check and time one step on the current device. Returns a JSON-able dict.

    ``step`` is a name from ``fl.steps.names()`` or a step object; ``options`` go to the step.
    Raises WrongResultError rather than report the time of a wrong step.
    """
    step = steps_registry.get(step) if isinstance(step, str) else step
    cfg = LSTMConfig.default() if cfg is None else cfg
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig, got {type(cfg).__name__}")
    wall_clock = step.clock == "wall"  # Keras: its own streams, its own device
    # Keras runs on real hardware even beside the simulator: it gets a real warm-up and repeats.
    default_warmup, default_count = REAL_REPEATS if wall_clock else default_repeats()
    warmup = default_warmup if warmup is None else warmup
    repeats = default_count if repeats is None else repeats
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")

    x, params, ref = problem(cfg, seed)
    runner = step.runner(x, params, **options)
    error_before = check(runner, ref, step.name, "before", rtol)
    times = np.array(time_launches(runner.launch, warmup, repeats, runner.synchronize if wall_clock else None))
    error_after = check(runner, ref, step.name, "after", rtol)
    meaningful = wall_clock or not _device.SIMULATOR
    if wall_clock:
        timing = "wall clock around a synchronised call"
    else:
        timing = "CUDA events" if meaningful else "wall clock on the CUDA simulator: meaningless"

    median_ms = float(np.median(times))
    flop = flops(cfg)
    return {
        "step": step.name,
        "title": step.title,
        "config": cfg.as_dict(),
        "device": step.device(),
        "timing": timing,
        "times_meaningful": meaningful,
        "warmup": warmup,
        "repeats": repeats,
        "time_ms": {
            "median": median_ms,
            "min": float(times.min()),
            "max": float(times.max()),
            "q25": float(np.percentile(times, 25)),
            "q75": float(np.percentile(times, 75)),
        },
        "flop": flop,
        "gflops": flop / (median_ms * 1e-3) / 1e9,
        "relative_error": {"before": error_before, "after": error_after, "rtol": rtol},
        "options": options,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


class _NoProgressBar(list):
    def set_postfix_str(self, text):  # tqdm's method, doing nothing
        pass


def progress_bar(items, desc: str, unit: str, *, enabled: bool = True):
    """tqdm over ``items`` when enabled and installed (a lean GPU machine may not have it).

    A notebook widget bar only when ipywidgets is there: without it ``tqdm.auto`` prints a
    warning (with its install path) and falls back to the text bar, which we then use directly.
    """
    if not enabled:
        return _NoProgressBar(items)
    try:
        import ipywidgets  # noqa: F401

        from tqdm.auto import tqdm
    except ImportError:
        try:
            from tqdm import tqdm
        except ImportError:
            return _NoProgressBar(items)
    return tqdm(items, desc=desc, unit=unit)


def checked_names(names) -> list[str]:
    """``names`` (all ladder steps if None), every one known: a typo fails before minutes of work."""
    names = steps_registry.names() if names is None else list(names)
    for name in names:
        steps_registry.get(name)
    return names


def bench_steps(names=None, cfg: LSTMConfig | None = None, *, progress: bool = True, **kwargs) -> list[dict]:
    """``bench`` for several steps (all by default), in ladder order, with a progress bar."""
    names = checked_names(names)
    iterator = progress_bar(names, "benchmark", "step", enabled=progress)
    results = []
    for name in iterator:
        iterator.set_postfix_str(name)
        results.append(bench(name, cfg, **kwargs))
    return results


def bench_batch_sweep(names=None, batches=(1, 4, 16, 64), base: LSTMConfig | None = None, *,
                      progress: bool = True, **kwargs) -> list[dict]:
    """``bench`` for each step at each batch size (the article's config otherwise, or ``base``).

    A step that does not fit a batch size (the persistent kernel's limits) is recorded as
    ``{"step", "config", "skipped": reason}`` instead of stopping the sweep; a wrong result still
    raises WrongResultError.
    """
    import dataclasses

    base = LSTMConfig.article() if base is None else base
    names = checked_names(names)
    jobs = progress_bar([(batch, name) for batch in batches for name in names], "batch sweep", "run",
                        enabled=progress)
    results = []
    for batch, name in jobs:
        cfg = dataclasses.replace(base, batch=batch)
        try:
            results.append(bench(name, cfg, **kwargs))
        except ValueError as error:  # a limit said plainly, e.g. the persistent grid does not fit
            results.append({"step": name, "config": cfg.as_dict(), "skipped": str(error)})
    return results


def format_table(results: list[dict]) -> str:
    """A plain-text table: one line per step, speedup relative to the first."""
    if not results:
        return "(no results)"
    base = results[0]["time_ms"]["median"]
    lines = [
        f"{'step':<18} {'median ms':>10} {'min-max ms':>19} {'GFLOP/s':>9} {'speedup':>8} {'rel err':>9}",
    ]
    for r in results:
        t = r["time_ms"]
        lines.append(
            f"{r['step']:<18} {t['median']:>10.3f} {t['min']:>9.3f}-{t['max']:<9.3f} "
            f"{r['gflops']:>9.1f} {base / t['median']:>7.2f}x {r['relative_error']['after']:>9.1e}"
        )
    device = results[0]["device"]
    lines.append(f"device: {device['name']}; config: {results[0]['config']}")
    if not results[0]["times_meaningful"]:
        lines.append("simulator: these times measure Python threads on the CPU, not a GPU. They mean nothing.")
    return "\n".join(lines)


def save_results(results: list[dict], path) -> Path:
    """Write results as JSON (device, config and versions are inside every entry)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"results": results}, indent=2) + "\n")
    return path


def load_results(path) -> list[dict]:
    return json.loads(Path(path).read_text())["results"]
