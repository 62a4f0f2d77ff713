"""One launch interception (fastlstm_lib/launches.py): counting, dry runs, replay recording,
instrumented runs and traces subscribe to it, nest, and leave numba-cuda as they found it."""

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib import replay
from fastlstm_lib.course.exercises.trace import Trace
from fastlstm_lib.kernels import pointwise as pw
from fastlstm_lib.launches import intercept, kernel_class, patched
from fastlstm_lib.course.profile.dryrun import dry_run


def numba_as_found():
    """What the interceptions replace: the kernel class's own entry, cuda's functions."""
    return (kernel_class().__dict__.get("__getitem__"), cuda.event, cuda.stream, cuda.synchronize,
            cuda.to_device, cuda.device_array)


def test_count_launches_around_and_inside_a_dry_run():
    a = cuda.device_array((2, 3), dtype=np.float32)
    with fl.count_launches() as around:
        with dry_run() as recording:
            with fl.count_launches() as inside:
                pw.fill(a, 1.0)
                pw.fill(a, 2.0)
    assert len(recording.launches) == 2
    assert inside == {"_fill": 2}  # inside, it counts what the code asks for: the dry run records it
    assert around == {}  # around, nothing was launched
    with fl.count_launches() as real:
        pw.fill(a, 3.0)
    assert real == {"_fill": 1} and (a.copy_to_host() == 3.0).all()  # no dry run left behind


def test_count_launches_sees_a_trace_and_a_recorded_pass():
    a = cuda.device_array((2, 3), dtype=np.float32)
    with fl.count_launches() as counted, Trace() as trace:
        with fl.count_launches() as inner:
            pw.fill(a, 1.0)
        with replay.recording() as rec:
            pw.fill(a, 2.0)
        ops = rec.replay()
    assert counted == {"_fill": 2} and inner == {"_fill": 1}
    assert [launch.kernel for launch in trace.launches] == ["_fill", "_fill"]
    with fl.count_launches() as replayed:
        ops()
    assert replayed == {"_fill": 1} and (a.copy_to_host() == 2.0).all()


@pytest.mark.skipif(not fl.is_simulator(), reason="instrumented arrays need the simulator")
def test_instrumented_inside_a_trace_and_a_count():
    from instrumented import instrumented

    a = cuda.device_array((2, 3), dtype=np.float32)
    with fl.count_launches() as counted, Trace() as trace, instrumented() as measured:
        pw.fill(a, 4.0)
    assert counted == {"_fill": 1} and len(trace.launches) == 1
    assert [m.kernel for m in measured] == ["_fill"] and sum(measured[0].stores.values()) == 6
    assert (a.copy_to_host() == 4.0).all()


def test_handlers_nest_innermost_first():
    a = cuda.device_array((2, 3), dtype=np.float32)
    asked = []

    def handler(name):
        def ask(kernel, configuration, configure):
            asked.append(name)
            return configure(kernel, configuration)

        return ask

    def stand_in(kernel, configuration, configure):  # launches nothing, asks nobody further
        asked.append("stand-in")
        return lambda *args: asked.append("its own launch")

    with intercept(handler("outer")), intercept(stand_in), intercept(handler("inner")):
        pw.fill(a, 1.0)
    assert asked == ["inner", "stand-in", "its own launch"]
    asked.clear()
    with intercept(handler("outer")), intercept(handler("inner")):
        pw.fill(a, 5.0)
    assert asked == ["inner", "outer"] and (a.copy_to_host() == 5.0).all()


def test_everything_is_restored_after_an_exception_inside_nested_interceptions():
    before = numba_as_found()
    a = cuda.device_array((2, 3), dtype=np.float32)
    with pytest.raises(KeyError):
        with fl.count_launches(), Trace():
            with dry_run():
                with fl.count_launches() as counted:
                    pw.fill(a, 1.0)
                    raise KeyError("inside")
    assert counted == {"_fill": 1}
    assert numba_as_found() == before


def test_blocks_ending_out_of_order_leave_numba_as_found():
    before = numba_as_found()
    first, second = fl.count_launches(), fl.count_launches()
    outer, inner = first.__enter__(), second.__enter__()
    first.__exit__(None, None, None)  # the outer block ends first
    a = cuda.device_array((2, 3), dtype=np.float32)
    pw.fill(a, 1.0)
    assert outer == {} and inner == {"_fill": 1}
    second.__exit__(None, None, None)
    assert numba_as_found() == before


class Base:
    def inherited(self):
        return "base"

    @staticmethod
    def static():
        return "static"


class Derived(Base):
    pass


def test_patched_puts_back_exactly_what_was_there():
    with pytest.raises(RuntimeError):
        with patched([(Derived, "inherited", lambda self: "patched"), (Derived, "static", lambda: "patched")]):
            assert Derived().inherited() == "patched"
            raise RuntimeError
    assert "inherited" not in Derived.__dict__ and "static" not in Derived.__dict__  # inherited: deleted again
    with patched([(Base, "static", staticmethod(lambda: "patched"))]):
        assert Base.static() == "patched"
    assert isinstance(Base.__dict__["static"], staticmethod) and Base().static() == "static"
