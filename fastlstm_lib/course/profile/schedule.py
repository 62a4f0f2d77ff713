"""One scheduler for a recorded pass, and one walk of its critical path: the lower bound's
(``bound.py``, ideal costs) and the timeline model's (``fastlstm_lib/timeline``, an SM's limits).

Events, per launch in issue order (the host issues in order; the GPU runs ahead when it can):

1. issued: the host's cumulative cost of issuing the launches so far (``issue_s``, per launch);
2. ready = max(issued, end of every launch it depends on);
3. with a ``limit`` on resident grids: if that many launches are still running then, it waits for
   the earliest of them to end (kept simple: the ends of earlier launches are dropped as time
   passes them);
4. start = that + ``latency_s`` (the GPU-side launch latency, paid by every launch: also the gap
   between dependent kernels);
5. its work, ``cost(launch)``: ``blocks`` alike, one block's ``seconds``, and ``kind``, what sets
   them (arithmetic or memory).

   - ``sms=None``: the launch has the whole GPU to itself however many others run, end = start +
     seconds (one "block": the whole launch). With no latency and no limit, the lower bound.
   - ``sms`` = S: blocks are placed in aggregate, not one event per block. Each SM j is free from
     a_j = max(its previous work's end, start); blocks go greedily to the SM that can start one
     earliest, so SM j receives n_j blocks, those of the B earliest slots among {a_j + k T}, and
     is busy until a_j + n_j T. Blocks sharing an SM (of one launch or of several) share its
     rate; the SM's work is conserved, so n_j blocks take n_j T whether they run side by side or
     one after another. The launch ends when its last SM does: B blocks on S idle SMs take
     ceil(B / S) T, and the last wave's tail is SM-time left idle (``tails``).

``critical_parts`` follows the launch that ends last back through what each waited for and splits
the total into host, concurrency limit, launch latency, SM wait and the work of each kind.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


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


def simulate(launches, issue_s, cost, *, sms: int | None = None, latency_s: float = 0.0, limit=None) -> dict:
    """Schedule ``launches`` (a profile's, in issue order), the host taking ``issue_s[i]`` seconds
    to issue launch i; ``cost(launch)`` their work (see the module docstring). Returns the totals
    (seconds), one timeline entry per launch, and what ``critical_parts`` follows."""
    free = np.zeros(sms) if sms else None
    running: list[float] = []
    ends, links, timeline, on_sms = [], [], [], []
    issued = 0.0
    busy = {"tails": 0.0}
    for launch, issue in zip(launches, issue_s):
        issued += issue
        before = max(launch.deps, key=lambda j: ends[j], default=None)
        deps_end = ends[before] if before is not None else 0.0
        ready = t = max(issued, deps_end)
        while running and running[0] <= t:
            heapq.heappop(running)
        while limit is not None and len(running) >= limit:
            t = max(t, heapq.heappop(running))
        start = t + latency_s
        work = cost(launch)
        entry = {"launch": launch.index, "kernel": launch.kernel, "stream": launch.stream,
                 "issued_ms": issued * 1e3, "ready_ms": ready * 1e3, "start_ms": start * 1e3}
        if free is None:
            end, busy_s = start + work.seconds, work.seconds
            entry["end_ms"] = end * 1e3
        else:
            available = np.maximum(free, start)
            counts = place(available, work.blocks, work.seconds)
            used = counts > 0
            sm_end = available + counts * work.seconds
            free = np.where(used, sm_end, free)
            end = float(sm_end[used].max())
            busy_s = float(counts[int(np.argmax(np.where(used, sm_end, -np.inf)))] * work.seconds)  # the last SM's
            busy[work.kind] = busy.get(work.kind, 0.0) + work.blocks * work.seconds
            busy["tails"] += float((end - sm_end[used]).sum())
            on_sms.append((np.flatnonzero(used).astype(np.int16), available[used], sm_end[used]))
            entry.update(end_ms=end * 1e3, sms_used=int(used.sum()), blocks=work.blocks, blocks_per_sm=work.per_sm,
                         residency_limit=work.limit, waves=math.ceil(work.blocks / (work.per_sm * sms)),
                         block_us=work.seconds * 1e6, efficiency=work.efficiency)
        ends.append(end)
        if limit is not None:
            heapq.heappush(running, end)
        links.append({"before": before if deps_end > issued else None, "ready": ready, "concurrency": t - ready,
                      "latency": latency_s, "sm_wait": max(0.0, end - busy_s - start), "work": busy_s,
                      "kind": work.kind})
        timeline.append(dict(entry, limit=work.kind))
    return {"total": max(ends, default=0.0), "issued": issued, "timeline": timeline, "links": links, "ends": ends,
            "on_sms": on_sms, "busy": busy, "sms": sms}


def critical_parts(sim: dict, kinds: tuple) -> dict:
    """The chain that ends last, followed back through what each launch waited for; its time split
    (ms) into host, concurrency limit, launch latency, waiting for SMs and the work of each of
    ``kinds``, and its launches. The parts add up to the total."""
    parts = {"host_ms": 0.0, "concurrency_ms": 0.0, "latency_ms": 0.0, "sm_wait_ms": 0.0,
             **{f"{kind}_ms": 0.0 for kind in kinds}, "launches": 0}
    ends = sim["ends"]
    i = max(range(len(ends)), key=ends.__getitem__) if ends else None
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
