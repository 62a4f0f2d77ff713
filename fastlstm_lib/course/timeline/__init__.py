"""An ESTIMATED timeline of a recorded pass (``fl.profile``) on a GPU of data/gpus.csv.

Where ``fl.lower_bound`` gives the least time a pass can take, ``estimate`` gives an estimate (not a
bound: it can fall above or below a measurement), at the level of thread blocks on SMs: the host
issues the launches (its cost per launch as for the bound); each launch becomes ready when issued
and its dependencies are done, waits for the resident-grid limit, pays a GPU-side launch latency,
and its blocks go to SMs with room for them. A block takes SM time for its instructions (counted in
its compiled code) or its DRAM bytes, and alone on an SM at least its latencies (memory, shared
memory, dependent FFMAs, from published microbenchmarks) that its own warps cannot cover; blocks
sharing an SM, of one launch or of several, hide each other's latencies until the SM's issue is full
(Little's law). Every constant is in data/model_constants.csv with its source; none was fitted to
the article's measurements.

    e = fl.estimate(fl.profile("wavefront", chip="M40"), "M40", host="cpp", gemm="ours")
    fl.plot_timeline(e, window=(0, 1))
    e.total_ms; e.breakdown; e.sm_time; e.to_dict()["timeline"]

Modules, one job each: ``constants`` (data/model_constants.csv), ``cublas`` (gemm="cublas":
DeepBench's published cuBLAS times), ``blocks`` (one block's cost and residency), ``reuse``
(which inputs come from DRAM: an LRU L2 over the pass), ``result``
(``Estimate``), ``api`` (``estimate``: the blocks on ``profile/schedule.py``, the scheduler the
lower bound runs too), ``chart`` (``plot_timeline``),
``compare`` (beside the article and committed GPU results), ``story`` (one step's change, for
notebooks 03-09).
"""

from .api import GEMMS, estimate
from .chart import plot_timeline
from .compare import against_results, article_table, ladder_estimates
from .result import Estimate
from .story import plot_step_change, step_change

__all__ = ["estimate", "Estimate", "GEMMS", "plot_timeline", "article_table", "against_results", "ladder_estimates", "step_change",
           "plot_step_change"]
