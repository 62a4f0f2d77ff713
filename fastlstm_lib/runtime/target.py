"""The GPU a pass is laid out for: what the kernels' launchers and plans read to choose their launch
geometry (SM count, name, compute capability), and whether launches compile their kernels first.

By default it is this device; a profile's dry run (``course/profile/dryrun.py``) sets a named chip
for a block with ``laid_out_for``, inside which nothing is compiled (nothing runs).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses

from .device import DEVICE, gpu_identity, multiprocessors


@dataclasses.dataclass(frozen=True)
class Target:
    """``sms``: the SMs a pass's grids are chosen for (None: the simulator's small layout);
    ``compiles``: whether a launch compiles its kernel first (False in a dry run); ``gpu`` and
    ``compute_capability`` (major, minor): the GPU's, None on the simulator (which runs stand-ins
    for every instruction a kernel uses)."""

    sms: int | None
    compiles: bool = True
    gpu: str | None = None
    compute_capability: tuple[int, int] | None = None

    @property
    def small(self) -> bool:
        """Whether launches are laid out for the simulator (every CUDA thread a Python thread)."""
        return self.sms is None


_LAID_OUT_FOR: contextvars.ContextVar[Target | None] = contextvars.ContextVar("laid_out_for", default=None)


def target() -> Target:
    """The target of the pass under way: the dry run's, or this device."""
    chosen = _LAID_OUT_FOR.get()
    if chosen is not None:
        return chosen
    gpu, cc = gpu_identity()
    return Target(None if DEVICE.small else multiprocessors(), compiles=DEVICE.compiled, gpu=gpu,
                  compute_capability=cc)


@contextlib.contextmanager
def laid_out_for(sms: int | None = None, gpu: str | None = None, compute_capability: tuple[int, int] | None = None):
    """Inside the block, passes are laid out for a chip of ``sms`` SMs, called ``gpu``, of
    ``compute_capability`` (None: as on this device) and launches compile nothing: what a dry run records."""
    if sms is not None and (not isinstance(sms, int) or isinstance(sms, bool) or sms < 1):
        raise ValueError(f"sms must be a positive int or None, got {sms!r}")
    if sms is not None and (gpu is None or compute_capability is None):
        raise ValueError(f"a chip of {sms} SMs needs its name and compute capability, got gpu={gpu!r}, "
                         f"compute_capability={compute_capability!r}")
    own = target()
    laid_out = own if sms is None else Target(sms, gpu=gpu, compute_capability=tuple(compute_capability))
    token = _LAID_OUT_FOR.set(dataclasses.replace(laid_out, compiles=False))
    try:
        yield
    finally:
        _LAID_OUT_FOR.reset(token)
