"""The steps: the optimization ladder, one module per step, plus Keras' own LSTM, in one registry.

    fl.steps.names()                       # the ladder: ["baseline", ...]
    fl.steps.get("baseline").forward(x, params)

Each ladder module ``stepNN_<name>.py`` (NN = the notebook that teaches it) defines one
``LSTMStep`` subclass and an instance of it called ``STEP``. The ladder is read from those file
names, in NN order: adding a step is adding a file (``registry.Ladder``). ``keras_lstm.py`` adds
Keras' own LSTM three ways (``keras_names()``); they are steps of the same registry, not rungs of
the ladder. Every ladder step launches its GEMMs through one policy for the whole pass, the option
``gemms`` ("2016", the default, "fast", or "tf32" on compute capability 8.0+: ``gemm_policy.py``).
"""

from __future__ import annotations

from .registry import Ladder
from .base import LSTMStep, Runner


def _keras_steps():
    from .keras_lstm import KERAS_STEPS  # Keras itself loads only when one of them runs

    return KERAS_STEPS


LADDER = Ladder(__name__, "step", extras=_keras_steps)

#: Ordered ladder step names, "baseline" first.
names = LADDER.names
#: Keras' own LSTM, three ways, timed by the same harness (notebook 10): not ladder steps.
keras_names = LADDER.extra_names
#: The step called ``name`` (a ladder step or a Keras one).
get = LADDER.get
previous = LADDER.previous
#: The methods a step's class defines itself: its difference from the step before.
changes = LADDER.changes

__all__ = ["LSTMStep", "Runner", "LADDER", "names", "keras_names", "get", "previous", "changes"]
