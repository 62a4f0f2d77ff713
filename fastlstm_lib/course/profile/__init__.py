"""Measurements that mean something without a GPU: launches, traffic, dependencies, lower bounds.

On the simulator every time is meaningless, yet most of what an optimization changes is an exact
property of the code: how many kernels a pass launches, how many bytes each reads and writes,
how many 32-byte sectors a warp's load touches, and which launches wait for which. From those
and a GPU's data sheet follows a lower bound on the time, at the article's size, for any GPU,
which the article's own M40 measurements then put to the test.

    import fastlstm_lib as fl
    p = fl.profile("wavefront")                 # the article's size, nothing executed, seconds
    p.totals; p.critical_path(); p.to_dict()
    b = fl.lower_bound(p, "H100", host="cpp")   # ms, what binds it, the schedule per stream
    from fastlstm_lib.course.profile import ladder, sectors, charts
    ladder.article_check()                      # the article's M40 times against our bounds

Modules, one job each: ``formulas`` (each kernel's FLOPs and traffic, from the formulas its
family file writes beside it), ``dryrun`` (recording a pass instead of running it), ``graph`` (dependencies
and the longest chain), ``record`` (``profile``), ``bound`` (``lower_bound``), ``ladder`` (every
step against the article), ``instrument`` (logging every element a simulated kernel touches),
``sectors`` (32-byte sectors per warp-wide load), ``charts`` (matplotlib, imported when drawn).

``fl.profile`` is the function; this subpackage is ``fastlstm_lib.course.profile`` in ``sys.modules``,
so import its modules with ``from fastlstm_lib.course.profile import charts``.
"""

from .record import Launch, Profile, profile
from .bound import Bound, host_costs, lower_bound

__all__ = ["profile", "Profile", "Launch", "lower_bound", "Bound", "host_costs"]
