"""A runner runs the step's own code every pass, unless asked to replay its first
(``replay=True``, fastlstm_lib/replay.py): same launches, same results, no Python of ours between
them: nothing sliced or allocated inside a replayed pass."""

import contextlib

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib import replay
from fastlstm_lib.launches import patched
from fastlstm_lib.steps.step04_streams import Streams
from conftest import ODD, problem

#: Odd sizes (no multiple of any tile), smaller than conftest's ODD: each test runs three passes.
#: Three steps still give the wavefront three chunks (its default chunk is 1 step here).
SMALL = fl.LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2)

#: Steps with every kind of pass: one stream, two streams and events, the wavefront's chunks, the
#: persistent kernel's cooperative launch (one block on the simulator).
STEPS = ("baseline", "streams", "wavefront", "persistent")


@pytest.fixture(scope="module")
def small_problem():
    x, params = problem(SMALL)
    return x, params, fl.reference_forward(x, params)


@contextlib.contextmanager
def counting_device_arrays():
    """Counts device arrays made (allocations and views alike: every view is a new array object)."""
    cls = type(cuda.device_array(1, dtype="float32"))
    original, made = cls.__init__, []

    def init(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    with patched([(cls, "__init__", init)]):
        yield made


@pytest.mark.parametrize("name", STEPS)
def test_a_replayed_pass_matches_the_reference_and_makes_no_array(name, small_problem):
    x, params, ref = small_problem
    runner = fl.steps.get(name).runner(x, params, replay=True)
    with fl.count_launches() as first, counting_device_arrays() as made_first:
        runner.launch()
    assert isinstance(runner.replay, replay.Replay) and runner.replay.launches == sum(first.values())
    assert fl.relative_error(runner.result(), ref) <= fl.RTOL
    for _ in range(2):
        runner.poison()  # NaN: anything a replay fails to write shows
        with fl.count_launches() as again, counting_device_arrays() as made_again:
            runner.launch()
        assert again == first  # the same kernels, as many times, and fl.count_launches sees them
        assert made_again == [], f"a replayed pass made {len(made_again)} device arrays (views or allocations)"
        result = runner.result()
        assert np.isfinite(result).all() and fl.relative_error(result, ref) <= fl.RTOL
    if name != "persistent":
        assert len(made_first) > 0  # the step's own code makes views at every step (hs[t], ...)


class CopiesInsideTheRun(Streams):
    """Uploads a buffer inside the pass: a replay would skip the copy, so the pass is not replayed."""

    name = "copies_inside_the_run"
    runs = 0

    def run(self, state, x, out):
        CopiesInsideTheRun.runs += 1
        state.c.copy_to_device(np.zeros(state.c.shape, np.float32))
        super().run(state, x, out)


def test_a_pass_that_copies_is_run_every_time_not_replayed():
    x, params = problem(SMALL)
    runner = CopiesInsideTheRun().runner(x, params, replay=True)
    for _ in range(3):
        runner.launch()
    assert runner.replay is None and runner.replay_passes is False
    assert CopiesInsideTheRun.runs == 3
    assert fl.relative_error(runner.result(), fl.reference_forward(x, params)) <= fl.RTOL


def test_by_default_every_pass_runs_the_steps_own_code_and_a_step_can_refuse_replay():
    x, params = problem(SMALL)
    runner = fl.steps.get("streams").runner(x, params)
    with counting_device_arrays() as made:
        runner.launch()
        runner.launch()
    assert runner.replay is None and runner.replay_passes is False and len(made) > 0

    class Changing(Streams):
        name = "changing"
        replayable = False

    with pytest.raises(ValueError, match="replay=True: step 'changing' is not replayable"):
        Changing().runner(x, params, replay=True)
    with pytest.raises(TypeError, match="replay must be True or False"):
        Changing().runner(x, params, replay="yes")
    runner = Changing().runner(x, params)
    runner.launch()
    runner.launch()
    assert runner.replay is None


def test_set_input_feeds_a_new_input_to_the_replayed_pass():
    x, params = problem(SMALL)
    runner = fl.steps.get("wavefront").runner(x, params, replay=True)
    runner.launch()
    x2 = fl.random_input(SMALL, seed=7)
    runner.set_input(x2)
    runner.poison()
    runner.launch()  # a replay: it reads the bound x, which now holds x2
    assert fl.relative_error(runner.result(), fl.reference_forward(x2, params)) <= fl.RTOL
    with pytest.raises(ValueError, match=r"x must be a float array of shape \(3, 3, 5\)"):
        runner.set_input(x2[:, :2])
    with pytest.raises(TypeError, match="x must be a NumPy array"):
        runner.set_input(x2.tolist())


def test_graphs_need_a_gpu_and_say_so_before_any_work(monkeypatch):
    from fastlstm_lib import harness

    if not fl.is_simulator():
        pytest.skip("on a GPU (and the fake GPU) graph=True captures a CUDA Graph: the refusal is the simulator's")

    x, params = problem(ODD)
    monkeypatch.setattr(harness, "expected", lambda *a, **k: pytest.fail("the reference was computed first"))
    with pytest.raises(ValueError, match="graph=True needs a GPU"):
        fl.bench("streams", ODD, graph=True)
    with pytest.raises(ValueError, match="graph=True needs a GPU"):
        fl.steps.get("streams").runner(x, params, graph=True)
    with pytest.raises(TypeError, match="graph must be True or False, got 'yes'"):
        fl.steps.get("streams").runner(x, params, graph="yes")
    assert fl.steps.get("streams").runner(x, params, graph=False).graph is None
