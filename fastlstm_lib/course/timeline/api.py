"""``estimate(profile, gpu, host=..., gemm=...)``: its arguments checked, the model run: block costs
(``blocks.py``), DRAM bytes (``reuse.py``) and ``profile/schedule.py`` with an SM's limits; the
``Estimate`` it returns.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...checks import check_choice, check_str
from ...gpus import Chip
from ..profile.bound import checked_host, checked_pass, launch_cost_us
from ..profile.schedule import critical_parts, simulate
from .blocks import block_cost
from .constants import constant
from .reuse import dram_input_bytes

GEMMS = ("ours", "cublas")


@dataclasses.dataclass(frozen=True)
class Estimate:
    """An ESTIMATED pass (``estimate(...)``), not a measurement. ``total_ms``: when the last launch
    ends; ``breakdown``: the chain that ends last, split into host, concurrency, latency, sm_wait,
    arithmetic, memory and stall ms (adding up to ``total_ms``); ``sm_time``: SM-ms busy, idle and
    in waves' tails; ``timeline``: one dict per launch."""

    step: str
    gpu: str
    host: str
    gemm: str
    total_ms: float
    breakdown: dict
    sm_time: dict
    timeline: tuple
    #: per launch: (SMs, starts s, ends s, warps resident on each)
    on_sms: tuple = dataclasses.field(default=(), repr=False, compare=False)

    def resident_warps(self, window=None, bins: int = 200) -> tuple[np.ndarray, np.ndarray]:
        """(bin edges in ms, warps resident per SM in each bin, averaged over it: SMs x bins) over
        ``window`` = (t0_ms, t1_ms) (the whole pass for None): what the heat strip draws."""
        t0, t1 = window if window is not None else (0.0, self.total_ms)
        edges = np.linspace(t0, t1, bins + 1)
        sms = int(round(self.sm_time["total_sm_ms"] / self.total_ms)) if self.total_ms > 0 else 1
        grid = np.zeros((sms, bins))
        for sm, start, end, warps in self.on_sms:  # each launch's share of each SM it ran on
            if end.max() * 1e3 < t0 or start.min() * 1e3 > t1:
                continue
            low, high = np.maximum(start * 1e3, t0), np.minimum(end * 1e3, t1)
            overlap = np.clip(np.minimum(high[:, None], edges[None, 1:]) - np.maximum(low[:, None], edges[None, :-1]),
                              0.0, None)
            np.add.at(grid, sm.astype(np.int64), overlap * warps[:, None] / (edges[1] - edges[0]))
        return edges, grid

    def __repr__(self) -> str:
        parts = ", ".join(f"{key[:-3]} {value:.3g}" for key, value in self.breakdown.items() if key.endswith("_ms"))
        return (f"Estimate({self.step} on {self.gpu}, host {self.host}, gemm {self.gemm}: {self.total_ms:.3f} ms "
                f"ESTIMATED; chain: {parts})")


def sm_time(sim: dict) -> dict:
    """SM-milliseconds: busy (arithmetic, memory), idle, and the tails part of idle."""
    total_sm = sim["total"] * sim["sms"] * 1e3
    arithmetic, memory = sim["busy"].get("arithmetic", 0.0) * 1e3, sim["busy"].get("memory", 0.0) * 1e3
    return {"total_sm_ms": total_sm, "arithmetic_sm_ms": arithmetic, "memory_sm_ms": memory,
            "idle_sm_ms": max(0.0, total_sm - arithmetic - memory), "tails_sm_ms": sim["busy"]["tails"] * 1e3,
            "host_ms": sim["issued"] * 1e3}


def estimate(profile, gpu, host="cpp", gemm="ours") -> Estimate:
    """The ESTIMATED time of ``profile``'s pass (``fl.profile(...)``) on ``gpu`` (a name in
    data/gpus.csv), launches issued by ``host`` ("cpp", "python", "measured" or microseconds per
    launch), its GEMMs as compiled here (``gemm="ours"``, ``blocks.py``) or timed by DeepBench's
    cuBLAS times (``"cublas"``: the M40, T4 and V100 only, ``cublas.py``). Never below
    ``fl.lower_bound`` with the same host; refused as it refuses (``bound.checked_pass``)."""
    row = checked_pass(profile, gpu)
    host_label = checked_host(host)
    check_choice("gemm", check_str("gemm", gemm), GEMMS)
    chip = Chip.from_row(row)
    l2, batch, costs = row["l2_mib"] * 2**20, int(profile.config.get("batch", 1)), {}
    from_dram = dram_input_bytes(profile.launches, l2)

    def cost(launch):  # all of a launch's blocks alike; launches of one shape and kernel alike
        dram = from_dram[launch.index] + max(0.0, launch.footprint_written - l2)
        key = (launch.kernel, launch.grid, launch.block, launch.shared_bytes, launch.flop,
               dram, launch.bytes_read > 0, launch.transpose_b)
        if key not in costs:
            costs[key] = block_cost(launch, row, chip, batch, gemm, profile.config, dram)
        return costs[key]

    sim = simulate(profile.launches, [launch_cost_us(host, launch) * 1e-6 for launch in profile.launches], cost,
                   sms=row["sms"], latency_s=constant("launch_latency_us") * 1e-6,
                   limit=int(constant("max_concurrent_kernels", str(row["compute_capability"]))))
    return Estimate(step=profile.step, gpu=row["name"], host=host_label, gemm=gemm, total_ms=sim["total"] * 1e3,
                    breakdown=critical_parts(sim, ("arithmetic", "memory")), sm_time=sm_time(sim),
                    timeline=tuple(sim["timeline"]), on_sms=tuple(sim["on_sms"]))
