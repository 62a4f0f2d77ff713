"""The estimated timeline: launches issued by the host, their blocks placed on SMs.

Events, per launch in issue order (the host issues in order; the GPU runs ahead when it can):

1. issued: the host's cumulative launch cost (``profile/bound.py``'s host figures);
2. ready = max(issued, end of every launch it depends on);
3. if ``max_concurrent_kernels`` launches are still running then, it waits for the earliest of
   them to end (kept simple: the ends of earlier launches are dropped as time passes them);
4. start = that + ``launch_latency_us`` (GPU-side launch latency, paid by every launch, which is
   also the gap between dependent kernels);
5. blocks are placed in aggregate, not one event per block: all of a launch's blocks cost the
   same T (``blocks.py``), and each SM j is free from a_j = max(its previous work's end, start).
   Blocks go greedily to the SM that can start one earliest, so SM j receives n_j blocks where
   the n_j are those of the B earliest slots among {a_j + k T}; it then is busy until
   a_j + n_j T. Blocks sharing an SM (of one launch or of several) share its rate; the SM's work
   is conserved, so n_j blocks take n_j T whether they run side by side or one after another.
   The launch ends when its last SM does. A launch of B blocks on S idle SMs thus takes
   ceil(B / S) T: the last wave's tail is SM-time left idle, ``tails`` in the breakdown.

Residency (``blocks.per_sm``) decides whether a kernel can run at all and its waves
(ceil(B / (per_sm x S))); with rates shared, it does not change the time (no latency-hiding
model: a lone block is assumed to reach the SM's rate, which is optimistic).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..profile.bound import launch_cost_us
from .blocks import block_cost, dram_bytes


def place(available: np.ndarray, blocks: int, seconds: float) -> np.ndarray:
    """Blocks per SM: the ``blocks`` earliest slots among {available[j] + k x seconds}."""
    sms = available.size
    if seconds <= 0.0:
        counts = np.full(sms, blocks // sms)
        order = np.argsort(available, kind="stable")
        counts[order[: blocks % sms]] += 1
        return counts
    low = available.min()
    if low == available.max():  # every SM free at once (the GPU was waiting): whole waves, the rest to the first SMs
        counts = np.full(sms, blocks // sms)
        counts[: blocks % sms] += 1
        return counts
    waves = min(blocks, math.ceil(blocks / sms) + 1 + int((available.max() - low) / seconds))
    starts = available[:, None] + seconds * np.arange(waves)[None, :]
    flat = starts.ravel()
    cut = np.partition(flat, blocks - 1)[blocks - 1]
    counts = (starts < cut).sum(axis=1)
    ties = np.flatnonzero((starts == cut).any(axis=1))
    short = blocks - int(counts.sum())
    counts[ties[:short]] += 1  # each SM has at most one slot at exactly the cut
    return counts


def simulate(profile, row: dict, chip, host, gemm: str, constants: dict) -> dict:
    """Run the model over ``profile``'s launches; returns the timeline and its totals (seconds)."""
    sms = row["sms"]
    latency = constants["launch_latency_us"] * 1e-6
    limit = int(constants["max_concurrent_kernels"])
    l2 = row["l2_mib"] * 2**20
    batch = int(profile.config.get("batch", 1))
    free = np.zeros(sms)
    running: list[float] = []
    ends: list[float] = []
    links: list[dict] = []
    timeline: list[dict] = []
    on_sms: list[tuple] = []  # per launch: the SMs it used, and when each began and ended its share
    costs: dict = {}
    issued = 0.0
    busy = {"arithmetic": 0.0, "memory": 0.0, "tails": 0.0}
    for launch in profile.launches:
        issued += launch_cost_us(host, launch) * 1e-6
        before = max(launch.deps, key=lambda j: ends[j], default=None)
        deps_end = ends[before] if before is not None else 0.0
        ready = max(issued, deps_end)
        t = ready
        while running and running[0] <= t:
            heapq.heappop(running)
        while len(running) >= limit:
            t = max(t, heapq.heappop(running))
        start = t + latency
        key = (launch.kernel, launch.grid, launch.block, launch.shared_bytes, launch.flop, dram_bytes(launch, l2))
        cost = costs.get(key)
        if cost is None:
            cost = costs[key] = block_cost(launch, row, chip, batch, gemm)
        available = np.maximum(free, start)
        counts = place(available, cost.blocks, cost.seconds)
        used = counts > 0
        sm_end = available + counts * cost.seconds
        free = np.where(used, sm_end, free)
        end = float(sm_end[used].max())
        last = int(np.argmax(np.where(used, sm_end, -np.inf)))
        work = float(counts[last] * cost.seconds)
        kind = "arithmetic" if cost.arithmetic_s >= cost.memory_s else "memory"
        busy[kind] += cost.blocks * cost.seconds
        busy["tails"] += float((end - sm_end[used]).sum())
        ends.append(end)
        heapq.heappush(running, end)
        links.append({"before": before if deps_end > issued else None, "ready": ready,
                      "concurrency": t - ready, "latency": latency, "sm_wait": max(0.0, end - work - start),
                      "work": work, "kind": kind})
        on_sms.append((np.flatnonzero(used).astype(np.int16), available[used], sm_end[used]))
        timeline.append({"launch": launch.index, "kernel": launch.kernel, "stream": launch.stream,
                         "issued_ms": issued * 1e3, "ready_ms": ready * 1e3, "start_ms": start * 1e3,
                         "end_ms": end * 1e3, "sms_used": int(used.sum()), "blocks": cost.blocks,
                         "blocks_per_sm": cost.per_sm, "residency_limit": cost.limit,
                         "waves": math.ceil(cost.blocks / (cost.per_sm * sms)),
                         "block_us": cost.seconds * 1e6, "efficiency": cost.efficiency, "limit": kind})
    total = max(ends, default=0.0)
    return {"total": total, "issued": issued, "timeline": timeline, "links": links, "ends": ends, "on_sms": on_sms,
            "busy": busy, "sms": sms}


def critical_parts(sim: dict) -> dict:
    """The chain that ends last, followed back through what each launch waited for; its time
    split (ms) into host, concurrency limit, launch latency, waiting for SMs, arithmetic, memory.
    The parts add up to the total."""
    parts = {"host_ms": 0.0, "concurrency_ms": 0.0, "latency_ms": 0.0, "sm_wait_ms": 0.0,
             "arithmetic_ms": 0.0, "memory_ms": 0.0, "launches": 0}
    ends = sim["ends"]
    if not ends:
        return parts
    i = max(range(len(ends)), key=ends.__getitem__)
    while i is not None:
        link = sim["links"][i]
        parts["concurrency_ms"] += link["concurrency"] * 1e3
        parts["latency_ms"] += link["latency"] * 1e3
        parts["sm_wait_ms"] += link["sm_wait"] * 1e3
        parts[f"{link['kind']}_ms"] += link["work"] * 1e3
        parts["launches"] += 1
        if link["before"] is None:
            parts["host_ms"] = link["ready"] * 1e3
        i = link["before"]
    return parts
