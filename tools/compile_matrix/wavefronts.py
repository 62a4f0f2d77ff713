"""Shared-memory wavefronts per FFMA of a blocked GEMM's main loop, measured: the kernel run once on
Numba's CUDA simulator with its shared arrays recording every read, each warp's reads of one
instruction priced by the bank rules below, divided by the FFMAs the warp does.

The SM's shared memory serves one wavefront a cycle (32 banks of 4 bytes, 128 bytes); what a warp's
shared load costs depends on the addresses its lanes read, which the compiled code does not say
(they come from threadIdx at run time) and the simulator does. The measurement (``measure``):

- **reads**: ``cuda.shared.array`` returns an array (``Traced``) that records each element read:
  its simulated thread (block, linear index), its site (source file and line, and which shared
  array) and its word (4-byte offset in the array);
- **accesses**: a thread's consecutive reads at one site of neighbouring words form one vector
  access of 1, 2 or 4 words (32, 64 or 128 bits), cut where the first word is not a multiple of
  the width (``vector_accesses``): what NVVM merges for version 7's runs and what ``load_vector``
  (``kernels/vector.py``) issues as one load on a GPU and as scalar reads on the simulator. This
  assumes every shared array starts on a 16-byte boundary (versions 5-8 declare it:
  ``SHARED_ALIGN``), and the compile matrix's counts check it (tests/test_wavefronts.py: accesses
  per FFMA equal the SASS's ``loop_shared_loads / loop_ffma``);
- **instructions**: the n-th access of each lane of a warp at one site is one instruction (the
  GEMMs' slabs have no divergence);
- **wavefronts** per instruction (``wavefronts``): 32-bit, the warp at once, as many as the bank
  holding the most distinct words among its lanes' (a broadcast: one); 64-bit, each half-warp so,
  its lanes' two words each (no packing rule: none is measured and cited for it); 128-bit, the rule
  of tests/test_gemm_warptiled.py (``lds128_wavefronts``).

``measure_rows`` measures the compile matrix's blocked GEMM rows (``MEASURED``) at their own blocking, one
block over two slabs of K: wavefronts over every warp, over their FFMA instructions (tm x tn x K a warp). Only
loads count: the slab's stores to shared memory (STS) are not in the column. It runs in a process on
the simulator (``in_simulator``): no GPU and no compiler needed, and the same for every architecture.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

import numpy as np

#: The GEMM versions whose compile-matrix rows get the column: the blocked kernels that read their
#: operands from shared memory in unrolled slabs. Versions 2 and 4 read as version 3 does (its layout);
#: 0 (cuBLAS) and 1 (a tile per thread, no blocking) are not blocked; 9 reads by mma.sync fragments.
MEASURED = (3, 5, 6, 7, 8)
#: The folders the simulator's process imports from: tools/ and the project.
TOOLS = Path(__file__).resolve().parents[1]
ROOT = TOOLS.parent
WARP, BANKS = 32, 32


def banked_passes(words) -> int:
    """Passes of one group of lanes that read ``words`` (4-byte word indices, any repeats): as many as
    the bank holding the most distinct words (a broadcast of one word: one pass; none read: none)."""
    words = list(words)
    if any(isinstance(word, bool) or not isinstance(word, (int, np.integer)) or word < 0 for word in words):
        raise ValueError(f"words must be non-negative ints, got {words!r}")
    banks = defaultdict(set)
    for word in words:
        banks[word % BANKS].add(word)
    return max((len(held) for held in banks.values()), default=0)


def lds128_wavefronts(words) -> float:
    """Wavefronts of one warp's LDS.128, ``words`` the 16-byte word each of its 32 lanes reads (a
    list in lane order, or a dict lane -> word for a part of a warp): a pass per quarter-warp, as many
    as its most-used bank quad (4 banks, a 16-byte word) has distinct words; the passes halved where
    every lane pair (l, l^1), or every (l, l^2), reads one address (tests/test_gemm_warptiled.py's
    rule: NVIDIA's developer forum, "Unexpected shared memory bank conflict", CC 7.x, and "Discrepancy
    in LDS.128 wavefronts", measured on CC 8.6 and 9.0)."""
    lanes = dict(enumerate(words)) if isinstance(words, (list, tuple)) else dict(words)
    if not lanes or any(not 0 <= lane < WARP for lane in lanes):
        raise ValueError(f"words must be the words of 1 to 32 lanes (0-31), got {words!r}")
    passes = 0
    for quarter in range(4):
        quads = defaultdict(set)
        for lane in range(quarter * 8, quarter * 8 + 8):
            if lane in lanes:
                quads[lanes[lane] % 8].add(lanes[lane])
        passes += max((len(held) for held in quads.values()), default=0)
    packed = any(all(lanes[lane] == lanes[lane ^ pair] for lane in lanes if lane ^ pair in lanes) for pair in (1, 2))
    return passes / 2 if packed else passes


def wavefronts(width: int, lanes: dict) -> float:
    """Wavefronts of one warp's shared load of ``width`` words (1, 2, 4: 32, 64, 128 bits), ``lanes``:
    lane -> the first 4-byte word it reads (the module docstring's rules)."""
    if width not in (1, 2, 4):
        raise ValueError(f"width must be 1, 2 or 4 (words), got {width!r}")
    if not isinstance(lanes, dict) or not lanes or any(not 0 <= lane < WARP for lane in lanes):
        raise ValueError(f"lanes must be a non-empty dict of lane (0-31) -> word, got {lanes!r}")
    if width == 1:
        return banked_passes(lanes.values())
    if width == 2:
        return sum(banked_passes([word + v for lane, word in lanes.items() if lane // 16 == half for v in (0, 1)])
                   for half in (0, 1))
    return lds128_wavefronts({lane: word // 4 for lane, word in lanes.items()})


class Traced(np.ndarray):
    """A shared array of the simulator that reports each element read to ``_record(site, word)``."""

    def __array_finalize__(self, parent):
        self._record = getattr(parent, "_record", None)
        self._name = getattr(parent, "_name", None)
        self._root = getattr(parent, "_root", None)
        here = self.__array_interface__["data"][0]
        self._offset = 0 if self._root is None else here - self._root

    def __getitem__(self, index):
        value = super().__getitem__(index)
        if isinstance(value, np.ndarray) or self._record is None:  # a view (tile[0]): nothing read yet
            return value
        index = index if isinstance(index, tuple) else (index,)
        byte = self._offset + sum(int(i) * stride for i, stride in zip(index, self.strides))
        caller = sys._getframe(1)
        self._record((caller.f_code.co_filename, caller.f_lineno, self._name), byte // self.itemsize)
        return value


class Recorder:
    """Every shared read of one launch, per simulated thread: (block, thread) -> [(site, word)]."""

    def __init__(self):
        self.reads = defaultdict(list)
        self._lock = threading.Lock()
        self._arrays = 0

    def record(self, site, word) -> None:
        thread = threading.current_thread()
        self.reads[tuple(thread.blockIdx), thread.thread_id].append((site, word))

    def array(self, shared, shape, dtype, alignment=None):
        """``FakeCUDAShared.array``, traced: one array per declaring line, as the simulator keeps them
        (alignment: the simulator has none to give; the words are counted from the array's start)."""
        from fastlstm_lib.runtime import numba_compat

        if shape == 0:
            raise ValueError("dynamic shared memory is not traced")
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with self._lock:
            found = shared._allocations.get(caller)
            if found is None:
                plain = np.zeros(shape, numba_compat.as_numpy_dtype(dtype))
                found = plain.view(Traced)
                found._record, found._name, found._root = self.record, self._arrays, plain.__array_interface__["data"][0]
                found._offset = 0
                self._arrays += 1
                shared._allocations[caller] = found
        return found


def vector_accesses(reads) -> list:
    """One thread's reads [(site, word)] as its accesses [(site, first word, width)]: consecutive
    reads at one site of neighbouring words, up to 4, cut so each starts at a multiple of its width."""
    if not isinstance(reads, list):
        raise TypeError(f"reads must be a list of (site, word), got {type(reads).__name__}")
    found, i = [], 0
    while i < len(reads):
        site, word = reads[i]
        run = 1
        while run < 4 and i + run < len(reads) and reads[i + run] == (site, word + run):
            run += 1
        width = next(w for w in (4, 2, 1) if w <= run and word % w == 0)
        found.append((site, word, width))
        i += width
    return found


def instructions(recorder: Recorder) -> dict:
    """(block, warp, site, n, width) -> {lane: first word}: the n-th access at ``site`` of each lane of
    a warp, one shared load instruction."""
    found = defaultdict(dict)
    for (block, thread), reads in recorder.reads.items():
        seen = defaultdict(int)
        for site, word, width in vector_accesses(reads):
            found[block, thread // WARP, site, seen[site], width][thread % WARP] = word
            seen[site] += 1
    for (block, warp, site, n, width) in found:
        for other in (1, 2, 4):
            if other != width and (block, warp, site, n, other) in found:
                raise RuntimeError(f"the lanes of warp {warp} read {site} {n} at different widths: divergent code")
    return dict(found)


def measure(kernel, grid, block, args) -> dict:
    """Launch ``kernel[grid, block](*args)`` on the simulator with its shared arrays traced: {"loads":
    shared load instructions of all its warps, "wavefronts": their wavefronts, "by_width": width ->
    [loads, wavefronts]}."""
    from numba.cuda.simulator import kernelapi

    from fastlstm_lib import is_simulator

    if not isinstance(args, (list, tuple)):
        raise TypeError(f"args must be a list of the kernel's arguments, got {type(args).__name__}")
    if not is_simulator():
        raise RuntimeError("measuring shared reads needs Numba's CUDA simulator: run it through in_simulator()")
    recorder, shared = Recorder(), kernelapi.FakeCUDAShared
    original = shared.array
    shared.array = lambda self, shape, dtype, alignment=None: recorder.array(self, shape, dtype, alignment)
    try:
        kernel[grid, block](*args)
    finally:
        shared.array = original
    by_width = {}
    for (_, _, _, _, width), lanes in instructions(recorder).items():
        loads, waves = by_width.get(width, (0, 0))
        by_width[width] = (loads + 1, waves + wavefronts(width, lanes))
    return {"loads": sum(n for n, _ in by_width.values()), "wavefronts": sum(w for _, w in by_width.values()),
            "by_width": {width: list(counts) for width, counts in sorted(by_width.items())}}


def gemm_builds() -> dict:
    """Row name -> ``Build`` of every row of the GEMM versions in ``MEASURED``."""
    from fastlstm_lib.kernels.versions import every

    return {build.row: build for spec in every() if spec.family == "gemm" and spec.number in MEASURED
            for build in spec.builds()}


def measure_row(row: str) -> dict:
    """``measure`` of a GEMM row's kernel at its blocking: one block over K = two slabs (A ones of
    (bm, K); B ones, square, as stored (K, N) or transposed; C, or split-K's one part), with "ffma": its
    warps' FFMA instructions (tm x tn x K per warp) and "per_ffma": wavefronts per FFMA, over every warp."""
    from numba import cuda

    builds = gemm_builds()
    if row not in builds:
        raise ValueError(f"row must be one of {sorted(builds)}, got {row!r}")
    kernel, signature = builds[row].make()
    bm, bn, bk, tm, tn = blocking = builds[row].blocking
    k = 2 * bk
    side = max(k, bn)  # B as (K, N) or as (N, K): the kernel reads within either
    c = np.zeros((1, bm, bn) if signature[2].ndim == 3 else (bm, bn), np.float32)
    args = [cuda.to_device(np.ones(shape, np.float32)) for shape in ((bm, k), (side, side))]
    found = measure(kernel, (1, 1, 1), blocking.threads, args + [cuda.to_device(c), False])
    found["ffma"] = blocking.threads // WARP * tm * tn * k
    found["per_ffma"] = round(found["wavefronts"] / found["ffma"], 4)
    return found


def measure_rows(*rows: str) -> dict:
    """Row -> ``measure_row``, for ``rows`` (default: every measured row)."""
    return {row: measure_row(row) for row in (rows or gemm_builds())}


def in_simulator(call: str, *args: str, path=(), timeout: float = 1200) -> object:
    """``module:function(*args)``'s JSON result, run in a process of its own on the simulator
    (``NUMBA_ENABLE_CUDASIM=1``), the project, tools/ and ``path`` on its PYTHONPATH."""
    if not isinstance(call, str) or call.count(":") != 1:
        raise ValueError(f"call must be 'module:function', got {call!r}")
    env = {name: value for name, value in os.environ.items() if name not in ("FASTLSTM_FAKE_GPU", "NUMBA_FORCE_CUDA_CC")}
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TOOLS), *map(str, path)]
                                        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    done = subprocess.run([sys.executable, "-m", "compile_matrix.wavefronts", call, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{call} on the simulator failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str]) -> None:
    """``module:function [ARG...]``: print the function's result as JSON on the last line of stdout."""
    import importlib

    import fastlstm_lib  # the simulator, chosen before anything imports numba.cuda

    if len(argv) < 1 or argv[0].count(":") != 1:
        raise SystemExit("usage: NUMBA_ENABLE_CUDASIM=1 python -m compile_matrix.wavefronts module:function [ARG...]")
    if not fastlstm_lib.is_simulator():
        raise SystemExit("compile_matrix.wavefronts runs on the simulator: set NUMBA_ENABLE_CUDASIM=1")
    module, function = argv[0].split(":")
    print(json.dumps(getattr(importlib.import_module(module), function)(*argv[1:])))


if __name__ == "__main__":
    main(sys.argv[1:])
