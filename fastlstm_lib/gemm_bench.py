"""Our GEMM against cuBLAS on the LSTM's own GEMM shapes (a GPU benchmark, never a unit test).

cuBLAS is reached through PyTorch (on the GPU machine) with TF32 off, so both sides do true
FP32 math. Both are timed with CUDA events after a warm-up, on the same inputs, and our result is
checked against cuBLAS's before anything is reported.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from . import _device
from .config import LSTMConfig
from .device import device_info
from .kernels.gemm import gemm


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


def _median_ms(launch, warmup: int, repeats: int) -> float:
    from .harness import time_launches  # the one timing loop: CUDA events, warm-up first

    return float(np.median(time_launches(launch, warmup, repeats)))


def bench_gemm_vs_cublas(shapes: dict | None = None, *, warmup: int = 10, repeats: int = 100, seed: int = 0) -> list[dict]:
    """GFLOP/s of ``gemm()`` and of cuBLAS (torch.matmul, TF32 off) on each shape."""
    if _device.SIMULATOR:
        raise RuntimeError("the GEMM benchmark needs a GPU: on the CUDA simulator there is no cuBLAS and times mean nothing")
    try:
        import torch
    except ImportError as error:
        raise RuntimeError("the GEMM benchmark reaches cuBLAS through PyTorch: pip install torch") from error
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(seed)
    rows = []
    for label, (m, n, k) in (shapes or article_gemm_shapes()).items():
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        a_d, b_d, c_d = cuda.to_device(a), cuda.to_device(b), cuda.device_array((m, n), np.float32)
        a_t, b_t = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        expected = (a_t @ b_t).cpu().numpy()
        gemm(a_d, b_d, c_d)
        error = float(np.max(np.abs(c_d.copy_to_host() - expected)) / np.max(np.abs(expected)))
        if not error <= 1e-5:
            raise RuntimeError(f"our GEMM is wrong on {label} {(m, n, k)}: relative error {error:.2g}")
        ours = _median_ms(lambda: gemm(a_d, b_d, c_d), warmup, repeats)
        # torch runs on its own current stream; synchronising around it makes the events honest.
        cublas = _median_ms(lambda: (torch.cuda.synchronize(), torch.matmul(a_t, b_t), torch.cuda.synchronize()),
                            warmup, repeats)
        flop = 2 * m * n * k
        rows.append({"shape": label, "m": m, "n": n, "k": k, "ours_ms": ours, "cublas_ms": cublas,
                     "ours_gflops": flop / ours / 1e6, "cublas_gflops": flop / cublas / 1e6,
                     "fraction_of_cublas": cublas / ours, "relative_error": error})
    return [dict(row, device=device_info(), tf32=False) for row in rows]
