"""GEMM version 0, cuBLAS: the yardstick the kernel runner sets every version beside,
as SGEMM_CUDA's runner sets its kernels beside cuBLAS.

It is reached through PyTorch (on the GPU machine) with TF32 off, so that it does true FP32 math
like our kernels, and it queues on the legacy default stream, where the runner's CUDA events are
recorded. From compute capability 8.0 each shape also runs with TF32 on (a variant, checked to
``TOLERANCES["tf32"]``): the yardstick of version 9, the tensor-core GEMM. ``unavailable()`` says
why it cannot run here (no torch, no GPU), or None.
"""

from __future__ import annotations

import numpy as np

from ...numerics import TOLERANCES
from ...runtime.device import DEVICE
from ..case import Case, Unavailable
from ..spec import Spec
from .tiles import SHAPES, operands

#: The version's one line, as the family files write theirs.
WHAT = "cuBLAS's SGEMM (torch.matmul, TF32 off): the yardstick, as SGEMM_CUDA's kernel 0"


def unavailable() -> str | None:
    """Why cuBLAS cannot be timed here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed: cuBLAS is reached through torch.matmul"
    if not torch.cuda.is_available():
        return "torch sees no GPU"
    return None


def cublas_matmul(a: np.ndarray, b: np.ndarray, tf32: bool = False):
    """A callable that runs cuBLAS's a @ b (torch.matmul into a C kept on the GPU) on the legacy
    default stream, which Numba's CUDA events are recorded on; a function returning that C on the
    host, for a check; and one that sets torch's TF32 switch to ``tf32`` (the case's ``reset``: set
    before each check, which timing follows, so no switch runs inside the timed launches). TypeError/ValueError for bad operands before
    any work; RuntimeError without torch, or if torch queues on another stream (the two clocks would
    not see each other)."""
    if not isinstance(tf32, bool):
        raise TypeError(f"tf32 must be a bool, got {type(tf32).__name__} {tf32!r}")
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
    c_t = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=torch.float32, device="cuda")

    def switch():
        torch.backends.cuda.matmul.allow_tf32 = tf32

    def launch():
        torch.matmul(a_t, b_t, out=c_t)

    return launch, (lambda: c_t.cpu().numpy()), switch


class _Fetched:
    """An output that is not a Numba array (cuBLAS's, in torch): ``copy_to_host`` as Case reads it."""

    def __init__(self, fetch):
        self.copy_to_host = fetch


def case(size: str, rng) -> list:
    """The runner's cases: cuBLAS's C = A @ B at every shape of ``size``; ``Unavailable`` without a GPU or torch."""
    why = unavailable() if DEVICE.timed else "cuBLAS needs a real GPU (the simulator and a stand-in driver have none)"
    if why:
        raise Unavailable(why)
    import torch

    modes = (False, True) if torch.cuda.get_device_capability() >= (8, 0) else (False,)
    cases = []
    for m, n, k in SHAPES[size]:
        a, b, want = operands(rng, m, n, k)
        for tf32 in modes:
            launch, fetch, switch = cublas_matmul(a, b, tf32=tf32)
            cases.append(Case(f"{m} x {n} x {k}", launch, {"c": _Fetched(fetch)}, {"c": want},
                              2.0 * m * n * k, 4.0 * (m * k + k * n + m * n), reset=switch,
                              **({"rtol": TOLERANCES["tf32"], "variant": "TF32 on (version 9's yardstick)"} if tf32 else {})))
    return cases


SPEC = Spec("gemm", 0, "cublas", WHAT, None, None)
