"""A small problem for the profilers (stage 8): the recurrent GEMM and one persistent layer.

``python3 tools/gpurun/small_problem.py``: the article's recurrent GEMM (64 x 2048 x 512) and the
persistent kernel at hidden 512, batch 64, 5 steps, 1 layer, for Nsight Compute; ``--tiny``: odd
sizes, for compute-sanitizer (which runs kernels 10 to 100 times slower). Each is checked.
"""

from __future__ import annotations

import sys

import numpy as np


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import fastlstm_lib as fl
    from numba import cuda

    from fastlstm_lib.kernels.gemm import gemm

    tiny = "--tiny" in argv
    m, n, k = (3, 4 * 13, 13) if tiny else (64, 4 * 512, 512)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    gemm(cuda.to_device(a), cuda.to_device(b), c)
    error = fl.relative_error(c.copy_to_host(), a.astype(np.float64) @ b)
    cfg = fl.LSTMConfig(batch=3, seq_len=3, input_size=7, hidden=13, layers=1) if tiny else \
        fl.LSTMConfig(batch=64, seq_len=5, input_size=512, hidden=512, layers=1)
    x, params = fl.random_input(cfg, seed=1), fl.init_params(cfg, seed=0)
    y = fl.steps.get("persistent").forward(x, params)
    persistent_error = fl.relative_error(y, fl.reference_forward(x, params))
    print(f"gemm {m}x{n}x{k}: relative error {error:.2e}; persistent {cfg}: relative error {persistent_error:.2e}")
    return 0 if error <= 1e-5 and persistent_error <= fl.RTOL else 1


if __name__ == "__main__":
    sys.exit(main())
