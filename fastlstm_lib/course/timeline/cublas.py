"""``gemm="cublas"``: a GEMM launch's blocks run at the per-SM rate cuBLAS reached in a PUBLISHED
measurement of the nearest shape on the same GPU (Baidu's DeepBench, data/cublas_sgemm_deepbench.csv).

The rate is read off the measurement through our own grid, so that the model reproduces it:
a DeepBench GEMM of FLOPs F* measured at T* would be, in our kernel's blocking on this GPU, B*
blocks; alone on S idle SMs they take ceil(B* / S) block-times (``profile/schedule.py``), so one SM
does F* / B* FLOPs in T* / ceil(B* / S): that is its rate. A recorded GEMM launch then gets
that rate per block. A small GEMM of few blocks stays on few SMs, as in cuBLAS, and another
stream can use the rest.

Shapes: DeepBench is column-major, C (M x N) = A (M x K) B (K x N), N the minibatch; our row-major
C (m x n) = A (m x k) B (k x n) with m the minibatch is the same product transposed, so
(M, N, K) = (n, m, k). The nearest row is the one of least |log M/M*| + |log N/N*| + |log K/K*|
among the GPU's rows without transposes ("N", "N"): the profile does not record our GEMMs'
layouts, so cuBLAS's slower transposed forms are not used (the M40's 2048 x 64 x 2048 took
0.300 ms as N,N and 0.421 ms as T,N: the article's pre-transposed step).
"""

from __future__ import annotations

import csv
import functools
import math
from pathlib import Path

from ...kernels.gemm import gpu_blocking

CSV = Path(__file__).resolve().parents[3] / "data" / "cublas_sgemm_deepbench.csv"


@functools.lru_cache(maxsize=1)
def measurements() -> dict:
    """{our GPU name: [(M, N, K, ms), ...]}: DeepBench's N,N FP32 rows per GPU."""
    table: dict = {}
    with CSV.open() as lines:
        for row in csv.DictReader(line for line in lines if not line.startswith("#")):
            if row["trans_a"] == "N" and row["trans_b"] == "N":
                table.setdefault(row["gpu"], []).append((int(row["m"]), int(row["n"]), int(row["k"]), float(row["ms"])))
    return table


def gemm_shape(launch) -> tuple[int, int, int]:
    """(m, n, k) of a recorded GEMM launch, from its loads (``kernels/gemm.gemm_traffic``):
    A is loaded once per block column (m k per), B once per block row (k n per), C stored once
    (once per part of K, the grid's depth, for split-K)."""
    mk = launch.loads["a"] // launch.grid[0]
    kn = launch.loads["b"] // launch.grid[1]
    mn = launch.stores["c"] // launch.grid[2]
    k = round(math.sqrt(mk * kn / mn))
    return round(mk / k), round(kn / k), k


def nearest(gpu: str, m: int, n: int, k: int) -> tuple[int, int, int, float]:
    """The DeepBench measurement (M, N, K, ms) nearest our (m, n, k) on ``gpu``."""
    rows = measurements().get(gpu)
    if not rows:
        raise ValueError(f"gemm='cublas' needs a published cuBLAS measurement on the {gpu}; "
                         f"data/cublas_sgemm_deepbench.csv has {sorted(measurements())}")
    want = (n, m, k)
    return min(rows, key=lambda r: sum(abs(math.log(a / b)) for a, b in zip(want, r[:3])))


@functools.lru_cache(maxsize=None)
def sm_rate(gpu: str, sms: int, m: int, n: int, k: int) -> tuple[float, tuple]:
    """(FLOP/s of one SM, the DeepBench row used) for cuBLAS on our (m, n, k) GEMM."""
    big_m, big_n, big_k, ms = nearest(gpu, m, n, k)
    ours_m, ours_n = big_n, big_m
    blocking = gpu_blocking(ours_m, ours_n, big_k, sms)
    blocks = -(-ours_m // blocking.bm) * -(-ours_n // blocking.bn)
    flop = 2.0 * big_m * big_n * big_k
    return flop / blocks / (ms * 1e-3 / math.ceil(blocks / sms)), (big_m, big_n, big_k, ms)
