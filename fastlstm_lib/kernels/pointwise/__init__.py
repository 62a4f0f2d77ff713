"""The forward LSTM cell's element-wise kernels on (rows, cols) device arrays, one thread per element.

Its versions are its files, each opening with what it adds and the steps that launch it
(``VERSIONS`` lists them in order; ``python -m fastlstm_lib.kernels pointwise`` checks and, on a
GPU, times them): ``v1_elementwise`` (one kernel per operation), ``v2_cell`` (the fused cell,
notebook 05), ``v3_cell_split`` (the fused cell adding the split-K GEMM's parts). ``base``: what
they share (``sigmoidf``, the launch, the cell's traffic and float64 answer). The training
versions are ``pointwise_backward``.
"""

from __future__ import annotations

from ..family import specs, versions
from .base import sigmoidf  # noqa: F401
from .v1_elementwise import _add, _add_bias, add, add_bias, fill, mul, sigmoid, tanh  # noqa: F401
from .v2_cell import _lstm_cell, lstm_cell  # noqa: F401
from .v3_cell_split import lstm_cell_split  # noqa: F401

#: The family's version modules, in order.
VERSIONS = versions(__name__)
SPECS = specs(VERSIONS)
