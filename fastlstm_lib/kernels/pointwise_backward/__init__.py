"""The element-wise kernels of training (notebooks 40-42), the training counterparts of ``pointwise``.

Its versions are its files, each opening with what it adds and the steps that launch it
(``VERSIONS``; ``python -m fastlstm_lib.kernels pointwise_backward`` checks them):
``v1_cell_train`` (the fused forward cell that saves what the backward needs), ``v2_derivatives``
(the activations' derivatives, op by op), ``v3_cell_backward`` (the fused backward cell).
"""

from __future__ import annotations

from ..family import specs, versions
from .v1_cell_train import _lstm_cell_train, lstm_cell_train  # noqa: F401
from .v2_derivatives import sigmoid_backward, tanh_backward  # noqa: F401
from .v3_cell_backward import _lstm_cell_backward, lstm_cell_backward  # noqa: F401

#: The family's version modules, in order.
VERSIONS = versions(__name__)
SPECS = specs(VERSIONS)
