"""Coalescing, measured on the simulator (notebook 06): the 32-byte sectors each warp-wide load
touches, from instrumented runs at a GPU's launch geometry (a child process on a GPU machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from ...runtime.device import DEVICE

SECTOR_BYTES = 32
WARP = 32


def sectors_per_warp_load(measured, argument: str) -> list[int]:
    """Sectors touched by each warp-wide load of ``argument`` in a launch (``run_instrumented``)."""
    if argument not in measured.arrays:
        raise ValueError(f"argument must be one of the launch's arrays ({', '.join(measured.arrays)}), got {argument!r}")
    base = measured.arrays[argument].root
    per_thread = defaultdict(list)
    for write, address, arg, thread in measured.log:
        if not write and arg == argument:
            per_thread[thread].append(address)
    warp_loads = defaultdict(set)
    for (block, thread), addresses in per_thread.items():
        for i, address in enumerate(addresses):
            warp_loads[(block, thread // WARP, i)].add((address - base) // SECTOR_BYTES)
    return [len(sectors) for _, sectors in sorted(warp_loads.items())]


def _sectors_row(load: str, layout: str, counts: list[int], itemsize: int = 4) -> dict:
    mean = float(np.mean(counts))
    return {"load": load, "layout": layout, "sectors_per_warp_load": mean, "min": int(min(counts)),
            "max": int(max(counts)), "warp_loads": len(counts),
            # 32 threads x 4 bytes asked for, out of the sectors' bytes moved
            "efficiency": WARP * itemsize / (SECTOR_BYTES * mean)}


def _gemm_cases() -> list[dict]:
    from numba import cuda

    from ...kernels import gemm
    from .instrument import run_instrumented

    m, n, k = 64, 64, 16  # one 64 x 64 block, two k-slabs of 8
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    rows = []
    cases = [("GEMM operand B, stored (K, N)", "plain", rng.standard_normal((k, n)), False, False),
             ("GEMM operand B, stored (N, K), transpose_b", "transposed, loaded along k (default)",
              rng.standard_normal((n, k)), True, False),
             ("GEMM operand B, stored (N, K), transpose_b", "transposed, strided_b=True (naive)",
              rng.standard_normal((n, k)), True, True)]
    for load, layout, b, transpose_b, strided_b in cases:
        kernel = gemm.blocked_gemm_kernel(gemm.GPU_LARGE, transpose_b, strided_b)
        c = cuda.device_array((m, n), dtype=np.float32)
        measured = run_instrumented(kernel, ((1, 1), gemm.GPU_LARGE.threads),
                                    (cuda.to_device(a), cuda.to_device(b.astype(np.float32)), c, False))
        rows.append(_sectors_row(load, layout, sectors_per_warp_load(measured, "b")))
        if not transpose_b:
            rows.append(_sectors_row("GEMM operand A, stored (M, K)", "row-major, loaded along k",
                             sectors_per_warp_load(measured, "a")))
    return rows


def _pointwise_cases() -> list[dict]:
    from numba import cuda

    from ...kernels import pointwise
    from ...kernels.geometry import GPU_POINTWISE_THREADS, blocks_for
    from .instrument import run_instrumented

    batch, hidden = 2, 512  # the article's hidden size: each gate's row is 512 floats
    rng = np.random.default_rng(1)
    stacked = cuda.to_device(rng.standard_normal((batch, 4 * hidden)).astype(np.float32))
    other = cuda.to_device(rng.standard_normal((batch, 4 * hidden)).astype(np.float32))
    out = cuda.device_array((batch, hidden), dtype=np.float32)
    grid = (blocks_for(batch * hidden, GPU_POINTWISE_THREADS), GPU_POINTWISE_THREADS)
    gate = slice(hidden, 2 * hidden)
    added = run_instrumented(pointwise._add, grid, (stacked[:, gate], other[:, gate], out))
    c = cuda.to_device(np.zeros((batch, hidden), np.float32))
    bias = cuda.to_device(np.zeros(4 * hidden, np.float32))
    cell = run_instrumented(pointwise._lstm_cell, grid, (stacked, other, bias, c, out))
    return [_sectors_row("element-wise add (baseline)", "one gate's columns of a (B, 4H) matrix",
                 sectors_per_warp_load(added, "a")),
            _sectors_row("fused LSTM cell (x_gates)", "(B, 4H), 4 gates per thread", sectors_per_warp_load(cell, "x_gates"))]


def measure() -> list[dict]:
    """Sectors per warp-wide load of the GEMM's operands and of the element-wise kernels; on the
    simulator here, or in a simulator child process when this process drives a GPU."""
    if DEVICE.small:
        return _gemm_cases() + _pointwise_cases()
    code = "import json; from fastlstm_lib.course.profile import sectors; print(json.dumps(sectors.measure()))"
    package_root = str(Path(__file__).resolve().parents[3])  # importable in the child as it is here
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the simulator child process failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
