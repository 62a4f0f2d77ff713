"""``instrumented()``: every launch of a real simulated run, instrumented (``run_instrumented``).

The tests put what ``fl.profile`` says of each launch beside what it really touched, launch by
launch (tests/test_profile.py, tests/test_profile_kernels.py, tests/test_launches.py).
"""

from __future__ import annotations

import contextlib

from fastlstm_lib.course.profile.instrument import Measured, run_instrumented
from fastlstm_lib.launches import intercept
from fastlstm_lib.runtime.device import DEVICE


@contextlib.contextmanager
def instrumented(keep_log: bool = False):
    """``with instrumented() as launches: step.forward(x, params)``: every launch in the block runs,
    on the simulator, with instrumented arrays; ``launches`` gets one ``Measured`` per launch."""
    if not DEVICE.small:
        raise RuntimeError("instrumented arrays need Numba's CUDA simulator, where kernels run as Python")
    measured: list[Measured] = []

    def instrumenting(kernel, configuration, configure):
        def launch(*args):
            measured.append(run_instrumented(kernel, configuration, args, keep_log, configure=configure))

        return launch

    with intercept(instrumenting):
        yield measured
