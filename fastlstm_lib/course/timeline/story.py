"""One ladder step's change, ESTIMATED (notebooks 03-09): the step before and the step itself on a
T4 and an H100, with a C++, a Python and no host, beside their lower bounds.
"""

from __future__ import annotations

import functools

from ..article import ARTICLE_GPU
from ...checks import check_choice, check_fraction, check_str
from ...config import LSTMConfig
from ...gpus import gpu as gpu_row
from ..profile.bound import checked_host, lower_bound
from ..profile.ladder import HOSTS as LADDER_HOSTS, checked_ladder_arguments
from .api import estimate

GPUS = ("T4", "H100")
#: The hosts of a step's change: the ladder's two, and none (0 us per launch).
HOSTS = LADDER_HOSTS + (0,)
#: What each part of the chain breakdown is, in words.
PARTS = {"host_ms": "waiting for the host", "concurrency_ms": "waiting for the resident-grid limit",
         "latency_ms": "launch latencies", "sm_wait_ms": "waiting for busy SMs",
         "arithmetic_ms": "arithmetic", "memory_ms": "DRAM traffic", "stall_ms": "latency not hidden"}


def _pair(step) -> tuple[str, str]:
    """(the ladder's step before ``step``, the step)."""
    from ...steps import get, previous

    after = get(check_str("step", step, example="streams")).name
    if previous(after) is None:
        raise ValueError(f"step {after!r} is the first of the ladder: it has no step before to compare it with")
    return previous(after).name, after


@functools.lru_cache(maxsize=64)
def estimated_pass(step: str, gpu: str, host, cfg: LSTMConfig):
    """(profile, estimate, bound ms) of one pass recorded with ``gpu``'s geometry, once per process. Read-only."""
    from ..profile.record import shared_profile as profile  # read-only here: no copy needed

    p = profile(step, cfg, chip=gpu)
    return p, estimate(p, gpu, host=host), lower_bound(p, gpu, host=host).bound_ms


def step_change(step: str, gpus=GPUS, hosts=HOSTS) -> list[dict]:
    """Per GPU and host: the step before and ``step`` at the article's size,
    estimated and bounded: before_ms, after_ms, gain, bounds, ``saved`` (ms per chain part), busy,
    idle and tails SM-ms, launches; or "cannot": why, where a step cannot run on that GPU."""
    before, after = _pair(step)
    gpus, hosts, _, _ = checked_ladder_arguments(gpus, hosts, [after], None, ARTICLE_GPU)
    cfg = LSTMConfig.article()
    rows = []
    for gpu in gpus:
        for host in hosts:
            row = {"gpu": gpu, "host": host, "before": before, "after": after}
            try:
                p0, e0, b0 = estimated_pass(before, gpu, host, cfg)
                p1, e1, b1 = estimated_pass(after, gpu, host, cfg)
            except ValueError as error:  # e.g. the persistent layer does not fit this GPU
                rows.append({**row, "cannot": str(error)})
                continue
            row.update(before_ms=e0.total_ms, after_ms=e1.total_ms, gain=e0.total_ms / e1.total_ms,
                       bound_before_ms=b0, bound_after_ms=b1,
                       saved={part: e0.breakdown[part] - e1.breakdown[part] for part in PARTS},
                       busy=tuple(1 - e.sm_time["idle_sm_ms"] / e.sm_time["total_sm_ms"] for e in (e0, e1)),
                       idle_sm_ms=(e0.sm_time["idle_sm_ms"], e1.sm_time["idle_sm_ms"]),
                       tails_sm_ms=(e0.sm_time["tails_sm_ms"], e1.sm_time["tails_sm_ms"]),
                       launches=(len(p0.launches), len(p1.launches)))
            rows.append(row)
    return rows


def plot_step_change(step: str, gpu: str = "T4", host="cpp", by: str = "stream", at: float = 0.4):
    """Before and after on ``gpu`` as two timelines (``plot_timeline``, ``by`` stream or SM), six
    layer-steps from ``at`` of the way into each pass. Returns the Figure."""
    import matplotlib.pyplot as plt

    from .chart import BY, plot_timeline

    before, after = _pair(step)
    gpu_row(check_str("gpu", gpu, example="T4"))
    checked_host(host)
    cfg = LSTMConfig.article()
    check_choice("by", check_str("by", by), BY)
    check_fraction("at", at, why=": where the window starts, as a share of the pass")
    fig, axes = plt.subplots(2, 1, figsize=(10, 5.5 if by == "stream" else 8))
    for ax, name in zip(axes, (before, after)):
        e = estimated_pass(name, gpu, host, cfg)[1]
        span = 6 * e.total_ms / (cfg.layers * cfg.seq_len)
        plot_timeline(e, window=(at * e.total_ms, at * e.total_ms + span), ax=ax, by=by)
    fig.tight_layout()
    return fig
