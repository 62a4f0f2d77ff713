"""Where an array lives in memory: a pointer, a shape and strides, whatever kind of array it is.

A kernel's footprint (the distinct bytes it touches) is a union of the array views it was given:
one gate's columns of a stacked matrix, one time step of a sequence, a whole buffer. ``View``
describes one view the same way for a simulator array (NumPy underneath), a GPU array (its
``__cuda_array_interface__``), a NumPy array or an instrumented one, so that the formulas and the
instrumented counts speak about the same bytes. ``distinct_bytes`` unions views exactly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class View(NamedTuple):
    """A strided view of memory: element (i, j, ...) sits at ``pointer + i*strides[0] + ...``."""

    pointer: int
    shape: tuple
    strides: tuple
    itemsize: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the view's elements (distinct: a view of a NumPy-style array never overlaps itself)."""
        return self.elements * self.itemsize

    def span(self) -> tuple[int, int]:
        """[first byte, last byte + 1) that the view can touch."""
        if self.elements == 0:
            return self.pointer, self.pointer
        low = self.pointer + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        high = self.pointer + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        return low, high + self.itemsize

    def head(self, *counts: int) -> "View":
        """The first ``counts[d]`` indices along each leading axis d (the rest whole)."""
        shape = tuple(min(c, n) for c, n in zip(counts, self.shape)) + self.shape[len(counts):]
        return self._replace(shape=shape)

    def runs(self) -> tuple[np.ndarray, int]:
        """(first byte of every contiguous run of elements, bytes per run): the view as intervals."""
        shape, strides = list(self.shape), list(self.strides)
        run = self.itemsize
        while shape and strides[-1] == run:  # fold trailing axes that are contiguous in memory
            run *= shape.pop()
            strides.pop()
        starts = np.array([self.pointer], dtype=np.int64)
        for n, stride in zip(shape, strides):
            starts = (starts[:, None] + np.arange(n, dtype=np.int64) * stride).ravel()
        return starts, run


def c_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def host_array(array) -> np.ndarray | None:
    """The NumPy array behind a simulator array, an instrumented one, or a NumPy array; None for a GPU array."""
    if isinstance(array, np.ndarray):
        return array
    inner = getattr(array, "_ary", None)  # the simulator's FakeCUDAArray
    if isinstance(inner, np.ndarray):
        return inner
    inner = getattr(array, "array", None)  # fastlstm_lib.course.profile.instrument.InstrumentedArray
    return inner if isinstance(inner, np.ndarray) else None


def is_array(value) -> bool:
    """A device (or host) array a kernel can index, as opposed to a scalar argument."""
    return host_array(value) is not None or hasattr(value, "__cuda_array_interface__")


def view_of(array) -> View:
    """The View of any array a kernel may receive."""
    host = host_array(array)
    if host is not None:
        return View(host.__array_interface__["data"][0], tuple(host.shape), tuple(host.strides), host.dtype.itemsize)
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        raise TypeError(f"not an array: {type(array).__name__}")
    shape = tuple(interface["shape"])
    itemsize = np.dtype(interface["typestr"]).itemsize
    strides = tuple(interface["strides"]) if interface.get("strides") else c_strides(shape, itemsize)
    return View(interface["data"][0], shape, strides, itemsize)


def distinct_bytes(views) -> int:
    """Bytes in the union of ``views``, exactly: each view is cut into contiguous runs, and the
    runs are merged (identical views count once, one gate's columns and the next don't overlap)."""
    unique = list(dict.fromkeys(v for v in views if v.elements))
    if len(unique) <= 1:
        return unique[0].nbytes if unique else 0
    spans = sorted(v.span() for v in unique)
    if all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])):
        return sum(v.nbytes for v in unique)  # no two views' spans meet: nothing to merge (most launches)
    starts, ends = [], []
    for view in unique:
        first, run = view.runs()
        starts.append(first)
        ends.append(first + run)
    starts, ends = np.concatenate(starts), np.concatenate(ends)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)  # the furthest byte covered by this run or any before it
    before = np.concatenate(([np.iinfo(np.int64).min], reach[:-1]))
    return int(np.maximum(0, reach - np.maximum(starts, before)).sum())
