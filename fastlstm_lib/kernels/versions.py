"""Every kernel version of the library: the family files' ``SPECS`` (``spec.py``), in one tuple.

``FAMILIES`` lists the families once (gemm, pointwise, pointwise_backward, reduce, persistent),
in the order ``every()`` and the runner (``catalog``) take them; ``spec_of(kernel)`` finds a
launched kernel's (every kernel has its own name); ``gemm_names()`` names the GEMM family's kernels.
"""

from __future__ import annotations

import functools

from . import gemm, persistent, pointwise, pointwise_backward, reduce
from .spec import Spec, function_name

#: The kernel families, each a package of version files (``family.py``), in the order they are listed.
FAMILIES = (gemm, pointwise, pointwise_backward, reduce, persistent)


@functools.lru_cache(maxsize=1)
def every() -> tuple[Spec, ...]:
    """Every kernel version of the library, family by family (``FAMILIES``)."""
    return tuple(spec for family in FAMILIES for spec in family.SPECS)


def spec_of(kernel) -> Spec | None:
    """The spec of a library kernel, by its function's name; None for a kernel of no spec (one a
    learner wrote)."""
    name = function_name(kernel)
    return next((spec for spec in every() if spec.name == name), None)


@functools.lru_cache(maxsize=1)
def persistent_names() -> tuple[str, ...]:
    """The function names of the persistent family's kernels: a pass that launches one has a grid
    planned for one chip, and needs a grid barrier."""
    return tuple(dict.fromkeys(spec.name for spec in every() if spec.family == "persistent"))


def gemm_names() -> tuple[str, ...]:
    """The function names of the GEMM family's kernels (``tiled_gemm``, ``blocked_gemm``, ``exact_gemm``, ...)."""
    return tuple(dict.fromkeys(spec.name for spec in every() if spec.family == "gemm"))
