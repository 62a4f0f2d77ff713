"""Measurements that mean something without a GPU: launches, traffic, dependencies, lower bounds.

``fl.profile`` (``record``) and ``fl.lower_bound`` (``bound``); the modules each say their job.
``fl.profile`` is the function, so import them as ``from fastlstm_lib.course.profile import charts``.
"""

from .record import Launch, Profile, profile
from .bound import Bound, host_costs, lower_bound

__all__ = ["profile", "Profile", "Launch", "lower_bound", "Bound", "host_costs"]
