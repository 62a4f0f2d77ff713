"""How a ladder pass launches its GEMMs: one policy for the whole pass, the same in every step.

In 2016 every step of the article called the same cuBLAS; only how it was called changed. So do
ours: each step's GEMMs go through the policy the pass was set up with (the steps' option
``gemms``), and a step changes what it calls, never which GEMM kernels a call gets.

- ``"2016"`` (the default): as cuDNN 5's cuBLAS ran them: one kernel per shape, its tile picked from
  the shape and the GPU's SMs (``gemm.gpu_blocking``), 32-bit loads (exact-tile version 3; version
  2 at odd sizes), K never split. A GEMM too small to fill the GPU leaves SMs idle: what the
  article's streams and wavefront fill.
- ``"fast"``: today's kernels where the layouts allow: 128-bit loads (version 5: the tile divides
  the shape, no 'T' flag, so from step 06 on), and the recurrent GEMM's K cut in parts until its
  grid fills the GPU (version 8, shaped for it with warp tiles; version 7 where only it fits,
  version 6 where neither does; ``gemm.choose_splits``), added up by the fused cell. Split-K takes
  the idle SMs the wavefront was meant to fill (notebook 08). Step 09's persistent kernel keeps U in
  registers (persistent version 2) where its plan fits the GPU. The GPU run's fastest configuration.

Each layer's uploaded weights carry the policy (``weights.gemms``) beside their layout
(``weights.transposed``): the two things the GEMM calls read from them.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class GemmPolicy:
    name: str
    vector: bool  # version 5's 128-bit loads where the tile and layouts allow
    split: bool  # the recurrent GEMM's K in parts (version 8, else 7, else 6) where choose_splits says so
    registers: bool  # step 09's persistent kernel with U in registers (version 2) where its plan fits
    what: str


POLICIES = {
    "2016": GemmPolicy("2016", vector=False, split=False, registers=False,
                       what="one kernel per shape, 32-bit loads, K whole (exact-tile version 3), as cuBLAS in 2016"),
    "fast": GemmPolicy("fast", vector=True, split=True, registers=True,
                       what="128-bit loads (version 5) where the layouts allow; the recurrent GEMM's K split (version 8, "
                            "else 7, else 6); the persistent step's U in registers (persistent version 2)"),
}
DEFAULT = "2016"


def checked_policy(gemms) -> GemmPolicy:
    """The policy named ``gemms`` (None: the default); ValueError/TypeError naming the choices."""
    if gemms is None:
        return POLICIES[DEFAULT]
    if not isinstance(gemms, str):
        raise TypeError(f"gemms must be one of {sorted(POLICIES)} (a str), got {type(gemms).__name__} {gemms!r}")
    if gemms not in POLICIES:
        raise ValueError(f"gemms must be one of {sorted(POLICIES)}, got {gemms!r}")
    return POLICIES[gemms]


def policy_of(weights) -> GemmPolicy:
    """The policy a layer's uploaded weights were set up with (the default for weights uploaded outside a pass's setup)."""
    return getattr(weights, "gemms", POLICIES[DEFAULT])
