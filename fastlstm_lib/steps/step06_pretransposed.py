"""Step 06, pre-transposed weights: lay the weights out once, so the GEMM needs no 'T' flag.

Until now the weights were stored transposed, W^T (4H x in), and the GEMM read them with BLAS's
'T' flag. Transposing W and U once, in ``setup`` before any timing (a one-off cost, like loading
the model), lets every one of the 800 layer-steps read them in the layout it wants; the article's
reason: each standard BLAS call's work gets slightly lighter, and one transpose costs less than
transposing inside every call (the article: +13% on an M40). A naive kernel would pay a lot for
the 'T' flag: consecutive threads reading W's columns from W^T touch 32 different rows, 32 memory
sectors per warp load instead of 4. Ours loads a transposed B along k and transposes it in shared
memory, like cuBLAS, so it reads the same sectors either way (notebook 06 measures both). The new layout, (in x 4H), is exactly
Keras' ``kernel``: we just stop transposing it.

Under the ladder's GEMM policy (``gemm_policy.py``, "2016") nothing else changes: the same
kernels, grids and blocks as step 05, now reading B as stored, so with our GEMM the step gains
nothing; cuBLAS's kernels read the layouts at different speeds (DeepBench's N,N and T,N rows,
notebook 06). Only the "fast" policy uses what the layout allows: 128-bit loads of B as stored
(``kernels/gemm/v5_vector.py``) and, for the recurrent GEMM, whose C is only batch rows tall, K
cut into parts, one grid layer each (version 8, shaped for this GEMM; version 7 where only it fits,
version 6 where neither does), added up by the fused cell as it reads them
(``pointwise.lstm_cell_split``), still 3 kernels per layer-step; ``gemm.tiles.choose_splits`` picks the
parts from the GPU's SM count (8 at batch 64 on an H100; 1 on the simulator, and wherever the tile
does not divide the shape).

Under the "tf32" policy the recurrent GEMM runs on tensor cores (version 9, TF32 ``mma.sync``)
where its patch divides the shape, in ``gemm.tf32_parts`` (1 on the simulator, where the fused cell
reads the one part), and the input GEMM too (``gemm()``'s ``tf32``); elsewhere "fast"'s kernels.

What changes: ``upload_weights``; and for the "fast" and "tf32" policies ``setup`` (the recurrent
product's parts), ``recurrent_gemm`` and ``cell_update`` (split K where there are parts).

Option ``splits``: parts of K for the recurrent GEMM (default: 1 under the "2016" policy,
``gemm.tiles.choose_splits``'s under "fast", ``gemm.tf32_parts``' under "tf32" where version 9 fits).

State added: ``splits``; where it is above 1, ``h_gates`` is (splits, B, 4H), one product per part.
"""

from __future__ import annotations

from types import SimpleNamespace

from numba import cuda

from ..kernels import gemm as gemms
from ..kernels import pointwise as pw
from .base import reject_options
from .gemm_policy import offered_policy, policy_of
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
        policy = offered_policy(options.get("gemms"))
        splits = self.recurrent_splits(cfg, splits, policy)
        state = super().setup(params, cfg, **options)
        state.splits = splits
        shape = (cfg.batch, 4 * cfg.hidden, cfg.hidden)
        if splits > 1 or (policy.tf32 and gemms.tf32_launch(*shape, splits)):  # in parts, one per grid layer
            state.h_gates = scratch((splits, cfg.batch, 4 * cfg.hidden))
        return state

    def recurrent_splits(self, cfg, splits, policy) -> int:
        """Parts of K for the recurrent GEMM, (B x H) @ (H x 4H): ``splits`` checked, or the default:
        this GPU's choice where the GEMM ``policy`` splits (version 9's where it has ``tf32`` and
        version 9 fits: ``gemm.tf32_parts``), else 1."""
        if not self.split_recurrent:
            reject_options(self, {} if splits is None else {"splits": splits})
            return 1
        if splits is None and not policy.split:
            return 1
        shape = (cfg.batch, 4 * cfg.hidden, cfg.hidden)
        if policy.tf32 and splits is None and gemms.tf32_parts(*shape):
            return gemms.tf32_parts(*shape)
        if policy.tf32 and splits is not None and gemms.tf32_launch(*shape, splits):
            return splits
        return gemms.checked_splits(*shape, splits)

    def recurrent_gemm(self, state, weights, h_prev):
        """h_prev @ U for all 4 gates; in parts of K (``gemm_split``, on tensor cores where the
        policy says ``tf32`` and version 9 fits) where ``state.h_gates`` has them."""
        if split_parts(state.h_gates):
            gemms.gemm_split(h_prev, weights.recurrent, state.h_gates, tf32=policy_of(weights).tf32,
                             stream=state.stream)
        else:
            super().recurrent_gemm(state, weights, h_prev)

    def cell_update(self, state, weights, x_gates, h_gates, h_t):
        if split_parts(h_gates):
            pw.lstm_cell_split(x_gates, h_gates, weights.bias, state.c, h_t, stream=state.stream)
        else:
            super().cell_update(state, weights, x_gates, h_gates, h_t)


STEP = Pretransposed()
