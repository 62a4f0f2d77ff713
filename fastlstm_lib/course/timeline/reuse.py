"""Which of a launch's inputs come from DRAM rather than L2: an LRU L2 (Mattson et al.'s stack
distance, 1970) over two passes walked back to back, the second counted.
"""

from __future__ import annotations

import numpy as np


class _Fenwick:
    def __init__(self, size: int):
        self.tree = np.zeros(size + 1)

    def add(self, i: int, value: float) -> None:
        i += 1
        tree = self.tree
        while i < tree.size:
            tree[i] += value
            i += i & -i

    def prefix(self, i: int) -> float:
        """Sum of positions < i."""
        total, tree = 0.0, self.tree
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


_DISTANCES: dict = {}  # id(launches) -> (launches, distances): a pass's walk, once per process


def dram_input_bytes(launches, l2_bytes: float) -> list[float]:
    """Per launch, the bytes of its inputs that come from DRAM (at most its ``footprint_in``)."""
    launches = tuple(launches)
    cached = _DISTANCES.get(id(launches))
    if cached is None or cached[0] is not launches:
        if len(_DISTANCES) > 64:
            _DISTANCES.clear()
        cached = _DISTANCES[id(launches)] = (launches, reuse_distances(launches))
    return [min(sum(size for size, distance in inputs if distance > l2_bytes), launch.footprint_in)
            for inputs, launch in zip(cached[1], launches)]


def reuse_distances(launches) -> list[list[tuple[int, float]]]:
    """Per launch, (bytes, bytes of other data touched since it was last touched) of each input, in
    the second of two passes walked back to back."""
    touches = []  # (launch index or -1 for an output, key, bytes)
    for launch in launches:
        touches += [(launch.index, key, size) for key, size in launch.input_views]
        touches += [(-1, key, size) for key, size in launch.output_views]
    count = len(touches)
    tree = _Fenwick(2 * count)
    last: dict = {}
    distances: list[list[tuple[int, float]]] = [[] for _ in launches]
    for time in range(2 * count):
        owner, key, size = touches[time % count]
        before = last.get(key)
        between = float("inf")
        if before is not None:
            between = tree.prefix(time) - tree.prefix(before + 1)
            tree.add(before, -size)
        if time >= count and owner >= 0:
            distances[owner].append((size, between))
        tree.add(time, size)
        last[key] = time
    return distances
