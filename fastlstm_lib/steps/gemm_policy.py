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
  version 6 where neither does; ``gemm.tiles.choose_splits``), added up by the fused cell. Split-K takes
  the idle SMs the wavefront was meant to fill (notebook 08). Step 09's persistent kernel keeps U in
  registers (persistent version 2) where its plan fits the GPU. The GPU run's fastest configuration.
- ``"tf32"``: the "fast" policy's choices with the products on tensor cores where GEMM version 9
  (``kernels/gemm/v9_tf32.py``: TF32 ``mma.sync``, split-K as version 7) fits: the recurrent GEMM
  of steps 06-08 in ``tf32_splits``' parts of K, and the input GEMM of steps 06-09 in one part,
  wherever its patch divides the shape and B is stored as read (``gemm.tf32_launch``). Elsewhere
  the "fast" policy's FP32 kernels run: steps 02-05 (weights read with the 'T' flag), step 09's
  recurrence (the persistent kernel), and any shape version 9's patch does not divide (the
  course's odd sizes). Offered on compute capability 8.0 and newer (Ampere on); on an older GPU,
  or a profile laid out for one, setup refuses it with a ValueError before any work. Its outputs
  are checked within ``numerics.TOLERANCES["tf32"]`` (``rtol``), not the float32 tolerance.

Each layer's uploaded weights carry the policy (``weights.gemms``) beside their layout
(``weights.transposed``): the two things the GEMM calls read from them.
"""

from __future__ import annotations

import dataclasses

from ..kernels.mma import MIN_COMPUTE_CAPABILITY
from ..numerics import TOLERANCES
from ..runtime.target import target


@dataclasses.dataclass(frozen=True)
class GemmPolicy:
    name: str
    vector: bool  # version 5's 128-bit loads where the tile and layouts allow
    split: bool  # the recurrent GEMM's K in parts (version 8, else 7, else 6) where choose_splits says so
    registers: bool  # step 09's persistent kernel with U in registers (version 2) where its plan fits
    what: str
    tf32: bool = False  # the products on TF32 tensor cores (version 9) where it fits; compute capability 8.0+
    rtol: float = TOLERANCES["forward"]  # the tolerance of a pass's check against float64


FAST_WHAT = ("128-bit loads (version 5) where the layouts allow; the recurrent GEMM's K split (version 8, else 7, "
             "else 6); the persistent step's U in registers (persistent version 2)")
POLICIES = {
    "2016": GemmPolicy("2016", vector=False, split=False, registers=False,
                       what="one kernel per shape, 32-bit loads, K whole (exact-tile version 3), as cuBLAS in 2016"),
    "fast": GemmPolicy("fast", vector=True, split=True, registers=True, what=FAST_WHAT),
    "tf32": GemmPolicy("tf32", vector=True, split=True, registers=True, tf32=True, rtol=TOLERANCES["tf32"],
                       what="fast's, with the recurrent GEMM (steps 06-08, split-K) and the input GEMM (steps 06-09) "
                            "on TF32 tensor cores (version 9) where its 64 x 64 patch divides the shape, else fast's "
                            "FP32 kernels; compute capability 8.0+; checked within TOLERANCES['tf32']"),
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


class PolicyNotOffered(ValueError):
    """A GEMM policy this GPU lacks the instructions for (``offered_policy``): the message says why."""


def offered_policy(gemms) -> GemmPolicy:
    """``checked_policy(gemms)``, refused (``PolicyNotOffered``, a ValueError naming the policy, the GPU, its compute
    capability and the one it needs) where the GPU the pass is laid out for (``runtime.target``:
    this one, or a profile's named chip) lacks what it uses: TF32 tensor cores below compute
    capability 8.0. The simulator runs every policy (its stand-ins for the instructions)."""
    policy = checked_policy(gemms)
    here = target()
    if policy.tf32 and here.compute_capability is not None and here.compute_capability < MIN_COMPUTE_CAPABILITY:
        need = ".".join(map(str, MIN_COMPUTE_CAPABILITY))
        raise PolicyNotOffered(f"gemms={policy.name!r} is not offered on the {here.gpu}: it runs its GEMMs on TF32 tensor "
                         f"cores (mma.sync), which need compute capability {need} or newer (Ampere on), and the "
                         f"{here.gpu} is compute capability {'.'.join(map(str, here.compute_capability))}; "
                         f"gemms='fast' is the same policy in FP32")
    return policy


def policy_of(weights) -> GemmPolicy:
    """The policy a layer's uploaded weights were set up with (the default for weights uploaded outside a pass's setup)."""
    return getattr(weights, "gemms", POLICIES[DEFAULT])
