"""Every kernel version, as the runner (``runner.py``: ``python -m fastlstm_lib.kernels``) runs
each on its own against float64 NumPy: ``VERSIONS``, one ``Version`` per version file.

A ``Version`` is its specs (``spec.py``: its family, its number, its kernels' names, one line on
what it adds) and its ``case(size, rng)``: fresh inputs at ``size`` ("odd": no dimension a
multiple of any tile or block, except the exact-tile GEMMs, which run only where their tile
divides the shape; "article": the article's shapes, for a GPU), its outputs poisoned with NaN, and
``Case`` s (``case.py``) that launch it and know the float64 answer, the work done and the
tolerance (``numerics.TOLERANCES``). The families' version files are ``gemm/v<N>_*.py`` (version
0 is cuBLAS, the yardstick every GEMM version is set beside in the runner's ``gemm_table``; after
them, ``gemm/launch.py``: ``gemm()`` as the backward pass calls it), ``pointwise/v<N>_*.py``,
``pointwise_backward/v<N>_*.py``, ``reduce/v<N>_*.py``, ``persistent/v<N>_*.py``.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType

from . import gemm
from .family import specs
from .versions import FAMILIES


@dataclasses.dataclass(frozen=True)
class Version:
    """A version file, as the runner runs it: its ``specs`` (one per kernel) and its ``case``."""

    specs: tuple
    case: object  # case(size, rng) -> list[Case]

    family = property(lambda self: self.specs[0].family)
    number = property(lambda self: self.specs[0].number)
    what = property(lambda self: self.specs[0].what)
    kernel = property(lambda self: ", ".join(spec.label for spec in self.specs))

    @classmethod
    def of(cls, module: ModuleType) -> "Version":
        return cls(specs((module,)), module.case)

    @property
    def label(self) -> str:
        return f"{self.family} {self.number}: {self.kernel}" if self.number is not None else f"{self.family}: {self.kernel}()"


#: Every version file, family by family (``versions.FAMILIES``), the GEMM's launcher after its versions.
VERSIONS = tuple(Version.of(module) for family in FAMILIES
                 for module in family.VERSIONS + ((gemm.launch,) if family is gemm else ()))
