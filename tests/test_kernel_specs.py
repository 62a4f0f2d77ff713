"""Each kernel version's facts are written once, beside its kernel (``fastlstm_lib/kernels/spec.py``),
and they hold: every kernel has a spec, the steps a dry run of every step shows launching it are
the ones written here (``STEPS_OF``), its access positions are arguments of its kernel, its builds
are the compile matrix's rows, and its case is in the catalog. The readers (the profile's formulas, the
exercises' access table, the timeline's GEMM rows, the compile matrix, the course's charts, counts
and estimates) take them from there: the course names no kernel."""

import ast
import collections
import re
from pathlib import Path

import pytest

import fastlstm_lib as fl
from fastlstm_lib.config import LSTMConfig
from fastlstm_lib.course.exercises.trace import ACCESS
from fastlstm_lib.gpus import chip
from fastlstm_lib.kernels import catalog, gemm
from fastlstm_lib.kernels.versions import every, spec_of
from fastlstm_lib.runtime.numba_compat import function_name
from fastlstm_lib.course.profile.formulas import FORMULAS, kernel_description
from fastlstm_lib.course.profile.record import record_pass
from fastlstm_lib.course.timeline.blocks import GEMM_ROWS

KERNELS = Path(fl.__file__).parent / "kernels"


def jit_kernels() -> set[str]:
    """The names of every @cuda.jit function in fastlstm_lib/kernels/ that is no device function."""
    names = set()
    for path in KERNELS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                for decorator in node.decorator_list:
                    text = ast.unparse(decorator)
                    if text.startswith("cuda.jit") and "device=True" not in text:
                        names.add(node.name)
    return names



def test_every_gemm_version_has_a_kernel_of_its_own_name():
    """The kernel each GEMM version file builds carries the version's name (what SASS listings,
    profiles and tables show): no two versions share one, and no lookup recovers which ran."""
    names = [spec.name for spec in every() if spec.family == "gemm"]
    assert len(names) == len(set(names)), names
    for spec in every():
        if spec.family == "gemm":
            assert {function_name(build.make()[0]) for build in spec.builds()} == {spec.name}, spec.number


#: The backward ladder's steps (``backward/``), in order.
BACKWARD = ("bwd_op_by_op", "bwd_fused_pointwise", "bwd_combined_gemms", "bwd_combined_weights", "bwd_wavefront")
#: The forward steps that launch the element-wise kernels one operation at a time (steps 02-04) ...
UNFUSED = ("baseline", "combined_gemms", "streams")
#: ... and those that launch the fused cell (steps 05-08).
FUSED = ("fused_pointwise", "pretransposed", "combined_inputs", "wavefront")

#: Kernel name -> the steps whose pass launches it at the article's size with an H100's launch
#: geometry (``launched``, a dry run of every step, must show exactly these).
STEPS_OF = {
    "tiled_gemm": (),
    "blocked_gemm": BACKWARD[:3],
    "exact_gemm": UNFUSED + FUSED + ("persistent",) + BACKWARD,
    "prefetch_gemm": (),
    "vector_gemm": (),
    "split_gemm": (),
    "recurrent_gemm": (),
    "warptiled_gemm": (),
    "tf32_gemm": (),
    "_fill": UNFUSED + FUSED + BACKWARD,  # steps 02-08 zero the cell state with it; the backward ladder, the gradients
    "_add": UNFUSED + ("bwd_op_by_op",),
    "_add_bias": UNFUSED,
    "_mul": UNFUSED + ("bwd_op_by_op",),
    "_sigmoid": UNFUSED,
    "_tanh": UNFUSED + ("bwd_op_by_op",),
    "_lstm_cell": FUSED,
    "_lstm_cell_split": (),
    "_lstm_cell_train": BACKWARD,
    "_sigmoid_backward": BACKWARD[:1],
    "_tanh_backward": BACKWARD[:1],
    "_lstm_cell_backward": BACKWARD[1:],
    "column_sum": BACKWARD[3:],
    "persistent_layer": ("persistent",),
    "persistent_registers": (),
    "persistent_light_barrier": (),  # the "fast" policy keeps version 2 until a GPU has timed both
}


def test_the_backward_ladder_is_named_once():
    assert BACKWARD == tuple(fl.backward.names())

#: The kernels one factory builds under each version's name (``gemm/pipeline.double_buffered``):
#: no decorator names them in the source; ``test_every_gemm_version_has_a_kernel_of_its_own_name`` does.
NAMED_WHERE_BUILT = {"prefetch_gemm", "vector_gemm", "split_gemm"}


def test_every_kernel_has_a_spec_and_every_spec_is_one_version():
    names = [spec.name for spec in every()]
    assert len(names) == len(set(names)), names  # every version its own kernel name
    assert jit_kernels() == set(names) - NAMED_WHERE_BUILT


@pytest.fixture(scope="module")
def launched() -> dict:
    """Spec -> the steps whose pass (setup left out) launches it, at the article's size on an H100."""
    found = collections.defaultdict(list)
    for ladder in (fl.steps, fl.backward):
        for name in ladder.names():
            recording, _ = record_pass(ladder.get(name), LSTMConfig.article(), chip("H100"), {})
            for call in recording.launches:
                spec = spec_of(call.kernel)
                assert spec is not None, f"{name} launches {function_name(call.kernel)}, which has no spec"
                if name not in found[spec]:
                    found[spec].append(name)
    return found


def test_each_kernel_is_launched_by_the_steps_written_for_it(launched):
    assert set(STEPS_OF) == {spec.name for spec in every()}
    for spec in every():
        assert set(STEPS_OF[spec.name]) == set(launched.get(spec, ())), (spec.label, spec.number)


def test_access_positions_are_arguments_and_builds_are_kernels():
    for spec in every():
        built = spec.builds()
        assert built, spec.label
        for build in built:
            kernel, signature = build.make()
            assert function_name(kernel) == spec.name, build.row
            arguments = kernel_description(kernel)[1]
            assert len(signature) == len(arguments), build.row
            reads, writes = spec.access
            assert set(reads) | set(writes) <= set(range(len(arguments))) and writes, build.row


def test_the_readers_take_the_specs():
    assert FORMULAS == {spec.name: spec.traffic for spec in every() if spec.traffic}
    assert {name: ACCESS[name] for name in ACCESS if name != "_empty_kernel"} == {
        spec.name: spec.access for spec in every()}
    rows = [build.row for spec in every() for build in spec.builds()]
    assert len(rows) == len(set(rows))
    assert set(GEMM_ROWS.values()) <= set(rows)
    for spec in every():  # every GEMM version a step launches has a timed row for each blocking it runs
        if spec.family == "gemm" and STEPS_OF[spec.name]:
            assert any(name == spec.name for _, name in GEMM_ROWS), spec.label
    # one runner entry per version file, cuBLAS (version 0) first and gemm() after the GEMM versions
    assert [spec for version in catalog.VERSIONS for spec in version.specs] == [
        gemm.v0_cublas.SPEC, *gemm.SPECS, gemm.launch.SPEC] + [spec for spec in every() if spec.family != "gemm"]
    assert all(len({spec.number for spec in version.specs}) == 1 for version in catalog.VERSIONS)
    assert [module.SPEC.number for module in gemm.VERSIONS] == list(range(len(gemm.VERSIONS)))  # its files, in order


#: Kernels the course names on purpose, outside its exercises (which teach kernels by name): the
#: compile-matrix rows notebook 12 reads as SASS text (``course/sass.py``'s ``LISTED``).
NAMED_ON_PURPOSE = {"sass.py": {"blocked_gemm", "exact_gemm"}}


def string_literals(tree: ast.Module) -> list[ast.Constant]:
    """The str constants of a module that are no docstring."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_course_reads_a_kernel_from_its_spec_not_its_name():
    """No string in the course (its exercises aside) is a kernel's name, or its label where that is
    no plain word ("fill", "tanh": words the course uses as words): what the course knows of a
    kernel (its family, its role and colour in the charts, its compiled rows, how it stages h) it
    reads from its spec, so a new version is a new file and no course edit."""
    names = {spec.name for spec in every()} | {spec.label for spec in every() if "_" in spec.label}
    course = Path(fl.__file__).parent / "course"
    found = []
    for path in sorted(course.rglob("*.py")):
        if "exercises" in path.relative_to(course).parts:
            continue
        for node in string_literals(ast.parse(path.read_text())):
            if node.value in names and node.value not in NAMED_ON_PURPOSE.get(path.name, ()):
                found.append(f"{path.relative_to(course)}:{node.lineno}: {node.value!r}")
    assert not found, "the course names kernels; read their specs instead:\n" + "\n".join(found)


def test_the_chart_and_timeline_facts_hold():
    """Every role has a colour in the profile's timeline, every colour is Matplotlib's, a per-batch
    row pattern names its kernel's compiled rows, and a staging width is a whole number of floats."""
    from matplotlib.colors import is_color_like

    from fastlstm_lib.course.profile.charts import ELEMENTWISE, ROLE_COLORS

    for spec in every():
        assert spec.role in set(ROLE_COLORS) | {ELEMENTWISE}, spec.label
        assert spec.colour is None or is_color_like(spec.colour), spec.label
        assert isinstance(spec.staged_floats, int) and spec.staged_floats >= 1, spec.label
        if spec.batch_row is not None:
            pattern = re.escape(spec.batch_row).replace(re.escape("{batch}"), r"\d+")
            rows = [build.row for build in spec.builds()]
            assert rows and all(re.fullmatch(pattern, row) for row in rows), (spec.label, rows)
