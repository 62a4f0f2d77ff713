"""gemm="cublas": a recorded GEMM launch priced by Baidu DeepBench's published cuBLAS times
(data/cublas_sgemm_deepbench.csv: the M40, T4 and V100). DeepBench is column-major: our
(m, n, k) is its (M, N, K) = (n, m, k), our 'T' flag its "T,N" rows. A GEMM alone takes K x tau
(``us_per_k``), at least its FLOPs at the large rows' rate (``peak_tflops``).
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
    """(m, n, k) of a recorded GEMM launch, from its loads (``kernels/gemm/tiles.gemm_traffic``)."""
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
    """cuBLAS's latency-bound microseconds per unit of K for DeepBench's (M, N, K) (module docstring)."""
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
