"""Measurements that mean something without a GPU: launches, traffic, dependencies, lower bounds.

``fl.profile`` (``record``) records a pass without running it; ``fl.lower_bound`` (``bound``)
bounds its time on a GPU of data/gpus.csv. Modules: ``formulas`` (FLOPs and traffic per kernel),
``dryrun``, ``graph`` (dependencies, longest chain), ``schedule``, ``ladder`` (every step against
the article), ``instrument`` and ``sectors`` (the simulator's element logs, coalescing),
``charts``. ``fl.profile`` is the function, so import the modules as
``from fastlstm_lib.course.profile import charts``.
"""

from .record import Launch, Profile, profile
from .bound import Bound, host_costs, lower_bound

__all__ = ["profile", "Profile", "Launch", "lower_bound", "Bound", "host_costs"]
