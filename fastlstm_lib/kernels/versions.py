"""Every kernel version of the library: the family files' ``SPECS`` (``spec.py``), in one tuple.

``FAMILIES`` lists the families once (gemm, pointwise, pointwise_backward, reduce, persistent),
in the order ``every()`` and the runner (``catalog``) take them; ``spec_of(kernel)`` finds a
launched kernel's, by the kernel or by its name (every kernel has its own name);
``family_of(kernel)`` says which family it is in. What the course knows of a kernel it reads
there, never from its name.
"""

from __future__ import annotations

import functools

from . import gemm, persistent, pointwise, pointwise_backward, reduce
from ..runtime.numba_compat import function_name
from .spec import Spec

#: The kernel families, each a package of version files (``family.py``), in the order they are listed.
FAMILIES = (gemm, pointwise, pointwise_backward, reduce, persistent)


@functools.lru_cache(maxsize=1)
def every() -> tuple[Spec, ...]:
    """Every kernel version of the library, family by family (``FAMILIES``)."""
    return tuple(spec for family in FAMILIES for spec in family.SPECS)


@functools.lru_cache(maxsize=1)
def _by_name() -> dict:
    return {spec.name: spec for spec in every()}


def spec_of(kernel) -> Spec | None:
    """The spec of a library kernel, given the kernel or its function's name (a str: what a
    recorded launch and ``count_launches`` call it); None for a kernel of no spec (one a learner
    wrote)."""
    return _by_name().get(kernel if isinstance(kernel, str) else function_name(kernel))


def peak_of(kernel) -> str:
    """The data/gpus.csv peak a library kernel's FLOPs run at (``Spec.peak``: "fp32" or "tf32");
    "fp32" for a kernel of no spec."""
    spec = spec_of(kernel)
    return "fp32" if spec is None else spec.peak


def family_of(kernel) -> str | None:
    """The family of a library kernel (``spec_of``: the kernel or its name): "gemm", "pointwise",
    "pointwise_backward", "reduce" or "persistent"; None for a kernel of no spec."""
    spec = spec_of(kernel)
    return None if spec is None else spec.family
