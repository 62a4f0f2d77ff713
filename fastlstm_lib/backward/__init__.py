"""Training: the backward pass (BPTT), its float64 reference and its optimization ladder (notebooks 40-41).

    fl.reference_backward(x, params, dy)              # float64 NumPy: (dx, grads)
    fl.backward.names()                               # the ladder: ["bwd_op_by_op", ...]
    fl.backward.get("bwd_wavefront").backward(x, params, dy)    # the same, on our kernels
    fl.bench(fl.backward.get("bwd_wavefront"), cfg, timed="backward")   # checked and timed

Each ladder module ``bwdNN_<name>.py`` (NN = its place in the ladder, all taught in notebook 41)
defines one ``BackwardStep`` subclass, a subclass of the one before, and an instance of it
called ``STEP``; the ladder is read from those file names. Every step's forward pass is the same
``TrainingForward`` (notebook 08's wavefront, keeping gates and c), which each step holds
(``BackwardStep.forward_step``) rather than inherits: the ladder changes only the backward. ``reference.py`` is the float64 BPTT; ``base.py`` what the steps share; ``benchmark.py``
the GPU measurement of notebook 41 (``python -m fastlstm_lib.backward``). The Keras layer that
trains on these kernels is ``fastlstm_lib.topics.keras_layer``.

Importing this package loads NumPy and Numba only; the ladder's modules load on first use.
"""

from __future__ import annotations

from ..steps.registry import Ladder
from .reference import BACKWARD_RTOL, TrainingResult, gradient_errors, numerical_gradients, output_gradient, \
    reference_backward, reference_training

LADDER = Ladder(__name__, "bwd", what="backward step")

#: Ordered backward step names, "bwd_op_by_op" first.
names = LADDER.names
#: The backward step called ``name``.
get = LADDER.get
previous = LADDER.previous
#: The methods a backward step's class defines itself (the backward twin of ``fl.steps.changes``).
changes = LADDER.changes

__all__ = ["BACKWARD_RTOL", "TrainingResult", "gradient_errors", "numerical_gradients", "output_gradient",
           "reference_backward", "reference_training", "LADDER", "names", "get", "previous", "changes"]
