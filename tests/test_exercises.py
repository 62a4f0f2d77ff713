"""The exercises grade themselves: every solution passes; every typical mistake of the catalog,
planted on purpose in the solution (``planting``), fails with its own name; stubs are "not attempted yet";
the words are the same every time."""

import importlib
import pkgutil
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.course import exercises
from fastlstm_lib.steps.step02_baseline import Baseline
from planting import PLANTS, planted

#: Every exercise, in notebook order, and the mistakes its catalog must recognise (each planted by ``planting``).
CATALOG = {name: list(plants) for name, plants in PLANTS.items()}
PLANTED = [(name, mistake) for name, mistakes in CATALOG.items() for mistake in mistakes]
#: Mistakes whose symptom the simulator shows every time and a GPU may not: a race, seen as a result that
#: changes with the order the simulator runs the threads in (one at a time, ascending or descending), or
#: uninitialised local memory, NaN on the simulator (fastlstm_lib/course/exercises/kernel_runs.py: the simulator
#: is the stricter judge). On a GPU these are graded all the same, but not tested.
SIMULATOR_JUDGED = {("tile_loads", "missing_sync_after_loads"), ("tile_loads", "missing_sync_before_next_loads"),
                    ("grid_step", "missing_grid_barrier"), ("rows_per_thread", "sums_not_zeroed"),
                    ("column_sum", "missing_sync_before_tree"), ("column_sum", "missing_sync_in_tree"),
                    ("column_sum", "every_thread_writes")}


def test_exercises_in_notebook_order():
    assert exercises.names() == list(CATALOG)
    assert [exercises.get(n).notebook for n in exercises.names()] == ["00", "02", "03", "04", "05", "06", "07", "08",
                                                                       "09", "09", "12", "14", "41"]
    # the module's number is the notebook that checks it (ex12_tile_loads: notebook 12)
    for module in pkgutil.iter_modules(exercises.__path__):
        number = exercises.EXERCISE_MODULE.fullmatch(module.name)
        if number:
            notebook = importlib.import_module(f"fastlstm_lib.course.exercises.{module.name}").EXERCISE.notebook
            assert number.group(1) == notebook, f"{module.name} is checked in notebook {notebook}"
    assert all(exercises.get(n).difficulty in ("easy", "medium", "hard") for n in exercises.names())


@pytest.mark.parametrize("name", list(CATALOG))
def test_the_catalog_is_the_one_documented(name):
    assert [m["name"] for m in exercises.catalog(name)] == CATALOG[name]


@pytest.mark.parametrize("name", list(CATALOG))
def test_the_solution_passes(name):
    verdict = exercises.grade(name)
    assert verdict.passed, verdict.text
    assert verdict.text.startswith(f"{name} (the library's own solution): passed.")


@pytest.mark.parametrize("name, mistake", PLANTED, ids=[f"{n}-{m}" for n, m in PLANTED])
def test_each_planted_mistake_fails_with_its_own_message(name, mistake):
    if (name, mistake) in SIMULATOR_JUDGED and not fl.is_simulator():
        pytest.skip("a race or uninitialised memory: the simulator shows it every time, a GPU only sometimes "
                    "(run on the simulator: FASTLSTM_SIMULATOR=1)")
    verdict = exercises.grade(name, planted(name, mistake))
    assert verdict.status == "failed"
    assert verdict.mistake == mistake, verdict.text
    entry = next(m for m in exercises.get(name).catalog if m.name == mistake)
    assert f"not right yet: {entry.title}." in verdict.text and entry.advice in verdict.text


class GateProductsStub(Baseline):
    def gate_products(self, state, weights, x_t, h_prev):
        raise NotImplementedError("write the two GEMMs")


def add_bias_stub(a, bias, out):
    i = cuda.grid(1)
    raise NotImplementedError("one thread per element")


def gate_dots_stub(h, u, z):
    """Notebook 09's stub of rows_per_thread."""
    tid = cuda.threadIdx.x
    raise NotImplementedError("the loop over k: each weight loaded once, ROWS FMAs")


def a_fragment_stub(lane, i):
    """Notebook 14's stub."""
    group = lane // 4
    tig = lane % 4
    raise NotImplementedError("the row and the column of a<i>")


@pytest.mark.parametrize("name, stub", [("gate_products", GateProductsStub), ("add_bias", add_bias_stub),
                                        ("a_fragment", a_fragment_stub),
                                        ("add_bias", cuda.jit(add_bias_stub)),
                                        ("rows_per_thread", cuda.jit(gate_dots_stub))])
def test_an_untouched_stub_is_not_attempted_yet(name, stub, capsys):
    fl.check(name, stub)
    printed = capsys.readouterr().out
    assert printed.startswith(f"{name}: not attempted yet (the stub still raises NotImplementedError).")
    assert f'stuck? fl.exercises.hint("{name}", 1)' in printed and exercises.solution(name) not in printed
    fl.check(name, stub)
    assert capsys.readouterr().out == printed  # deterministic: nbval compares it


def add_bias_in_own_words(a, bias, out):
    i = cuda.grid(1)
    if i < out.size:
        row, col = divmod(i, out.shape[1])
        out[row, col] = a[row, col] + bias[col]


def test_a_solution_in_other_words_passes_and_verdicts_repeat():
    assert exercises.grade("add_bias", add_bias_in_own_words).passed
    first = exercises.grade("add_bias", planted("add_bias", "bias_along_rows")).text
    assert exercises.grade("add_bias", planted("add_bias", "bias_along_rows")).text == first


def test_the_simpler_persistent_kernel_the_notebook_asks_for_passes():
    """Notebook 09's stub: h_{t-1} straight from global memory, no staging, no split dot products."""
    from fastlstm_lib.course.exercises.ex09_grid_step import PLAN
    from fastlstm_lib.kernels.pointwise import sigmoidf
    import math
    from numba import float32

    hidden, units = PLAN.hidden, PLAN.units

    @cuda.jit
    def persistent_layer(x_gates, recurrent, bias, hs):
        u_s = cuda.shared.array((4 * units, hidden), float32)
        grid = cuda.cg.this_grid()
        tid = cuda.threadIdx.x
        b, jj = tid // units, tid % units
        j = cuda.blockIdx.x * units + jj
        for e in range(tid, hidden * 4 * units, cuda.blockDim.x):
            k, col = e // (4 * units), e % (4 * units)
            unit = cuda.blockIdx.x * units + col % units
            u_s[col, k] = recurrent[k, (col // units) * hidden + unit] if unit < hidden else float32(0.0)
        cuda.syncthreads()
        c = float32(0.0)
        for t in range(hs.shape[0]):
            if j < hidden:
                z = cuda.local.array(4, float32)
                for g in range(4):
                    z[g] = x_gates[t, b, g * hidden + j] + bias[g * hidden + j]
                    if t > 0:
                        for k in range(hidden):
                            z[g] += hs[t - 1, b, k] * u_s[g * units + jj, k]
                c = sigmoidf(z[1]) * c + sigmoidf(z[0]) * math.tanh(z[2])
                hs[t, b, j] = sigmoidf(z[3]) * math.tanh(c)
            grid.sync()

    verdict = exercises.grade("grid_step", persistent_layer)
    assert verdict.passed, verdict.text


def test_rows_per_thread_judges_the_outputs_not_the_loads():
    """One row per thread, written the usual way (b = tid // UNITS), is caught; weights reloaded inside
    the row loop give the same numbers and pass (the hints and notebook 09 say so)."""
    from fastlstm_lib.course.exercises.ex09_rows_per_thread import ROWS, UNITS
    from numba import float32

    @cuda.jit
    def one_row(h, u, z):
        tid = cuda.threadIdx.x
        b, jj = tid // UNITS, tid % UNITS
        if b < h.shape[0]:
            for g in range(4):
                acc = float32(0.0)
                for k in range(h.shape[1]):
                    acc += h[b, k] * u[k, g * UNITS + jj]
                z[b, g * UNITS + jj] = acc

    @cuda.jit
    def reloads(h, u, z):
        tid = cuda.threadIdx.x
        group, jj = tid // UNITS, tid % UNITS
        acc = cuda.local.array((4, ROWS), float32)
        for r in range(ROWS):
            for g in range(4):
                acc[g, r] = float32(0.0)
        for k in range(h.shape[1]):
            for r in range(ROWS):
                if group * ROWS + r < h.shape[0]:
                    for g in range(4):
                        acc[g, r] += h[group * ROWS + r, k] * u[k, g * UNITS + jj]
        for r in range(ROWS):
            if group * ROWS + r < h.shape[0]:
                for g in range(4):
                    z[group * ROWS + r, g * UNITS + jj] = acc[g, r]

    assert exercises.grade("rows_per_thread", one_row).mistake == "one_row_per_thread"
    assert exercises.grade("rows_per_thread", reloads).passed


def global_index_stub(out):
    raise NotImplementedError("write global_index")


def test_the_first_kernel_draws_what_each_thread_wrote():
    """The picture of notebook 00's exercise: a stub draws the solution's picture (what a pass looks
    like), a mistake draws its own writes; only exercises with a picture draw."""
    import matplotlib

    matplotlib.use("Agg")
    from fastlstm_lib.course.exercises import ex00_global_index as first

    stub = exercises.draw("global_index", global_index_stub)
    assert "not attempted yet" in stub.axes[0].get_title()
    assert exercises.draw("global_index").axes[0].get_title().startswith("global_index: passed.")
    values, error, writes = first.run_for_picture(first.global_index)
    assert error is None and sorted(writes) == [(n, n) for n in range(first.SIZE)]
    assert np.array_equal(values[:first.SIZE], np.arange(first.SIZE)) and np.isnan(values[first.SIZE:]).all()
    _, _, every_block = first.run_for_picture(planted("global_index", "same_elements_every_block"))
    assert {element for _, element in every_block} == set(range(first.THREADS))
    assert "same_elements_every_block" in exercises.draw(
        "global_index", planted("global_index", "same_elements_every_block")).axes[0].get_title()
    if fl.is_simulator():  # every write watched, the one past the end too (before it raises)
        _, error, unguarded = first.run_for_picture(planted("global_index", "unguarded_tail"))
        assert isinstance(error, IndexError) and (first.SIZE, first.SIZE) in unguarded
    with pytest.raises(ValueError, match="exercise 'add_bias' has no picture; exercises with one: global_index"):
        exercises.draw("add_bias")


def test_progress_keeps_the_learners_passes_only(tmp_path, monkeypatch, capsys):
    """fl.check records a pass of the learner's code, never the library's solution or a failure, in the
    course's cache folder, where the next process finds it; the table lists every exercise."""
    monkeypatch.setenv("FASTLSTM_CACHE", str(tmp_path))
    monkeypatch.delenv("FASTLSTM_DISK_CACHE", raising=False)
    from fastlstm_lib.course.exercises import passes

    monkeypatch.setattr(passes, "_this_process", {})
    fl.check("global_index")  # the library's solution: no pass of the learner's
    fl.check("global_index", planted("global_index", "thread_index_missing"))
    fl.check("global_index", global_index_stub)
    assert passes.passed() == {}
    fl.check("add_bias", add_bias_in_own_words)
    capsys.readouterr()
    assert list(passes.passed()) == ["add_bias"] and (tmp_path / passes.FILE).exists()
    exercises.progress()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["notebook", "exercise", "difficulty", "you"]
    assert [line.split()[1] for line in lines[1:-1]] == exercises.names()
    assert lines[2].split()[:4] == ["02", "add_bias", "easy", "passed"] and lines[1].endswith("not yet")
    assert lines[-1].startswith(f"1 of {len(exercises.names())} passed")
    monkeypatch.setattr(passes, "_this_process", {})
    assert list(passes.passed()) == ["add_bias"]  # read back from the file, as another process would
    monkeypatch.setenv("FASTLSTM_DISK_CACHE", "0")
    assert passes.passed() == {}
    fl.check("global_index", first_kernel_in_own_words)
    capsys.readouterr()
    assert list(passes.passed()) == ["global_index"]  # kept in this process only
    assert "global_index" not in (tmp_path / passes.FILE).read_text()


def first_kernel_in_own_words(out):
    n = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if n < out.shape[0]:
        out[n] = n


def test_solutions_are_printable():
    assert "def gate_products" in exercises.solution("gate_products")
    assert "def _add_bias" in exercises.solution("add_bias")


@pytest.mark.parametrize("name", exercises.names())
def test_hints_come_in_three_levels_and_the_first_two_give_no_code_away(name, capsys):
    nudge, idea, code = exercises.get(name).hints
    assert all(len(text) > 40 for text in (nudge, idea, code))
    assert nudge.rstrip().endswith("?")  # a nudge asks
    solution_lines = {line.strip() for line in exercises.solution(name).splitlines()
                      if len(line.strip()) > 15 and not line.strip().startswith(("#", '"', "def ", "class "))}
    for level, text in ((1, nudge), (2, idea)):
        assert not any(line in text for line in solution_lines), (name, level)
    for level in (1, 2, 3):
        exercises.hint(name, level)
        printed = capsys.readouterr().out
        assert printed.startswith(f"{name}, hint {level} of 3 ") and exercises.get(name).hints[level - 1] in printed
    assert "print(fl.exercises.solution(" in printed  # after the last level: the solution, on request


def test_hint_refuses_what_is_no_level():
    with pytest.raises(ValueError, match="level must be 1 \\(a nudge\\), 2 \\(the idea\\) or 3 \\(the code\\), got 4"):
        exercises.hint("add_bias", 4)
    with pytest.raises(TypeError, match="level must be an int, 1, 2 or 3, got str '1'"):
        exercises.hint("add_bias", "1")
    with pytest.raises(TypeError, match="level must be an int"):
        exercises.hint("add_bias", True)
    with pytest.raises(ValueError, match="unknown exercise 'nope'"):
        exercises.hint("nope", 1)


def test_bad_requests_say_what_was_expected():
    with pytest.raises(ValueError, match="unknown exercise 'nope'; exercises: global_index, add_bias"):
        exercises.grade("nope")
    with pytest.raises(TypeError, match="expected a subclass of a fastlstm_lib step"):
        exercises.grade("gate_products", 42)
    with pytest.raises(TypeError, match="expected a kernel"):
        exercises.grade("add_bias", 42)


def test_a_fragment_in_other_words_passes_and_its_picture_marks_the_wrong_elements():
    """The library's layout table passes; a function that is no index map is judged, not crashed on;
    the picture draws a stub's A empty, a pass's labelled, a mistake's wrong elements red."""
    from fastlstm_lib.kernels.mma import layout

    assert exercises.grade("a_fragment", lambda lane, i: layout.element("a", lane, i)).passed
    for wrong, where in ((lambda lane, i: (lane, i), "lane 16's a0: returned (16, 0), outside the 16 x 8 matrix"),
                         (lambda lane, i: (8 + i, 4), "lane 0's a0 and lane 1's a0 both return (8, 4)"),
                         (lambda lane, i: "row", "not a (row, col) pair of ints")):
        verdict = exercises.grade("a_fragment", wrong)
        assert verdict.mistake == "generic" and where in verdict.text, verdict.text
    with pytest.raises(TypeError, match="expected a plain Python function"):
        exercises.grade("a_fragment", cuda.jit(add_bias_stub))
    stub = exercises.draw("a_fragment", a_fragment_stub).axes[0]
    assert stub.get_title().startswith("a_fragment: not attempted yet") and {t.get_text() for t in stub.texts} == {"?"}
    assert exercises.draw("a_fragment").axes[0].get_title().startswith("a_fragment: passed.")
    swapped = exercises.draw("a_fragment", planted("a_fragment", "registers_in_other_order")).axes[0]
    assert "registers_in_other_order" in swapped.get_title()
    assert {t.get_text() for t in swapped.texts} >= {"T0 a1", "T0 a2"}  # every element held, by the wrong register


def test_importing_the_exercises_loads_no_framework():
    heavy = ("tensorflow", "keras", "torch", "matplotlib")
    done = subprocess.run([sys.executable, "-c", "import sys, fastlstm_lib.course.exercises as e; e.names(); "
                           f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
