"""Our GEMM against cuBLAS on the LSTM's own GEMM shapes (a GPU benchmark, never a unit test).

cuBLAS is reached through PyTorch (on the GPU machine) with TF32 off, so both sides do true
FP32 math. Both are timed with CUDA events after a warm-up, on the same inputs, and our result is
checked against cuBLAS's before anything is reported.

A one-step GEMM of the LSTM runs for a few microseconds, less than Python takes to issue it. So
each timed call issues ``INNER`` launches back to back and the time is divided by them, and the
host's issue time per launch is recorded beside it: where it reaches the GPU time, the GPU was
waiting for the host, and the row says ``host_bound`` (the kernel itself is faster than shown).

``time_b_layouts`` times our GEMM alone with its B operand in each layout it reads (notebook 06).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .runtime import simulator
from .checks import check_int
from .config import LSTMConfig
from .runtime.device import device_info
from .kernels.gemm import choose_blocking, exact, gemm
from .timing import issue_and_run_times


def article_gemm_shapes(cfg: LSTMConfig | None = None) -> dict:
    """(M, N, K) of the GEMMs the ladder runs at ``cfg`` (the article's by default)."""
    cfg = cfg or LSTMConfig.article()
    B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
    return {
        "recurrent (one step)": (B, 4 * H, H),
        "input, one step": (B, 4 * H, cfg.input_size),
        "input, 5 steps (wavefront chunk)": (5 * B, 4 * H, H),
        "input, all steps": (T * B, 4 * H, cfg.input_size),
    }


#: Launches per timed call: enough to amortise the events and the first launch's latency.
INNER = 20


def per_launch_times(launch, warmup: int, repeats: int) -> dict:
    """{"device_ms", "issue_ms", "host_bound"}: medians per launch of ``launch()`` issued INNER
    times back to back between CUDA events, and the host's time to issue one."""
    def launches():
        for _ in range(INNER):
            launch()

    times = issue_and_run_times(launches, warmup=warmup, repeats=repeats)
    device = float(np.median(times["device"] if times["device"] is not None else times["wall"])) / INNER
    issue = float(np.median(times["issue"])) / INNER
    return {"device_ms": device, "issue_ms": issue, "host_bound": issue >= 0.9 * device}


def cublas_matmul(a: np.ndarray, b: np.ndarray):
    """A callable that runs cuBLAS's a @ b (torch.matmul, TF32 off, into a C kept on the GPU) on
    the legacy default stream, which Numba's CUDA events are recorded on; and the result it
    computes, for a check. RuntimeError without torch, or if torch queues on another stream (the
    two clocks would not see each other)."""
    for name, array in (("a", a), ("b", b)):
        if not isinstance(array, np.ndarray) or array.ndim != 2 or array.dtype != np.float32:
            raise TypeError(f"{name} must be a 2-D float32 NumPy array, got {getattr(array, 'dtype', type(array).__name__)} "
                            f"of shape {getattr(array, 'shape', None)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a @ b needs a's columns to equal b's rows, got a {a.shape} and b {b.shape}")
    try:
        import torch
    except ImportError as error:
        raise RuntimeError("cuBLAS is reached through PyTorch here: pip install torch") from error
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch's current stream is not the legacy default stream: CUDA events recorded "
                           "by Numba would not time its matmul")
    a_t, b_t = torch.from_numpy(np.ascontiguousarray(a)).cuda(), torch.from_numpy(np.ascontiguousarray(b)).cuda()
    c_t = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device="cuda")
    return (lambda: torch.matmul(a_t, b_t, out=c_t)), (a_t @ b_t).cpu().numpy()


def bench_gemm_vs_cublas(shapes: dict | None = None, *, warmup: int = 10, repeats: int = 100, seed: int = 0) -> list[dict]:
    """GFLOP/s of ``gemm()`` and of cuBLAS (torch.matmul, TF32 off) on each shape."""
    if simulator.SIMULATOR:
        raise RuntimeError("the GEMM benchmark needs a GPU: on the CUDA simulator there is no cuBLAS and times mean nothing")
    rng = np.random.default_rng(seed)
    rows = []
    for label, (m, n, k) in (shapes or article_gemm_shapes()).items():
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        a_d, b_d = cuda.to_device(a), cuda.to_device(b)
        c_d = cuda.to_device(np.full((m, n), np.nan, np.float32))  # poisoned: every element must be written
        cublas_launch, expected = cublas_matmul(a, b)

        def checked(when: str) -> float:
            error = float(np.max(np.abs(c_d.copy_to_host() - expected)) / np.max(np.abs(expected)))
            if not error <= 1e-5:  # NaN fails too
                raise RuntimeError(f"our GEMM is wrong on {label} {(m, n, k)} {when}: relative error {error:.2g}")
            return error

        gemm(a_d, b_d, c_d)
        error = checked("before timing")
        ours = per_launch_times(lambda: gemm(a_d, b_d, c_d), warmup, repeats)
        cublas = per_launch_times(cublas_launch, warmup, repeats)
        error = max(error, checked("after timing"))
        blocking = choose_blocking(m, n, k)
        flop = 2 * m * n * k
        rows.append({"shape": label, "m": m, "n": n, "k": k, "ours_ms": ours["device_ms"],
                     "cublas_ms": cublas["device_ms"], "ours_issue_ms": ours["issue_ms"],
                     "cublas_issue_ms": cublas["issue_ms"], "ours_host_bound": ours["host_bound"],
                     "cublas_host_bound": cublas["host_bound"],
                     "ours_gflops": flop / ours["device_ms"] / 1e6, "cublas_gflops": flop / cublas["device_ms"] / 1e6,
                     "fraction_of_cublas": cublas["device_ms"] / ours["device_ms"], "relative_error": error,
                     "blocking": f"{blocking.bm}x{blocking.bn}x{blocking.bk}, {blocking.tm}x{blocking.tn} per thread",
                     "exact_tile": exact(blocking, m, n, k)})
    return [dict(row, device=device_info(), tf32=False) for row in rows]


#: The layouts of B that ``time_b_layouts`` compares: (name, stored transposed, strided_b).
B_LAYOUTS = (("B stored (K, N)", False, False),
             ("B stored (N, K), transpose_b, loaded along k", True, False),
             ("B stored (N, K), transpose_b, strided_b=True (naive)", True, True))


def time_b_layouts(shapes: dict | None = None, *, warmup: int = 10, repeats: int = 100, seed: int = 0) -> list[dict]:
    """Milliseconds of ``gemm()`` per (M, N, K) shape (the article's LSTM shapes by default) with
    B in each layout of ``B_LAYOUTS``, on the same values: one row per shape and layout.

    Every variant is checked against float64 NumPy before it is timed (``per_launch_times``:
    CUDA events around INNER launches after ``warmup`` runs; on the simulator a wall clock, and
    ``times_meaningful`` is False).
    """
    warmup = check_int("warmup", warmup, minimum=0)
    repeats = check_int("repeats", repeats)
    shapes = article_gemm_shapes() if shapes is None else shapes
    if not isinstance(shapes, dict) or not shapes:
        raise TypeError(f"shapes must be a non-empty dict {{label: (M, N, K)}}, got {shapes!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for label, shape in shapes.items():
        if not isinstance(shape, (tuple, list)) or len(shape) != 3:
            raise ValueError(f"shape {label!r} must be (M, N, K), got {shape!r}")
        m, n, k = (check_int(f"{label} {axis}", value) for axis, value in zip("MNK", shape))
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        expected = a.astype(np.float64) @ b
        a_d, c_d = cuda.to_device(a), cuda.device_array((m, n), np.float32)
        for layout, transposed, strided in B_LAYOUTS:
            b_d = cuda.to_device(np.ascontiguousarray(b.T) if transposed else b)

            def launch(b_d=b_d, transposed=transposed, strided=strided):
                gemm(a_d, b_d, c_d, transpose_b=transposed, strided_b=strided)

            launch()
            error = float(np.max(np.abs(c_d.copy_to_host() - expected)) / np.max(np.abs(expected)))
            if not simulator.values_computed():  # the fake GPU (a test mode) runs no kernel
                error = None
            elif not error <= 1e-5:
                raise RuntimeError(f"gemm() with {layout} is wrong on {label} {(m, n, k)}: relative error {error:.2g}")
            times = per_launch_times(launch, warmup, repeats)
            rows.append({"shape": label, "m": m, "n": n, "k": k, "layout": layout,
                         "time_ms": {"median": times["device_ms"]}, "issue_ms": times["issue_ms"],
                         "host_bound": times["host_bound"],
                         "gflops": 2 * m * n * k / times["device_ms"] / 1e6, "relative_error": error,
                         "times_meaningful": not simulator.SIMULATOR})
    device = device_info()
    return [dict(row, device=device) for row in rows]
