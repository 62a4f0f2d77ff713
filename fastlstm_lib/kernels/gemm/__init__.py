"""The GEMM family: C = op(A) @ op(B), or C += op(A) @ op(B), correct at any size.

Its versions are its files, each built on the one before, each opening with what it adds and the
steps that launch it (``VERSIONS`` lists them in order; ``python -m fastlstm_lib.kernels gemm``
checks and times them; the README's table counts every step's launches at the article's size):
``v0_cublas`` (the yardstick), ``v1_tiled``, ``v2_blocked``, ``v3_exact``, ``v4_prefetch``,
``v5_vector``, ``v6_split``, ``v7_recurrent``. Every version's kernel has its own name, which SASS listings,
profiles and tables show. What they share: ``tiles`` (the blockings, the shapes, the traffic
formula), ``slab`` (the unrolled slab of versions 3-7), ``pipeline`` (the register double
buffering of versions 4-7) and ``launch`` (``gemm()``, ``gemm_split()``,
``tiled_gemm()``: which version, which blocking, which grid).

``transpose_a``, ``transpose_b`` and ``strided_b`` are layouts of versions 2 and 3, not versions.
Arrays may be strided views (one gate's columns of a stacked matrix, one time step of a sequence).
"""

from __future__ import annotations

from ..family import versions
from .launch import (WEIGHT_GRADIENT, checked_splits, exact, gemm, gemm_split, split_fits, tiled_gemm,  # noqa: F401
                     vector_launch, weight_gradient_cases)
from .slab import owned, patch_store, unrolled_slab  # noqa: F401
from .tiles import (B_LAYOUTS, GPU_LARGE, GPU_SMALL, GPU_WIDE, SHAPES, SHARED_PADDING, SIMULATOR_BLOCKING,  # noqa: F401
                    SPLIT_MIN_SLABS, SPLIT_WARPS_PER_SM, TILE, Blocking, choose_blocking, choose_splits, divides, gemm_shape,
                    gemm_traffic, gpu_blocking, multiprocessors, recurrent_splits, split_plan, vector_fits, vector_width)
from .v1_tiled import tiled_gemm_kernel  # noqa: F401
from .v2_blocked import blocked_gemm_kernel  # noqa: F401
from .v3_exact import exact_gemm_kernel  # noqa: F401
from .v4_prefetch import prefetch_gemm_kernel  # noqa: F401
from .v5_vector import vector_gemm_kernel  # noqa: F401
from .v6_split import split_gemm_kernel  # noqa: F401
from .v7_recurrent import recurrent_gemm_kernel  # noqa: F401

#: The family's version modules, v0 (cuBLAS) first.
VERSIONS = versions(__name__)
#: Our versions' specs (cuBLAS, version 0, has no kernel of ours).
SPECS = tuple(module.SPEC for module in VERSIONS if module.SPEC.number > 0)
