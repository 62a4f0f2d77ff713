"""The learner writes before seeing: no cell of an exercise's notebook shows its answer.

Every cell that calls ``fl.check("<name>", ...)`` grades an exercise; no other cell of that
notebook (its source, and its stored outputs: stream text and text/plain), above the check or
below it, may show the code the learner is asked to write. The answer comes when the learner asks:
``fl.exercises.solution(name)``, or a commented line to uncomment once the check passes. The
answer is the exercise's solution and the library code it mirrors (``MIRRORS``), less what the
exercise's own scaffold (the stub with ``raise NotImplementedError`` that defines the candidate)
already gives. Both are compared line by line, normalised: stripped, comments dropped, and blank,
docstring, ``def``/``class``, decorator and import lines dropped, as are lines shorter than
``MIN_LENGTH`` (``h_prev = hs[t]`` and the like say nothing on their own). A cell that holds
``THRESHOLD`` or more of the answer's lines shows the answer.

Besides, no stored output of any notebook holds ``RUN`` consecutive lines of an answer: of a
solution, of the code it mirrors, or of a kernel that answers it in other code (``ANSWERING``: a
later notebook printing a kernel that contains an earlier exercise's answer shows it too).

Reads the notebooks' JSON only: nothing is executed.
"""

import ast
import importlib
import inspect
import json
import re
import textwrap
from pathlib import Path

import pytest

from conftest import output_text
from fastlstm_lib.course import exercises

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: A cell above the check showing this many of the answer's lines shows the answer. One line may be
#: a coincidence or a hint (``i = cuda.grid(1)``, ``cuda.syncthreads()``); two are code copied.
THRESHOLD = 2
#: Shorter lines are left out of the comparison: too generic to tell anything.
MIN_LENGTH = 15

#: The library code each exercise mirrors, besides its solution: "module:qualified.name", a name
#: inside a function found by its ``def`` (the kernel factories define their kernels inside).
MIRRORS = {
    "global_index": [],  # the course's first kernel: no library kernel is this small
    "add_bias": ["fastlstm_lib.kernels.pointwise:_add_bias"],
    "tile_loads": ["fastlstm_lib.kernels.gemm:tiled_gemm_kernel.tiled_gemm"],
    "gate_products": ["fastlstm_lib.steps.step03_combined_gemms:CombinedGemms.gate_products",
                      "fastlstm_lib.steps.step03_combined_gemms:CombinedGemms.input_gemm",
                      "fastlstm_lib.steps.step03_combined_gemms:CombinedGemms.recurrent_gemm"],
    "side_stream": ["fastlstm_lib.steps.step04_streams:Streams.run_layer"],
    "fused_cell": ["fastlstm_lib.kernels.pointwise:_lstm_cell"],
    "upload": ["fastlstm_lib.steps.step06_pretransposed:Pretransposed.upload_weights"],
    "input_chunks": ["fastlstm_lib.steps.step07_combined_inputs:CombinedInputs.run_layer"],
    "diagonals": ["fastlstm_lib.steps.step08_wavefront:Wavefront.run"],
    "grid_step": ["fastlstm_lib.kernels.persistent:persistent_layer_kernel.persistent_layer"],
    # the exercise's gate_dots is the library's dot_quad written plainly (its solution says so)
    "rows_per_thread": ["fastlstm_lib.kernels.persistent:persistent_layer_kernel.dot_quad"],
    "a_fragment": ["fastlstm_lib.kernels.mma.layout:element"],
    "column_sum": ["fastlstm_lib.kernels.reduce:column_sum_kernel.column_sum"],
}

#: Kernels that answer an exercise in other code, though the exercise does not mirror them: printed,
#: they show its answer (the register-blocked and exact-tile GEMMs load their tiles and wait at the
#: barriers as tile_loads does; the training cell is the fused cell plus two stores).
ANSWERING = {
    "tile_loads": ["fastlstm_lib.kernels.gemm:blocked_gemm_kernel", "fastlstm_lib.kernels.gemm:exact_gemm_kernel"],
    "fused_cell": ["fastlstm_lib.kernels.pointwise_backward:_lstm_cell_train"],
}
#: Consecutive lines of an answer that no stored output may hold.
RUN = 4

CHECK = re.compile(r"""\bfl\.check\(\s*["'](\w+)["']\s*,\s*(\w+)""")
COMMENT = re.compile(r"\s+#(\s.*)?$")
SKIPPED = ("def ", "async def ", "class ", "@", "import ", "from ")
TRIPLE_QUOTE = re.compile(r"""^[rRbBuUfF]*("{3}|'{3})""")


def significant_lines(text: str) -> set[str]:
    """The lines of ``text`` that can tell code apart, normalised (see the module docstring)."""
    lines, in_string = set(), None
    for raw in text.splitlines():
        line = raw.strip()
        if in_string:  # inside a docstring (or any triple-quoted block): skip to its end
            if in_string in line:
                in_string = None
            continue
        opening = TRIPLE_QUOTE.match(line)
        if opening:
            quote = opening.group(1)
            if line.count(quote) == 1:  # it goes on over the next lines
                in_string = quote
            continue
        if line.startswith("#"):
            continue
        line = COMMENT.sub("", line).rstrip()
        if len(line) < MIN_LENGTH or line.startswith(SKIPPED):
            continue
        lines.add(line)
    return lines


def source_of(spec: str) -> str:
    """The source of "module:qualified.name"; a part that is no attribute is a ``def`` inside the one before."""
    module, qualname = spec.split(":")
    obj, source = importlib.import_module(module), None
    for part in qualname.split("."):
        if source is None and hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        if source is None:
            source = textwrap.dedent(inspect.getsource(getattr(obj, "py_func", None) or obj))
        found = [node for node in ast.walk(ast.parse(source))
                 if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == part]
        assert found, f"{spec}: no def {part} inside"
        source = textwrap.dedent(ast.get_source_segment(source, found[0], padded=True))
    if source is None:
        source = inspect.getsource(getattr(obj, "py_func", None) or getattr(obj, "fn", None) or obj)
    return source


def cell_text(cell) -> str:
    """A cell's source and its stored outputs' text (stream text, text/plain)."""
    return "".join(cell["source"]) + "\n" + output_text(cell)


def checks(cells):
    """(cell index, exercise name, candidate name) of every cell that calls fl.check on an exercise."""
    return [(index, match.group(1), match.group(2)) for index, cell in enumerate(cells) if cell["cell_type"] == "code"
            for match in CHECK.finditer("".join(cell["source"]))]


def scaffold_index(cells, check_index: int, candidate: str) -> int | None:
    """The last code cell above the check that defines the candidate: the exercise's stub."""
    defines = re.compile(rf"^\s*(def|class)\s+{re.escape(candidate)}\b", re.M)
    return next((index for index in range(check_index - 1, -1, -1)
                 if cells[index]["cell_type"] == "code" and defines.search("".join(cells[index]["source"]))), None)


def answer_lines(name: str, given: set[str] = frozenset()) -> set[str]:
    """The exercise's answer, line by line: its solution and the code it mirrors, less what the stub gives."""
    lines = significant_lines(exercises.solution(name))
    for spec in MIRRORS.get(name, []):
        lines |= significant_lines(source_of(spec))
    return lines - set(given)


def test_every_exercise_has_a_mirror_and_a_check_in_a_notebook():
    checked = {name for path in NOTEBOOKS for _, name, _ in checks(json.loads(path.read_text())["cells"])}
    assert sorted(MIRRORS) == sorted(exercises.names())
    assert checked == set(exercises.names())


@pytest.mark.parametrize("name", exercises.names())
def test_the_rule_sees_each_answer(name):
    """The solution printed above the check would be caught: the rule is not vacuous for any exercise."""
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        for index, exercise, candidate in checks(cells):
            if exercise != name:
                continue
            stub = scaffold_index(cells, index, candidate)
            given = significant_lines(cell_text(cells[stub])) if stub is not None else set()
            assert len(answer_lines(name, given) & significant_lines(exercises.solution(name))) >= THRESHOLD, (
                f"{path.name}: the rule would hardly see {name}'s solution")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_shows_the_answer(path):
    cells = json.loads(path.read_text())["cells"]
    problems = []
    for check_index, name, candidate in checks(cells):
        stub = scaffold_index(cells, check_index, candidate)
        if stub is None:
            problems.append(f"{path.name}: cell {check_index} checks {name} with {candidate}, defined in no cell above it")
            continue
        stub_source = "".join(cells[stub]["source"])
        if "NotImplementedError" not in stub_source:
            problems.append(f"{path.name}: cell {stub}, the stub of {name}, is not a stub (no NotImplementedError)")
        answer = answer_lines(name, significant_lines(stub_source))
        for index, cell in enumerate(cells):
            if index == stub:
                continue
            shown = sorted(answer & significant_lines(cell_text(cell)))
            if len(shown) >= THRESHOLD:
                where = "above" if index < check_index else "below"
                problems.append(f"{path.name}: cell {index} ({where} the check of {name!r} in cell {check_index}) "
                                f"shows {len(shown)} lines of its answer:\n    " + "\n    ".join(shown))
    assert not problems, ("the learner writes before seeing, and sees the answer only on asking: print it from a "
                          "commented line or fl.exercises.solution\n" + "\n".join(problems))


def answer_sources(name: str) -> list[str]:
    """Everything whose printout shows exercise ``name``'s answer: its solution, the code it mirrors,
    the kernels that answer it (``ANSWERING``)."""
    return [exercises.solution(name)] + [source_of(spec) for spec in MIRRORS.get(name, []) + ANSWERING.get(name, [])]


def shows_a_run(source: str, text: str, run: int = RUN) -> bool:
    """Whether ``text`` holds ``run`` consecutive non-blank lines of ``source`` (each stripped), in order."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    printed = "\n" + "\n".join(line.strip() for line in text.splitlines() if line.strip()) + "\n"
    return any("\n" + "\n".join(lines[i:i + run]) + "\n" in printed for i in range(len(lines) - run + 1))


@pytest.fixture(scope="module")
def sources():
    return {name: answer_sources(name) for name in exercises.names()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_output_shows_an_answer(path, sources):
    """In any notebook, not just the exercise's own: a printed kernel is in view the moment the
    notebook opens, before the learner has written anything."""
    cells = json.loads(path.read_text())["cells"]
    found = [f"{path.name}: cell {index}'s output holds {RUN} or more lines of {name!r}'s answer"
             for index, cell in enumerate(cells) if cell["cell_type"] == "code"
             for name, texts in sources.items() if any(shows_a_run(text, output_text(cell)) for text in texts)]
    assert not found, "a cell that prints an answer keeps no stored output (uncommented by the learner):\n" + "\n".join(found)


def test_the_output_rule_sees_a_printed_solution_and_kernel(sources):
    """A scratch output printing a solution, or a kernel on the ANSWERING list, fails the rule; the
    course's own printouts of the steps pass it."""
    assert shows_a_run(exercises.solution("fused_cell"), "out:\n" + exercises.solution("fused_cell"))
    assert shows_a_run(source_of(ANSWERING["fused_cell"][0]), source_of(ANSWERING["fused_cell"][0]))
    assert any(shows_a_run(text, source_of("fastlstm_lib.kernels.gemm:blocked_gemm_kernel")) for text in sources["tile_loads"])
    assert not any(shows_a_run(text, source_of("fastlstm_lib.steps.step05_fused_pointwise:FusedPointwise"))
                   for text in sources["fused_cell"])


#: Markdown words a learner reads, counting from notebook 00, before the course's first exercise is checked.
FIRST_EXERCISE_WORDS = 1_000


def test_the_first_exercise_comes_early_with_its_picture():
    """A first win early: the first ``fl.check`` of the course comes within FIRST_EXERCISE_WORDS words of
    Markdown from the start of 00, and a later cell of its notebook draws that exercise's picture
    (``fl.exercises.draw``), stored as an image."""
    words = 0
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        for index, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                words += len(re.findall(r"\S+", source))
                continue
            found = CHECK.search(source)
            if not found:
                continue
            assert words <= FIRST_EXERCISE_WORDS, (f"{path.name} cell {index}: the first exercise comes after "
                                                   f"{words} words of Markdown (at most {FIRST_EXERCISE_WORDS})")
            assert exercises.get(found.group(1)).picture is not None, f"{found.group(1)} has no picture"
            drawn = [later for later in cells[index + 1:] if later["cell_type"] == "code"
                     and f'exercises.draw("{found.group(1)}"' in "".join(later["source"])
                     and any("image/png" in o.get("data", {}) for o in later.get("outputs", []))]
            assert drawn, f"{path.name}: no cell after the check draws {found.group(1)}'s picture, stored as an image"
            return
    pytest.fail("no notebook checks an exercise")
