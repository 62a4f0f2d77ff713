"""``instrumented()``: every launch of a real simulated run, instrumented (``run_instrumented``)
and summarized as ``fl.profile`` summarizes a launch (``measure``).

The tests put what ``fl.profile`` says of each launch beside what it really touched, launch by
launch (tests/test_profile.py, tests/test_profile_kernels.py, tests/test_launches.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter

from fastlstm_lib.course.profile.formulas import kernel_description
from fastlstm_lib.course.profile.instrument import run_instrumented
from fastlstm_lib.launches import intercept
from fastlstm_lib.runtime.device import DEVICE


@dataclasses.dataclass(frozen=True)
class Measured:
    """What one simulated launch really touched (``log`` kept only when asked for)."""

    kernel: str
    grid: tuple
    block: tuple
    stream: object
    loads: dict
    stores: dict
    footprint_read: int
    footprint_written: int
    footprint: int
    footprint_in: int
    arrays: dict  # argument -> InstrumentedArray
    log: tuple = ()


def measure(kernel, configuration, args, keep_log: bool = False, configure=None) -> Measured:
    """``run_instrumented``, its log counted: loads and stores per argument, distinct bytes read,
    written, touched, and read before being written."""
    run = run_instrumented(kernel, configuration, args, configure=configure)
    itemsize = {name: array.dtype.itemsize for name, array in run.arrays.items()}
    loads = Counter(arg for write, _, arg, _ in run.log if not write)
    stores = Counter(arg for write, _, arg, _ in run.log if write)
    read, written, read_first = {}, {}, {}
    for write, address, arg, _ in run.log:
        if write:
            written[address] = itemsize[arg]
        else:
            read[address] = itemsize[arg]
            if address not in written:
                read_first[address] = itemsize[arg]
    return Measured(kernel=kernel_description(kernel)[0], grid=run.grid, block=run.block, stream=run.stream,
                    loads=dict(loads), stores=dict(stores), footprint_read=sum(read.values()),
                    footprint_written=sum(written.values()), footprint=sum({**read, **written}.values()),
                    footprint_in=sum(read_first.values()), arrays=run.arrays, log=tuple(run.log) if keep_log else ())


@contextlib.contextmanager
def instrumented(keep_log: bool = False):
    """``with instrumented() as launches: step.forward(x, params)``: every launch in the block runs,
    on the simulator, with instrumented arrays; ``launches`` gets one ``Measured`` per launch."""
    if not DEVICE.small:
        raise RuntimeError("instrumented arrays need Numba's CUDA simulator, where kernels run as Python")
    measured: list[Measured] = []

    def instrumenting(kernel, configuration, configure):
        def launch(*args):
            measured.append(measure(kernel, configuration, args, keep_log, configure=configure))

        return launch

    with intercept(instrumenting):
        yield measured
