"""Each kernel version's facts are written once, beside its kernel (``fastlstm_lib/kernels/spec.py``),
and they hold: every kernel has a spec, every spec names the steps a dry run of every step shows
launching it, its access positions are arguments of its kernel, its builds are the compile
matrix's rows, and its case is in the catalog. The readers (the profile's formulas, the
exercises' access table, the timeline's GEMM rows, the compile matrix) take them from there."""

import ast
import collections
from pathlib import Path

import pytest

import fastlstm_lib as fl
from fastlstm_lib.config import LSTMConfig
from fastlstm_lib.course.exercises.memory import ACCESS
from fastlstm_lib.gpus import chip
from fastlstm_lib.kernels import catalog, gemm
from fastlstm_lib.kernels.spec import function_name
from fastlstm_lib.kernels.versions import every, spec_of
from fastlstm_lib.course.profile.formulas import FORMULAS, argument_names
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


def test_the_backward_ladder_is_named_once():
    from fastlstm_lib.kernels.spec import BACKWARD_STEPS

    assert BACKWARD_STEPS == tuple(fl.backward.names())

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


def test_each_spec_names_the_steps_that_launch_it(launched):
    for spec in every():
        assert set(spec.steps) == set(launched.get(spec, ())), (spec.label, spec.number)


def test_access_positions_are_arguments_and_builds_are_kernels():
    for spec in every():
        built = spec.builds()
        assert built, spec.label
        for build in built:
            kernel, signature = build.make()
            assert function_name(kernel) == spec.name, build.row
            arguments = argument_names(kernel)
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
        if spec.family == "gemm" and spec.steps:
            assert any(name == spec.name for _, name in GEMM_ROWS), spec.label
    # one runner entry per version file, cuBLAS (version 0) first and gemm() after the GEMM versions
    assert [spec for version in catalog.VERSIONS for spec in version.specs] == [
        gemm.v0_cublas.SPEC, *gemm.SPECS, gemm.launch.SPEC] + [spec for spec in every() if spec.family != "gemm"]
    assert all(len({spec.number for spec in version.specs}) == 1 for version in catalog.VERSIONS)
    assert [module.SPEC.number for module in gemm.VERSIONS] == list(range(len(gemm.VERSIONS)))  # its files, in order
