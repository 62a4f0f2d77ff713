"""Issue 21: a clear error, never a hang, never a wrong verdict.

Each class of failure is planted here and its message checked: shared inputs changed in place,
inputs large enough to overflow a naive sigmoid, NaN made inside a kernel, missing arguments
that used to change meaning, learners' candidates that raise, hang or keep host arrays, and
benchmarks too large for the simulator. (Argument checks of the CLI and of the other public
functions: ``test_arguments.py``; of the backward's ``dy``: ``test_backward.py``.)
"""

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.course import exercises
from fastlstm_lib import harness
from fastlstm_lib.steps import simulator_budget
from fastlstm_lib.course.exercises import ex02_add_bias
from fastlstm_lib.course.exercises.base import GradingTimeout, time_limit
from fastlstm_lib.steps.step02_baseline import Baseline
from fastlstm_lib.steps.step03_combined_gemms import CombinedGemms
from fastlstm_lib.steps.step05_fused_pointwise import FusedPointwise
from conftest import MINI, problem

TINY = fl.LSTMConfig.tiny()


# ---- 1. inputs a caller receives are theirs ---------------------------------------------------


def test_the_harness_hands_out_copies_of_its_problem():
    x, params, ref = harness.problem(MINI)
    x[:] = 0
    params[0].kernel[:] = 0
    ref[:] = 0
    again_x, again_params, again_ref = harness.problem(MINI)
    assert again_x.any() and again_params[0].kernel.any() and again_ref.any()


class Vandal(Baseline):
    """A step that writes into the arrays it is given (and is right all the same)."""

    name = "vandal"

    def runner(self, x, params, **options):
        runner = super().runner(x, params, **options)
        x[:] = 7.0
        for layer in params:
            for array in layer:
                array[:] = 0.0
        return runner


def test_a_step_that_changes_its_inputs_cannot_change_the_next_steps_check():
    assert fl.bench(Vandal(), MINI, warmup=0, repeats=1)["values_checked"]
    result = fl.bench("baseline", MINI, warmup=0, repeats=1)
    assert result["relative_error"]["after"] <= fl.RTOL


class VandalUpload(FusedPointwise):
    def upload_weights(self, layer):
        weights = SimpleNamespace(kernel=cuda.to_device(layer.kernel), recurrent=cuda.to_device(layer.recurrent_kernel),
                                  bias=cuda.to_device(layer.bias), transposed=False)
        layer.kernel[:] = 0.0  # the learner's copy
        return weights


def test_a_candidate_that_changes_its_inputs_cannot_fail_the_solution():
    assert exercises.grade("upload", VandalUpload).passed
    assert exercises.grade("upload").passed


# ---- 2. saturating activations; NaN reported where it appears ---------------------------------


@pytest.mark.parametrize("name", ["baseline", "fused_pointwise", "persistent"])
def test_large_finite_inputs_saturate_like_the_reference(name):
    x, params = problem(MINI)
    x = x * np.float32(3000.0)  # sigmoid(-3000 * ...) overflowed Python's math.exp on the simulator
    y = fl.steps.get(name).forward(x, params)
    ref = fl.reference_forward(x, params)
    assert np.all(np.isfinite(y))
    assert fl.relative_error(y, ref) <= fl.RTOL


def test_the_reference_sigmoid_saturates_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = fl.numerics.sigmoid64(np.array([-1e308, -800.0, 0.0, 800.0, 1e308]))
    assert values.tolist() == [0.0, 0.0, 0.5, 1.0, 1.0]


@cuda.jit
def _spoil(out):
    if cuda.grid(1) == 0:
        out[1, 0, 2] = np.nan


class MakesNaN(Baseline):
    name = "makes_nan"

    def run(self, state, x, out):
        super().run(state, x, out)
        _spoil[1, 1](out)


def test_nan_made_inside_a_kernel_is_an_error_that_says_where():
    with pytest.raises(fl.WrongResultError, match=r"'makes_nan' is wrong before timing: the output holds NaN in 1 of "
                                                  r"10 elements, the first at \(batch row 0, step 1, unit 2\)"):
        fl.bench(MakesNaN(), MINI, warmup=0, repeats=1)


def test_where_nonfinite_names_the_field_of_a_training_result():
    result = fl.backward.TrainingResult(np.zeros((1, 2, 3)), np.zeros((1, 2, 3)),
                                        [fl.LayerParams(np.zeros((3, 4)), np.zeros((1, 4)), np.array([0, np.inf, 0, 0]))])
    assert fl.reference.where_nonfinite(result) == ("grads[0].bias holds infinity in 1 of 4 elements, "
                                                   "the first at (index (1,))")
    assert fl.reference.where_nonfinite(result._replace(grads=[])) is None


# ---- 3. no silent defaults --------------------------------------------------------------------


def test_grading_none_is_not_attempted_and_the_solution_says_it_is_the_solution(capsys):
    fl.check("add_bias", None)
    text = capsys.readouterr().out
    assert text.startswith("add_bias: not attempted yet (nothing was given to grade (None))")
    assert "passed" not in text
    fl.check("add_bias")
    assert capsys.readouterr().out.startswith("add_bias (the library's own solution): passed.")


# ---- 4. a verdict for every candidate ---------------------------------------------------------


def endless_add_bias(a, bias, out):
    i = cuda.grid(1)
    while i >= 0:
        i += 0
    out[0, 0] = a[0, 0] + bias[0]


class EndlessRun(CombinedGemms):
    def gate_products(self, state, weights, x_t, h_prev):
        while True:
            time.sleep(0.01)


@pytest.mark.parametrize("name, candidate", [("add_bias", endless_add_bias), ("gate_products", EndlessRun)])
def test_a_candidate_that_never_returns_is_stopped_with_a_verdict(monkeypatch, name, candidate):
    if name == "add_bias" and not fl.is_simulator():  # its endless loop is a kernel's
        pytest.skip("a kernel that never ends cannot be stopped from Python on a GPU (only the GPU's watchdog "
                    "or a restart ends it): the simulator runs this one")
    monkeypatch.setattr(exercises.get(name), "time_limit", 2.0)
    started = time.perf_counter()
    verdict = exercises.grade(name, candidate)
    assert time.perf_counter() - started < 60
    assert verdict.mistake == "timeout", verdict.text
    assert "still running after 2 s, so it was stopped" in verdict.text
    assert "a loop that never ends" in verdict.text
    time.sleep(0.5)  # nothing is left to fire into the caller's code
    monkeypatch.undo()
    assert exercises.grade(name).passed


def test_the_time_limit_leaves_a_body_that_finishes_alone():
    with time_limit(5.0):
        total = sum(range(1000))
    time.sleep(0.1)
    assert total == 499500
    with pytest.raises(GradingTimeout):
        with time_limit(0.2):
            while True:
                pass


class RaisesInInit(CombinedGemms):
    def __init__(self):
        raise RuntimeError("my own mistake")


def test_an_error_in_the_learners_constructor_is_reported_as_theirs():
    verdict = exercises.grade("gate_products", RaisesInInit)
    assert verdict.mistake == "raised"
    assert "it raised RuntimeError: my own mistake (in __init__, line" in verdict.text


def test_the_wrong_kind_of_candidate_is_a_type_error_before_any_work():
    with pytest.raises(TypeError, match="expected a subclass of a fastlstm_lib step"):
        exercises.grade("gate_products", ex02_add_bias.odd_inputs)
    with pytest.raises(TypeError, match="expected a kernel"):
        exercises.grade("add_bias", Baseline)


class HostUpload(FusedPointwise):
    def upload_weights(self, layer):
        return SimpleNamespace(kernel=layer.kernel, recurrent=layer.recurrent_kernel, bias=layer.bias,
                               transposed=False)


def test_host_arrays_returned_by_upload_are_named():
    verdict = exercises.grade("upload", HostUpload)
    assert verdict.mistake == "host_arrays", verdict.text
    assert "kernel is ndarray, recurrent is ndarray, bias is ndarray: host memory" in verdict.text


class HostScratch(CombinedGemms):
    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        state.gates = np.zeros((cfg.batch, 4 * cfg.hidden), np.float32)
        return state


def test_host_arrays_kept_in_a_steps_state_are_named():
    verdict = exercises.grade("gate_products", HostScratch)
    assert "state.gates is a NumPy array in host memory" in verdict.text, verdict.text


@pytest.mark.skipif(not fl.is_simulator(), reason="the refusal is the simulator's")
def test_a_bench_that_would_take_hours_on_the_simulator_refuses_up_front(monkeypatch):
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"would take about \d+ days on the CUDA simulator .*cfg=fl.LSTMConfig.tiny\(\)"):
        fl.bench("baseline", fl.LSTMConfig.article())
    assert time.perf_counter() - started < 5
    monkeypatch.setattr(harness, "bench", lambda *a, **k: pytest.fail("a step ran before the refusal"))
    with pytest.raises(ValueError, match="'persistent' at .*batch=1, .*would take about 19 hours"):
        fl.bench_steps(["persistent"], fl.LSTMConfig(batch=1, seq_len=100, input_size=512, hidden=512, layers=4),
                       progress=False)
    keras_free = harness.resolve("baseline", TINY, 0, None)[0]
    simulator_budget.refuse_slow_simulation(keras_free, TINY, 4)  # the size that runs is accepted


# ---- 5. arguments checked before any work (the harness; the rest in test_arguments.py) --------


@pytest.mark.parametrize("kwargs, error, words", [
    ({"step": None}, TypeError, r"step must be a step name \(one of baseline, .*got NoneType None"),
    ({"step": 42}, TypeError, "step must be a step name .*got int 42"),
    ({"rtol": -1}, ValueError, "rtol must be a relative error between 0 and 1"),
    ({"rtol": 0}, ValueError, "rtol must be a relative error between 0 and 1"),
    ({"rtol": float("nan")}, ValueError, "rtol must be a finite number, got nan"),
    ({"rtol": "1e-5"}, TypeError, "rtol must be a number, got str"),
    ({"repeats": 1.5}, TypeError, "repeats must be an int >= 1, got float 1.5"),
    ({"repeats": True}, TypeError, "repeats must be an int >= 1, got bool True"),
    ({"warmup": "1"}, TypeError, "warmup must be an int >= 0, got str '1'"),
    ({"warmup": -1}, ValueError, "warmup must be an int >= 0, got -1"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0, got -1"),
    ({"cfg": (1, 2)}, TypeError, "cfg must be an LSTMConfig, got tuple"),
])
def test_bench_checks_its_arguments_first(monkeypatch, kwargs, error, words):
    monkeypatch.setattr(harness, "check", lambda *a, **k: pytest.fail("a pass ran before the arguments were checked"))
    kwargs = {"step": "baseline", "cfg": MINI, **kwargs}
    with pytest.raises(error, match=words):
        fl.bench(**kwargs)


@pytest.mark.parametrize("call, error, words", [
    (lambda: fl.bench_steps("baseline"), TypeError, r"names must be a list of step names .*for one step: \['baseline'\]"),
    (lambda: fl.bench_steps([]), ValueError, "names must hold at least one step name"),
    (lambda: fl.bench_steps([None]), TypeError, r"names\[0\] must be a step name, got NoneType"),
    (lambda: fl.bench_steps(["baseline"], repeats=0), ValueError, "repeats must be an int >= 1, got 0"),
    (lambda: fl.bench_steps(["baseline"], progress="yes"), TypeError, "progress must be True or False"),
])
def test_several_steps_are_checked_before_the_first_runs(monkeypatch, call, error, words):
    monkeypatch.setattr(harness, "bench", lambda *a, **k: pytest.fail("a step ran before the arguments were checked"))
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("call, error, words", [
    (lambda: fl.matches(np.ones(3), np.ones(3), rtol=float("nan")), ValueError, "rtol must be a finite number"),
    (lambda: fl.matches(np.ones(3), np.ones(3), rtol=-1), ValueError, "rtol must be a relative error > 0"),
    (lambda: fl.relative_error(None, np.ones(3)), TypeError, "y must be an array of numbers, got NoneType"),
    (lambda: fl.relative_error(np.ones(3), "abc"), TypeError, "ref must be an array of numbers, got str"),
    (lambda: fl.init_params(MINI, seed="x"), TypeError, "seed must be an int >= 0, got str 'x'"),
    (lambda: fl.random_input(MINI, seed=-1), ValueError, "seed must be an int >= 0, got -1"),
])
def test_the_yardsticks_check_their_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_gpus_row_is_the_callers_own():
    row = fl.gpu("H100")
    row["sms"] = 1
    assert fl.gpu("H100")["sms"] == 132


def test_fl_exercises_works_before_fl_check_in_a_fresh_process():
    import subprocess
    import sys

    code = "import fastlstm_lib as fl; print(fl.exercises.names()[0])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("global_index")
