"""The GEMM family: C = op(A) @ op(B), or C += op(A) @ op(B), correct at any size.

Its versions are its files, each built on the one before, each opening with what it adds and the
steps that launch it (``VERSIONS`` lists them in order; ``python -m fastlstm_lib.kernels gemm``
checks and times them; the README's table counts every step's launches at the article's size):
``v0_cublas`` (the yardstick), ``v1_tiled``, ``v2_blocked``, ``v3_exact``, ``v4_prefetch``,
``v5_vector``, ``v6_split``, ``v7_recurrent``, ``v8_warptiled``, ``v9_tf32`` (on tensor cores: TF32
``mma.sync``, compute capability 8.0+). Every version's kernel has its own name,
which SASS listings, profiles and tables show. What they share: ``tiles`` (the blockings, the shapes,
the traffic formula), ``slab`` (the unrolled slab of versions 3-8), ``pipeline`` (the register double
buffering of versions 4-8) and ``launch`` (``gemm()``, ``gemm_split()``,
``tiled_gemm()``: which version, which blocking, which grid).

``transpose_a``, ``transpose_b`` and ``strided_b`` are layouts of versions 2 and 3, not versions.
Arrays may be strided views (one gate's columns of a stacked matrix, one time step of a sequence).
"""

from __future__ import annotations

from ..family import versions
from .launch import checked_splits, exact, gemm, gemm_split, tf32_launch, tf32_parts, tiled_gemm, weight_gradient_cases  # noqa: F401
from .slab import unrolled_slab  # noqa: F401
from .tiles import (GPU_LARGE, GPU_SMALL, GPU_WIDE, SHARED_PADDING, SIMULATOR_BLOCKING, TILE, choose_blocking,  # noqa: F401
                    divides, gpu_blocking, recurrent_splits)
from .v1_tiled import tiled_gemm_kernel  # noqa: F401
from .v2_blocked import blocked_gemm_kernel  # noqa: F401
from .v3_exact import exact_gemm_kernel  # noqa: F401

#: The family's version modules, v0 (cuBLAS) first.
VERSIONS = versions(__name__)
#: Our versions' specs (cuBLAS, version 0, has no kernel of ours).
SPECS = tuple(module.SPEC for module in VERSIONS if module.SPEC.number > 0)
