"""``fl.estimate``: an ESTIMATED timeline of a recorded pass (``fl.profile``) on a GPU of data/gpus.csv.

An estimate, not a bound: thread blocks placed on SMs by ``profile/schedule.py``, each block's
cost from its compiled code and published latencies (every constant in
data/model_constants.csv with its source, none fitted to the article). Modules: ``constants``,
``cublas`` (gemm="cublas"), ``blocks`` (a block's cost and residency), ``reuse`` (an LRU L2),
``result`` (``Estimate``), ``api`` (``estimate``), ``chart`` (``plot_timeline``), ``compare``
(against measurements), ``story`` (one step's change, notebooks 03-09).
"""

from .api import GEMMS, estimate
from .chart import plot_timeline
from .compare import against_results, article_table, ladder_estimates
from .result import Estimate
from .story import plot_step_change, step_change

__all__ = ["estimate", "Estimate", "GEMMS", "plot_timeline", "article_table", "against_results", "ladder_estimates", "step_change",
           "plot_step_change"]
