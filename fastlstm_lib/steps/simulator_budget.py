"""How long a run would take on the CUDA simulator, and a refusal up front when it is hours.

The simulator runs every GPU thread as a Python thread: a pass at the article's size (about
100 GFLOP) would take days. Rather than start it, the harness estimates the time from the
pass's FLOPs and the simulator's rate, and refuses anything over ``LIMIT_SECONDS`` with the
size that does run. The rate is a measurement, labelled as such: the fastest of the ladder's
steps on this project's CI-class machine (2 to 16 cores, Python 3.11, numba-cuda 0.30.4,
2026-11-25) ran 0.03 (baseline) to 0.10 (persistent) MFLOP of the forward's GEMMs per second at
batch 5, 7 steps, input 13, hidden 21, 2 layers, launches and thread start-up included. The
estimate uses the fastest, so it errs towards running: a refusal is never a close call.
"""

from __future__ import annotations

from ..runtime.device import DEVICE
from ..config import LSTMConfig
from .base import SIMULATOR_REPEATS

#: The fastest step's rate on the simulator, FLOP per second (measured; see above).
SIMULATOR_FLOP_PER_S = 0.1e6
#: Longer than this (estimated) and the harness refuses to start on the simulator.
LIMIT_SECONDS = 300.0


def simulated_passes(warmup: int | None, repeats: int | None) -> int:
    """Passes a bench runs: its warm-up and repeats (the simulator's defaults for None) and the
    check before and after."""
    default_warmup, default_repeats = SIMULATOR_REPEATS
    return (default_warmup if warmup is None else warmup) + (default_repeats if repeats is None else repeats) + 2


def simulated_seconds(step, cfg: LSTMConfig, passes: int) -> float:
    """Estimated seconds for ``passes`` passes of ``step`` at ``cfg`` on the simulator (at least)."""
    return step.flop(cfg) * passes / SIMULATOR_FLOP_PER_S


def refuse_slow_simulation(step, cfg: LSTMConfig, passes: int) -> None:
    """On the simulator, a ValueError before any work when ``step`` at ``cfg`` would take more than
    ``LIMIT_SECONDS``, naming the estimate and the size that runs. Keras' steps (which compute on
    the CPU, not in the simulator) and a GPU are never refused."""
    if not DEVICE.small or not getattr(step, "simulated", True):
        return
    seconds = simulated_seconds(step, cfg, passes)
    if seconds <= LIMIT_SECONDS:
        return
    tiny = LSTMConfig.tiny()
    raise ValueError(
        f"step {step.name!r} at {cfg} would take about {_duration(seconds)} on the CUDA simulator "
        f"(an estimate: {step.flop(cfg) / 1e6:.3g} MFLOP per pass x {passes} passes at its rate of about "
        f"{SIMULATOR_FLOP_PER_S / 1e6:g} MFLOP/s), more than the {LIMIT_SECONDS / 60:.0f} minutes it allows. "
        f"On the simulator use cfg=fl.LSTMConfig.tiny() ({tiny}, about {_duration(simulated_seconds(step, tiny, passes))}), "
        "or leave cfg out; the article's size needs a GPU."
    )


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
