"""gemm="cublas": a recorded GEMM launch priced by Baidu DeepBench's published cuBLAS times
(data/cublas_sgemm_deepbench.csv: the M40, T4 and V100), by shape and by layout.

DeepBench is column-major, C (M x N) = op(A) (M x K) op(B) (K x N), N the minibatch; our
row-major C (m x n) = A (m x k) op(B) (k x n), m the minibatch, is the same product transposed,
so (M, N, K) = (n, m, k), our B is DeepBench's A, and our 'T' flag on B (weights stored W^T, as
steps 02-05 keep them) is DeepBench's "T,N" row, weights as stored (step 06 on) its "N,N" row.

Two figures per GEMM, the two the timeline model (``blocks.py``) needs for any block:

- **Alone, latency-bound**: the published small-batch rows (N <= 128) show cuBLAS's time growing
  with K and barely with M: on the M40 at N = 64, N,N, 0.148, 0.146 and 0.151 us per unit of K at
  M = 1760, 2048 and 2560. So a GEMM alone takes K x tau, tau the time per unit of K of the row at
  our N and layout whose M and K are nearest ours (log scale), interpolated between published N in log-log
  (below N = 16, N = 16's; above 128, 128's: larger N are the next figure's). A per-gate GEMM
  (M = 512) takes the M = 1760 row's tau at its own batch, not a batch-32 row's rate.
- **Issue-bound**: the best FP32 rate of the GPU's large rows (N >= 1,000) in that layout: what
  cuBLAS reaches when a GEMM has work for every SM. Its SM time per block is the block's FLOPs at
  that rate's share per SM.

A recorded launch keeps our grid (the blocks one SM gets, where the other streams' blocks go), each
block alone K x tau / (waves of blocks the GPU holds at once), so that alone on the GPU the GEMM
takes max(K x tau, its FLOPs at the large rows' rate): the published time for every small-batch row
(``tests/test_timeline.py`` checks them).
"""

from __future__ import annotations

import csv
import functools
import math
from pathlib import Path

CSV = Path(__file__).resolve().parents[3] / "data" / "cublas_sgemm_deepbench.csv"
#: The largest minibatch of the latency-bound rows; rows from this one up are the issue-bound ones.
SMALL_N, LARGE_N = 128, 1000


@functools.lru_cache(maxsize=1)
def measurements() -> dict:
    """{(our GPU name, layout): [(M, N, K, ms, TFLOP/s), ...]} for DeepBench's FP32 rows with B
    untransposed, layout "N,N" or "T,N" (op(A): the weights)."""
    table: dict = {}
    with CSV.open() as lines:
        for row in csv.DictReader(line for line in lines if not line.startswith("#")):
            if row["trans_b"] == "N":
                table.setdefault((row["gpu"], f"{row['trans_a']},N"), []).append(
                    (int(row["m"]), int(row["n"]), int(row["k"]), float(row["ms"]), float(row["tflops"])))
    return table


def gemm_shape(launch) -> tuple[int, int, int]:
    """(m, n, k) of a recorded GEMM launch, from its loads (``kernels/gemm/tiles.gemm_traffic``):
    A is loaded once per block column (m k per), B once per block row (k n per), C stored once
    (once per part of K, the grid's depth, for split-K)."""
    mk = launch.loads["a"] // launch.grid[0]
    kn = launch.loads["b"] // launch.grid[1]
    mn = launch.stores["c"] // launch.grid[2]
    k = round(math.sqrt(mk * kn / mn))
    return round(mk / k), round(kn / k), k


def layout_of(launch) -> str:
    """The DeepBench layout of a recorded GEMM launch: "T,N" where it reads B with the 'T' flag."""
    return "T,N" if getattr(launch, "transpose_b", False) else "N,N"


def rows_for(gpu: str, layout: str) -> list[tuple]:
    """The published rows of ``gpu`` in ``layout``; ValueError naming the GPUs that have some."""
    rows = measurements().get((gpu, layout))
    if not rows:
        known = sorted({name for name, _ in measurements()})
        raise ValueError(f"gemm='cublas' needs a published cuBLAS measurement on the {gpu}; "
                         f"data/cublas_sgemm_deepbench.csv has {known}")
    return rows


def us_per_k(gpu: str, layout: str, big_m: int, big_n: int, big_k: int | None = None) -> float:
    """cuBLAS's latency-bound time per unit of K (microseconds) for DeepBench's (M, N, K): see the
    module docstring. At each published N the row nearest in M and K (log scale; K = M where not
    given) counts: the rows with K = 500,000, whose K cuBLAS cuts among its blocks, stand for none of ours."""
    big_k = big_m if big_k is None else big_k
    small = [row for row in rows_for(gpu, layout) if row[1] <= SMALL_N]
    batches = sorted({row[1] for row in small})
    at = min(max(big_n, batches[0]), batches[-1])

    def tau(n: int) -> float:
        m, _, k, ms, _ = min((row for row in small if row[1] == n),
                             key=lambda r: (abs(math.log(r[0] / big_m)) + abs(math.log(r[2] / big_k)), -r[0]))
        return ms * 1e3 / k

    low = max(n for n in batches if n <= at)
    high = min(n for n in batches if n >= at)
    if low == high:
        return tau(low)
    share = math.log(at / low) / math.log(high / low)
    return math.exp((1 - share) * math.log(tau(low)) + share * math.log(tau(high)))


def peak_tflops(gpu: str, layout: str) -> float:
    """The best FP32 rate of the GPU's issue-bound rows (N >= LARGE_N) in ``layout``."""
    return max(row[4] for row in rows_for(gpu, layout) if row[1] >= LARGE_N)


@functools.lru_cache(maxsize=None)
def gemm_times(gpu: str, layout: str, m: int, n: int, k: int) -> tuple[float, float]:
    """(seconds alone, latency-bound: K x tau; seconds at the large rows' rate) of cuBLAS on our
    row-major (m, n, k) GEMM on ``gpu``."""
    big_m, big_n = n, m
    alone = k * us_per_k(gpu, layout, big_m, big_n, k) * 1e-6
    return alone, 2.0 * m * n * k / (peak_tflops(gpu, layout) * 1e12)
