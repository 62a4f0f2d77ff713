"""The one harness every step is measured with: check, time, check again, report.

For each step: the same seeded weights and input; run once and check against the step's float64
reference (``step.reference``: the forward pass; forward and backward for a backward step) and
refuse to go on if wrong; warm up; time many repeats (the step's runner knows its clock: CUDA
events for our kernels, a wall clock around a synchronised call for Keras); poison the output,
run once more and check again (a step that goes wrong only after repeated runs is refused too).
The clocks live in ``timing``, result files in ``results``.
"""

from __future__ import annotations

import datetime
import functools
from typing import NamedTuple

from .checks import check_bool, check_int, check_number
from .config import LSTMConfig
from .copies import fresh, frozen
from .runtime.graphs import checked_graph
from .params import init_params, random_input
from .progress import progress_bar
from .numerics import RTOL
from .reference import reference_forward, where_nonfinite
from .steps.simulator_budget import refuse_slow_simulation, simulated_passes
from .runtime.device import DEVICE
from . import steps as steps_registry
from .timing import summarize


class WrongResultError(RuntimeError):
    """A step's output disagrees with the float64 reference: its time is not reported."""


@functools.lru_cache(maxsize=4)
def _problem(cfg: LSTMConfig, seed: int):
    """The cached problem, read-only: nothing a step does can change what the next is checked on."""
    params = init_params(cfg, seed=seed)
    x = random_input(cfg, seed=seed + 1)
    return frozen((x, params, reference_forward(x, params)))


def problem(cfg: LSTMConfig, seed: int = 0):
    """(x, params, reference output) for ``cfg``: the same inputs for every step, each call's
    own copies (change them freely)."""
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig, got {type(cfg).__name__}")
    return fresh(_problem(cfg, check_int("seed", seed, minimum=0)))


#: Read-only references already computed: (reference, extra inputs' maker, cfg, seed) -> result.
_EXPECTED: dict = {}


def expected(step, cfg: LSTMConfig, seed: int, extra: dict):
    """``step.reference(x, params, **extra)`` on ``problem(cfg, seed)``, where ``extra`` is
    ``step.extra_inputs(cfg, seed)`` (deterministic in cfg and seed, so it is keyed by them): what
    the step is checked against. Read-only and cached (the last few): the harness's own."""
    key = (step.reference, type(step).extra_inputs, cfg, seed)
    if key not in _EXPECTED:
        x, params, ref = _problem(cfg, seed)
        if len(_EXPECTED) >= 4:
            _EXPECTED.pop(next(iter(_EXPECTED)))
        _EXPECTED[key] = ref if step.reference is reference_forward and not extra else frozen(
            step.reference(x, params, **fresh(extra)))
    return _EXPECTED[key]


def check(runner, ref, step_name: str, when: str, rtol: float) -> float | None:
    """Poison, run, compare. Returns the relative error; raises WrongResultError if too large, or
    if the output holds NaN or infinity (saying where it first appears).

    On a stand-in driver (``DEVICE.computes`` false) kernels never run, so there is nothing to compare: the pass is
    issued and None returned (the simulator checks the values of the same code).
    """
    runner.poison()
    runner.launch()
    result = runner.result()  # on a stand-in driver too: everything a pass does on the host, down to the copy back
    if not DEVICE.computes and not runner.times_meaningful:  # Keras' runners do run, on the CPU
        return None
    wrong = where_nonfinite(result)
    error = None if wrong else runner.error(ref)
    if error is not None and not error <= rtol:
        wrong = f"relative error {error:.3g} > {rtol:g}"
    if wrong:
        raise WrongResultError(f"step {step_name!r} is wrong {when} timing: {wrong}; its time is not reported")
    return error


def resolve(step, cfg: LSTMConfig | None, seed: int, rtol: float | None, options: dict | None = None):
    """(step object, cfg, seed, rtol) checked: a name or a step, an LSTMConfig (None: the default
    for this device), a seed >= 0, a tolerance > 0 (None: the step's own under its ``options``,
    ``step.tolerance``: the "tf32" GEMM policy's is wider)."""
    from .steps.base import LSTMStep

    if isinstance(step, str):
        step = steps_registry.get(step)
    elif not isinstance(step, LSTMStep):
        raise TypeError(f"step must be a step name (one of {', '.join(steps_registry.names())}) or a step object, "
                        f"got {type(step).__name__} {step!r}")
    cfg = LSTMConfig.default() if cfg is None else cfg
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig, got {type(cfg).__name__}")
    seed = check_int("seed", seed, minimum=0)
    if rtol is not None:
        rtol = check_number("rtol", rtol)
        if not 0 < rtol < 1:
            raise ValueError(f"rtol must be a relative error between 0 and 1 (the steps use {RTOL:g}), got {rtol:g}")
    return step, cfg, seed, step.tolerance(**(options or {})) if rtol is None else rtol


def counts(warmup, repeats) -> tuple[int | None, int | None]:
    """``warmup`` (an int >= 0) and ``repeats`` (an int >= 1), each None for the step's default."""
    return (None if warmup is None else check_int("warmup", warmup, minimum=0),
            None if repeats is None else check_int("repeats", repeats, minimum=1))


class TimedRun(NamedTuple):
    """A step checked, timed and checked again on the shared problem."""

    step: object
    cfg: LSTMConfig
    runner: object
    warmup: int
    repeats: int
    times: object
    relative_error: dict  # before, after, rtol


def timed_run(step, cfg: LSTMConfig | None, seed: int, rtol: float | None, options: dict, warmup, repeats,
              clock: str = "time") -> TimedRun:
    """Resolve the step and config, set the step up on its own copy of ``problem(cfg, seed)``, check
    it against its reference (``step.reference``, within ``step.tolerance(**options)`` unless ``rtol``
    is given), time it with its runner's ``clock`` (the runner's own counts where ``warmup`` or
    ``repeats`` is None) and check it again. On the simulator a size that would take more than a few
    minutes is refused first."""
    warmup, repeats = counts(warmup, repeats)
    step, cfg, seed, rtol = resolve(step, cfg, seed, rtol, options)
    checked_graph(options.get("graph", False))  # before any work: graphs need a GPU
    refuse_slow_simulation(step, cfg, simulated_passes(warmup, repeats))
    extra = step.extra_inputs(cfg, seed)  # made once: the reference's and the runner's (its own copy)
    # The reference only where a pass is compared with it: not on a stand-in driver, where kernels never run
    # (at the article's size the float64 backward takes seconds of CPU there for nothing; see check).
    ref = expected(step, cfg, seed, extra) if DEVICE.computes else None
    x, params, _ = problem(cfg, seed)
    runner = step.runner(x, params, **extra, **options)
    if ref is None and runner.times_meaningful:  # Keras beside a stand-in driver: it runs, on the CPU, and is compared
        ref = expected(step, cfg, seed, extra)
    timer = getattr(runner, clock, None)
    if timer is None:  # said before the step runs
        raise TypeError(f"step {step.name!r} does not run on Numba's streams: only a wall clock can time it")
    before = check(runner, ref, step.name, "before", rtol)
    default_warmup, default_repeats = runner.default_repeats()  # (3, 20) on a GPU
    warmup = default_warmup if warmup is None else warmup
    repeats = default_repeats if repeats is None else repeats
    times = timer(warmup, repeats)
    after = check(runner, ref, step.name, "after", rtol)
    return TimedRun(step, cfg, runner, warmup, repeats, times, {"before": before, "after": after, "rtol": rtol})


def bench(step, cfg: LSTMConfig | None = None, *, warmup: int | None = None, repeats: int | None = None,
          seed: int = 0, rtol: float | None = None, **options) -> dict:
    """Check and time one step on the current device. Returns a JSON-able dict.

    ``step`` is a name from ``fl.steps.names()`` (or a Keras step) or a step object; ``options``
    go to the step. ``rtol``: the step's own tolerance (``step.tolerance(**options)``: 1e-5, or
    the "tf32" GEMM policy's 2e-3) unless given. Raises
    WrongResultError rather than report the time of a wrong step.
    """
    run = timed_run(step, cfg, seed, rtol, options, warmup, repeats)
    time_ms = summarize(run.times)
    flop = run.step.flop(run.cfg, **options)
    return {
        "step": run.step.name,
        "title": run.step.title,
        "config": run.cfg.as_dict(),
        "device": run.step.device(),
        "timing": run.runner.timing,
        "times_meaningful": run.runner.times_meaningful,
        "warmup": run.warmup,
        "repeats": run.repeats,
        "time_ms": time_ms,
        "flop": flop,
        "gflops": flop / (time_ms["median"] * 1e-3) / 1e9,
        "relative_error": run.relative_error,
        "values_checked": run.relative_error["before"] is not None,
        "options": options,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def host_and_device_times(step, cfg: LSTMConfig | None = None, *, warmup: int | None = None,
                          repeats: int | None = None, seed: int = 0, **options) -> dict:
    """How long the host takes to issue one pass of ``step`` and how long the GPU takes to run it
    (see ``timing.issue_and_run_times``), checked before and after like ``bench``.

    A step whose issue time reaches its device time is host-bound: a faster GPU would not make it
    faster, fewer launches (or a cheaper way to issue them, such as CUDA Graphs) would.
    """
    run = timed_run(step, cfg, seed, None, options, warmup, repeats, clock="time_issue_and_run")
    return {
        "step": run.step.name, "config": run.cfg.as_dict(), "device": run.step.device(),
        "times_meaningful": run.runner.times_meaningful, "warmup": run.warmup, "repeats": run.repeats,
        **{f"{clock}_ms": (summarize(values) if values is not None else None) for clock, values in run.times.items()},
        "relative_error": run.relative_error, "options": options,
    }


def checked_names(names) -> list[str]:
    """``names`` (all ladder steps if None), every one known: a typo fails before minutes of work."""
    if names is None:
        return steps_registry.names()
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"names must be a list of step names (or None for the whole ladder), got "
                        f"{type(names).__name__} {names!r}" + (f"; for one step: [{names!r}]" if isinstance(names, str) else ""))
    names = list(names)
    if not names:
        raise ValueError("names must hold at least one step name, got an empty list (None: the whole ladder)")
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"names[{index}] must be a step name, got {type(name).__name__} {name!r}")
        steps_registry.get(name)
    return names


def bench_or_skip(name: str, cfg: LSTMConfig | None = None, *, measure=None, **kwargs) -> dict:
    """``bench`` (or ``measure``, e.g. ``host_and_device_times``), or ``{"step", "config",
    "skipped": reason}`` when the step cannot run at ``cfg`` on this GPU and says so plainly
    (PersistentLimitError, PolicyNotOffered). A wrong result still raises WrongResultError, and a
    wrong argument its own error."""
    from .kernels.persistent import PersistentLimitError  # planning loads on first use
    from .steps.gemm_policy import PolicyNotOffered

    try:
        return (bench if measure is None else measure)(name, cfg, **kwargs)
    except (PersistentLimitError, PolicyNotOffered) as error:
        cfg = LSTMConfig.default() if cfg is None else cfg
        return {"step": name, "config": cfg.as_dict(), "skipped": str(error)}


def bench_steps(names=None, cfg: LSTMConfig | None = None, *, progress: bool = True, **kwargs) -> list[dict]:
    """``bench`` for several steps (all by default), in ladder order, with a progress bar. A step
    that cannot run at ``cfg`` here is recorded as skipped, with its reason (``bench_or_skip``).
    Every argument is checked before the first step runs (on the simulator: that none would take hours)."""
    names = checked_names(names)
    progress = check_bool("progress", progress)
    warmup, repeats = counts(kwargs.get("warmup"), kwargs.get("repeats"))
    for name in names:
        step, step_cfg, _, _ = resolve(name, cfg, kwargs.get("seed", 0), kwargs.get("rtol"))
        refuse_slow_simulation(step, step_cfg, simulated_passes(warmup, repeats))
    iterator = progress_bar(names, "benchmark", "step", enabled=progress)
    results = []
    for name in iterator:
        iterator.set_postfix_str(name)
        results.append(bench_or_skip(name, cfg, **kwargs))
    return results
