"""One scheduler for a recorded pass, and one walk of its critical path: the lower bound's
(``bound.py``: ``sms=None``, each launch the whole GPU's) and the timeline model's
(``course/timeline``: ``sms`` SMs, a launch latency, a limit on resident grids).

With SMs, n blocks on an SM (r resident at once, the SM free from a) end at
max(a + ceil(n / r) L, max(issue_free, a) + n W): latency hiding (Little's law; V. Volkov,
"Understanding Latency Hiding on GPUs", 2016), L a block's latency alone and W its SM time.
Blocks go where they end earliest, ties round-robin.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


class Residency:
    """What each SM holds while it runs: shares of launches (SM, until when, fraction of the SM)."""

    def __init__(self, sms: int):
        self.sms = sms
        self.shares: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, sm: np.ndarray, end: np.ndarray, fraction: np.ndarray) -> None:
        self.shares.append((sm, end, fraction, float(end.max())))

    def forget_before(self, t: float) -> None:
        """Drop shares that ended by ``t``: no launch starts before it any more."""
        if self.shares and min(share[3] for share in self.shares) <= t:
            self.shares = [share for share in self.shares if share[3] > t]

    def free_at(self, t: float) -> np.ndarray:
        """Per SM, the share of it no launch holds at ``t``."""
        free = np.ones(self.sms)
        for sm, end, fraction, last in self.shares:
            if last > t:
                alive = end > t
                np.subtract.at(free, sm[alive], fraction[alive])
        return free

    def room(self, start: float, need: float) -> tuple[np.ndarray, np.ndarray]:
        """(a, room): per SM, the first time from ``start`` with at least ``need`` of it free, and
        how much is free then."""
        a, room = np.full(self.sms, start), np.ones(self.sms)
        if not self.shares:
            return a, room
        sm = np.concatenate([share[0] for share in self.shares])
        end = np.concatenate([share[1] for share in self.shares])
        fraction = np.concatenate([share[2] for share in self.shares])
        alive = end > start
        if not alive.any():
            return a, room
        sm, end, fraction = sm[alive], end[alive], fraction[alive]
        np.subtract.at(room, sm, fraction)
        short = room < need - 1e-9
        if not short.any():
            return a, room
        pick = short[sm]
        sm, end, fraction = sm[pick], end[pick], fraction[pick]
        order = np.lexsort((end, sm))
        sm, end, fraction = sm[order], end[order], fraction[order]
        freed = np.cumsum(fraction)
        first = np.searchsorted(sm, sm, side="left")
        freed = freed - (freed[first] - fraction[first])  # freed within each SM, in order of ending
        enough = np.flatnonzero(room[sm] + freed >= need - 1e-9)
        groups, at = np.unique(sm[enough], return_index=True)
        a[groups] = end[enough[at]]
        room[groups] = room[groups] + freed[enough[at]]
        return a, room


def ends_if(a, issue_free, resident, latency: float, work: float, k):
    """Where k blocks on each SM would end (k broadcast against the SMs): by their latency, ceil(k /
    resident) x latency from ``a``; by the SM's issue, k x work from ``a`` plus as much of the work
    queued before them (``issue_free`` - a) as their own, the SM's warps taking turns."""
    backlog = np.maximum(issue_free - a, 0.0)
    return np.maximum(a + np.ceil(k / resident) * latency, a + k * work + np.minimum(backlog, k * work))


def place(a: np.ndarray, issue_free: np.ndarray, resident: np.ndarray, blocks: int, latency: float,
          work: float) -> np.ndarray:
    """Blocks per SM: the ``blocks`` slots that end earliest, the k-th block on SM j ending at
    ``ends_if(.., k)``; ties dealt round-robin (lower k first, then lower SM)."""
    sms = a.size
    even = -(-blocks // sms)
    horizon = float(ends_if(a, issue_free, resident, latency, work, even).max())
    by_issue = np.floor((horizon - np.maximum(issue_free, a)) / max(work, 1e-18) + 1e-9)
    by_latency = resident * np.floor((horizon - a) / max(latency, 1e-18) + 1e-9)
    most = int(min(blocks, max(even, np.minimum(by_issue, by_latency).max())))
    k = np.arange(1, most + 1)[None, :]
    ends = ends_if(a[:, None], issue_free[:, None], resident[:, None], latency, work, k)
    if ends.size == blocks:
        return np.full(sms, most)
    cut = np.partition(ends.ravel(), blocks - 1)[blocks - 1]
    counts = (ends < cut).sum(axis=1)
    short = blocks - int(counts.sum())
    tied = np.argwhere(ends == cut)  # (sm, k - 1), each SM's ties consecutive in k
    tied = tied[np.lexsort((tied[:, 0], tied[:, 1]))][:short]
    np.add.at(counts, tied[:, 0], 1)
    return counts


def simulate(launches, issue_s, cost, *, sms: int | None = None, latency_s: float = 0.0, limit=None) -> dict:
    """Schedule ``launches`` (issue order), the host taking ``issue_s[i]`` to issue launch i,
    ``cost(launch)`` their work (module docstring). Returns totals (s), a timeline entry per launch
    and what ``critical_parts`` follows."""
    count = len(launches)
    issued_at = np.cumsum(np.asarray(issue_s, dtype=float)) if count else np.zeros(0)
    issue_free = np.zeros(sms) if sms else None
    residency = Residency(sms) if sms else None
    running: list[float] = []
    ends, links, timeline, on_sms = [0.0] * count, [None] * count, [None] * count, [None] * count
    busy = {"tails": 0.0}
    waiting = [len(launch.deps) for launch in launches]
    dependents: list[list[int]] = [[] for _ in range(count)]
    for i, launch in enumerate(launches):
        for j in launch.deps:
            dependents[j].append(i)
    ready_heap = [(float(issued_at[i]), i) for i in range(count) if not waiting[i]]
    heapq.heapify(ready_heap)
    on_idle: dict = {}  # a launch's placement on an idle GPU, by its blocks' figures: the same every time
    while ready_heap:
        t, i = heapq.heappop(ready_heap)
        launch = launches[i]
        while running and running[0] <= t:
            heapq.heappop(running)
        if limit is not None and len(running) >= limit:  # put back by the resident-grid limit until a grid ends
            heapq.heappush(ready_heap, (max(t, heapq.heappop(running)), i))
            continue
        before = max(launch.deps, key=lambda j: ends[j], default=None)  # its dependencies have all ended
        deps_end = ends[before] if before is not None else 0.0
        issued = float(issued_at[i])
        ready = max(issued, deps_end)
        start = t + latency_s
        work = cost(launch)
        entry = {"launch": launch.index, "kernel": launch.kernel, "stream": launch.stream,
                 "issued_ms": issued * 1e3, "ready_ms": ready * 1e3, "start_ms": start * 1e3}
        link = {"latency": latency_s, "kind": work.kind, "stall": 0.0}
        if issue_free is None:
            end = start + work.seconds
            link.update(sm_wait=0.0, work=work.seconds)
            entry["end_ms"] = end * 1e3
        else:
            residency.forget_before(start)
            W, L = work.seconds, work.latency_s
            idle = not residency.shares and issue_free.max() <= start  # the GPU all this launch's: a shape seen before
            key = (work.blocks, work.per_sm, W, L)
            if idle and key in on_idle:
                used, n, r_used, relative = on_idle[key]
                a_used = free_used = np.full(used.size, start)
                sm_end = start + relative
            else:
                need = 1.0 / work.per_sm
                a, room = residency.room(start, need)
                room = np.maximum(room, residency.free_at(start + L))  # what frees while the first wave runs takes the next
                resident = np.clip(np.floor(room * work.per_sm + 1e-9), 1, work.per_sm)
                counts = place(a, issue_free, resident, work.blocks, L, W)
                used = np.flatnonzero(counts)
                n, a_used, r_used, free_used = counts[used], a[used], resident[used], issue_free[used]
                sm_end = ends_if(a_used, free_used, r_used, L, W, n)
                if idle:
                    on_idle[key] = (used, n, r_used, sm_end - start)
            issue_free[used] = np.maximum(free_used, a_used) + n * W
            waves = np.ceil(n / r_used)
            last_wave = n - (waves - 1) * r_used  # blocks of the last wave: the others' slots free as it runs
            residency.add(used, sm_end - (sm_end - a_used) / waves, (np.minimum(n, r_used) - last_wave) / work.per_sm)
            residency.add(used, sm_end, last_wave / work.per_sm)
            end = float(sm_end.max())
            last = int(np.argmax(sm_end))
            shared = min(max(0.0, free_used[last] - a_used[last]), n[last] * W)  # the others' work it waits through
            by_issue = shared + n[last] * W >= waves[last] * L - 1e-15
            link.update(sm_wait=a_used[last] - start + (shared if by_issue else 0.0), work=float(n[last] * W))
            stall = end - start - link["sm_wait"] - link["work"]
            link["stall"] = stall if stall > 1e-12 else 0.0  # rounding, where the issue set the end
            busy[work.kind] = busy.get(work.kind, 0.0) + work.blocks * W
            busy["tails"] += float((end - sm_end).sum())
            on_sms[i] = (used.astype(np.int16), a_used, sm_end, (np.minimum(n, r_used) * work.warps).astype(np.int32))
            entry.update(end_ms=end * 1e3, sms_used=int(used.size), blocks=work.blocks, blocks_per_sm=work.per_sm,
                         residency_limit=work.limit, waves=math.ceil(work.blocks / (work.per_sm * sms)),
                         block_us=W * 1e6, alone_us=L * 1e6, efficiency=work.efficiency)
        ends[i] = end
        if limit is not None:
            heapq.heappush(running, end)
        link.update(before=before if deps_end > issued else None, ready=ready, concurrency=t - ready)
        links[i] = link
        timeline[i] = dict(entry, limit=work.kind)
        for later in dependents[i]:
            waiting[later] -= 1
            if not waiting[later]:
                later_deps_end = max(ends[j] for j in launches[later].deps)
                heapq.heappush(ready_heap, (max(float(issued_at[later]), later_deps_end), later))
    return {"total": max(ends, default=0.0), "issued": float(issued_at[-1]) if count else 0.0, "timeline": timeline,
            "links": links, "ends": ends, "on_sms": [share for share in on_sms if share is not None], "busy": busy,
            "sms": sms}


def critical_parts(sim: dict, kinds: tuple) -> dict:
    """The chain that ends last, its time split (ms) into host, concurrency, latency, SM wait, each of
    ``kinds`` and stalls, adding up to the total; and its launch count."""
    parts = {"host_ms": 0.0, "concurrency_ms": 0.0, "latency_ms": 0.0, "sm_wait_ms": 0.0,
             **{f"{kind}_ms": 0.0 for kind in kinds}, "stall_ms": 0.0, "launches": 0}
    ends = sim["ends"]
    i = max(range(len(ends)), key=ends.__getitem__) if ends else None
    while i is not None:
        link = sim["links"][i]
        parts["concurrency_ms"] += link["concurrency"] * 1e3
        parts["latency_ms"] += link["latency"] * 1e3
        parts["sm_wait_ms"] += link["sm_wait"] * 1e3
        parts[f"{link['kind']}_ms"] += link["work"] * 1e3
        parts["stall_ms"] += link["stall"] * 1e3
        parts["launches"] += 1
        if link["before"] is None:
            parts["host_ms"] = link["ready"] * 1e3
        i = link["before"]
    return parts
