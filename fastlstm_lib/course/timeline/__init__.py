"""``fl.estimate``: an ESTIMATED timeline of a recorded pass (``fl.profile``) on a GPU of data/gpus.csv,
thread blocks placed on SMs by ``profile/schedule.py``; every constant in data/model_constants.csv
with its source, none fitted to the article. The modules each say their job.
"""

from .api import GEMMS, Estimate, estimate
from .chart import plot_timeline
from .compare import against_results, article_table, ladder_estimates
from .story import plot_step_change, step_change

__all__ = ["estimate", "Estimate", "GEMMS", "plot_timeline", "article_table", "against_results", "ladder_estimates", "step_change",
           "plot_step_change"]
