"""``Estimate``: the estimated time of one recorded pass on one GPU, its breakdown and timeline."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Estimate:
    """An ESTIMATED pass (``estimate(...)``), not a measurement.

    ``total_ms``: when the last launch ends. ``breakdown``: the chain of launches that ends last,
    its time split into host (waiting to be issued), concurrency (the resident-grid limit),
    latency (GPU-side launch latency), sm_wait (its SMs busy with other launches), arithmetic and
    memory (its blocks' time, by what limits them); these add up to ``total_ms``. ``sm_time``:
    SM-milliseconds over the whole GPU: busy on arithmetic- or memory-limited blocks, idle, and of
    the idle the waves' tails (SMs done with their share of a launch while it still runs).
    ``timeline``: one dict per launch (issued, ready, start, end in ms; SMs used; stream; blocks,
    blocks per SM and what limits it, waves, one block's time, issue efficiency).
    """

    step: str
    gpu: str
    host: str
    gemm: str
    total_ms: float
    breakdown: dict
    sm_time: dict
    timeline: tuple

    def to_dict(self, timeline: bool = True) -> dict:
        record = {"step": self.step, "gpu": self.gpu, "host": self.host, "gemm": self.gemm,
                  "total_ms": self.total_ms, "breakdown": dict(self.breakdown), "sm_time": dict(self.sm_time)}
        if timeline:
            record["timeline"] = [dict(entry) for entry in self.timeline]
        return record

    def __repr__(self) -> str:
        parts = ", ".join(f"{key[:-3]} {value:.3g}" for key, value in self.breakdown.items() if key.endswith("_ms"))
        return (f"Estimate({self.step} on {self.gpu}, host {self.host}, gemm {self.gemm}: {self.total_ms:.3f} ms "
                f"ESTIMATED; chain: {parts})")


def sm_time(sim: dict) -> dict:
    """SM-milliseconds: busy (arithmetic, memory), idle, and the tails part of idle."""
    total_sm = sim["total"] * sim["sms"] * 1e3
    arithmetic, memory = sim["busy"]["arithmetic"] * 1e3, sim["busy"]["memory"] * 1e3
    return {"total_sm_ms": total_sm, "arithmetic_sm_ms": arithmetic, "memory_sm_ms": memory,
            "idle_sm_ms": max(0.0, total_sm - arithmetic - memory), "tails_sm_ms": sim["busy"]["tails"] * 1e3,
            "host_ms": sim["issued"] * 1e3}
