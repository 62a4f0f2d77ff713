"""The column sum (the bias gradient, notebook 41): its versions are its files (``VERSIONS``):
``v1_column_sum``, a shared-memory tree per block of 32 columns.
"""

from __future__ import annotations

from ..family import specs, versions
from .v1_column_sum import (COLUMNS, GPU_ROW_THREADS, ROW_THREADS, column_sum,  # noqa: F401
                            column_sum_kernel)

#: The family's version modules, in order.
VERSIONS = versions(__name__)
SPECS = specs(VERSIONS)
