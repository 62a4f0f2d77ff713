"""Step 06, pre-transposed weights: lay the weights out once, so the GEMM needs no 'T' flag.

Until now the weights were stored transposed, W^T (4H x in), and the GEMM read them with BLAS's
'T' flag. BLAS libraries have a kernel per transpose combination, and in cuDNN 5's day some ran
slightly faster than others; transposing W and U once, in ``setup`` before any timing (a one-off
cost, like loading the model), let every one of the 800 layer-steps use the faster one (the
article: +13% on an M40). A naive kernel would pay a lot for the 'T' flag: consecutive threads
reading W's columns from W^T touch 32 different rows, 32 memory sectors per warp load instead of
4. Ours loads a transposed B along k and transposes it in shared memory, like cuBLAS, so it reads
the same sectors either way (notebook 06 measures both). The new layout, (in x 4H), is exactly
Keras' ``kernel``: we just stop transposing it.

As with cuBLAS, the layout decides which kernels can run: our fastest GEMMs read B as stored,
with 128-bit loads (``kernels/gemm.py``, version 5). One of them is for the recurrent GEMM,
which at small batch has too few blocks to fill a GPU: version 6 cuts K into parts, one grid
layer each, and the fused cell adds the parts as it reads them (``pointwise.lstm_cell_split``),
so the step still launches 3 kernels per layer-step. ``gemm.choose_splits`` picks the parts from
the GPU's SM count (4 at batch 64 on an H100; 1 on the simulator, and wherever the tile does not
divide the shape).

What changes: ``upload_weights``, ``setup`` (the recurrent product's parts), ``recurrent_gemm``
and ``cell_update`` (split K where there are parts).

Option ``splits``: parts of K for the recurrent GEMM (default: ``gemm.choose_splits``'s).

State added: ``splits``; where it is above 1, ``h_gates`` is (splits, B, 4H), one product per part.
"""

from __future__ import annotations

from types import SimpleNamespace

from numba import cuda

from ..kernels import gemm as gemms
from ..kernels import pointwise as pw
from .base import reject_options
from .resources import scratch
from .step05_fused_pointwise import FusedPointwise


def split_parts(h_gates) -> bool:
    """Whether a recurrent product is held in split-K parts, (splits, B, 4H)."""
    return len(h_gates.shape) == 3


class Pretransposed(FusedPointwise):
    name = "pretransposed"
    title = "weights transposed once, before the run"
    #: Whether this step's recurrent GEMM may split K (False where its product is read otherwise).
    split_recurrent = True

    def upload_weights(self, layer):
        """W (in x 4H) and U (H x 4H), row-major, Keras' own layout: the GEMM's B operand without the 'T' flag."""
        return SimpleNamespace(
            kernel=cuda.to_device(layer.kernel),
            recurrent=cuda.to_device(layer.recurrent_kernel),
            bias=cuda.to_device(layer.bias),
            transposed=False,
        )

    def setup(self, params, cfg, splits=None, **options):
        splits = self.recurrent_splits(cfg, splits)
        state = super().setup(params, cfg, **options)
        state.splits = splits
        if splits > 1:  # the recurrent product in parts, one per layer of the GEMM's grid
            state.h_gates = scratch((splits, cfg.batch, 4 * cfg.hidden))
        return state

    def recurrent_splits(self, cfg, splits) -> int:
        """Parts of K for the recurrent GEMM, (B x H) @ (H x 4H): ``splits`` checked, or this GPU's choice."""
        if not self.split_recurrent:
            reject_options(self, {} if splits is None else {"splits": splits})
            return 1
        return gemms.checked_splits(cfg.batch, 4 * cfg.hidden, cfg.hidden, splits)

    def recurrent_gemm(self, state, weights, h_prev):
        """h_prev @ U for all 4 gates; in parts of K (version 6) where ``state.h_gates`` has them."""
        if split_parts(state.h_gates):
            gemms.gemm_split(h_prev, weights.recurrent, state.h_gates, stream=state.stream)
        else:
            super().recurrent_gemm(state, weights, h_prev)

    def cell_update(self, state, weights, x_gates, h_gates, h_t):
        if split_parts(h_gates):
            pw.lstm_cell_split(x_gates, h_gates, weights.bias, state.c, h_t, stream=state.stream)
        else:
            super().cell_update(state, weights, x_gates, h_gates, h_t)


STEP = Pretransposed()
