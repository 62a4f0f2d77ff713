"""The library's shape, as a newcomer relies on it: the LSTM first, no import cycle, small
documented modules, one definition per helper, and a ladder that is exactly its stepNN_*.py files."""

import ast
import difflib
import re
from pathlib import Path

import fastlstm_lib as fl

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fastlstm_lib"
#: Modules are split by concept, not by line count (a kernel family reads best in one file, its
#: versions listed in its header); this cap only catches a module that has become two.
MAX_LINES = 700


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str, path: Path) -> set[str]:
    """Every fastlstm_lib module ``name`` imports, at module level or inside a function."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from .pkg import sub` imports the submodule when there is one, else the package.
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in MODULES else origin
                       for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


def test_no_import_cycle():
    graph = {name: imported_modules(name, path) for name, path in MODULES.items()}
    visiting, done, cycles = [], set(), []

    def visit(name):
        if name in done:
            return
        if name in visiting:
            cycles.append(visiting[visiting.index(name):] + [name])
            return
        visiting.append(name)
        for target in sorted(graph[name]):
            visit(target)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


#: Where the package's parts live: the LSTM core is the package's own modules and these folders;
#: the course's apparatus, the Keras side topics and the set-up each have a folder of their own.
CORE_FOLDERS = ("kernels", "steps", "backward", "runtime")
AROUND = ("course", "topics", "setup")


def part_of(name: str) -> str:
    """"core", or the folder of the package's parts around it that holds module ``name``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in AROUND else "core"


def test_the_package_lists_the_lstm_first():
    """The root holds at most 17 modules, and the LSTM core's own folders; what is not the LSTM
    is in one of course/, topics/, setup/."""
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    folders = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists())
    assert len(modules) <= 17, modules
    assert folders == sorted(CORE_FOLDERS + AROUND), folders


def test_the_core_never_imports_the_course_or_the_topics():
    """The LSTM (kernels, steps, backward, their runtime and the root's modules) runs without the
    course around it: nothing of the core imports course/ or topics/ (the package's __init__,
    the public face, and the command lines, ``__main__`` modules, which print the course's tables, excepted)."""
    wrong = {name: sorted(target for target in imported_modules(name, path) if part_of(target) in ("course", "topics"))
             for name, path in MODULES.items()
             if part_of(name) == "core" and name != "fastlstm_lib" and not name.endswith(".__main__")}
    assert not {name: targets for name, targets in wrong.items() if targets}
    runtime = {name: sorted(target for target in imported_modules(name, path) if ".runtime" not in target)
               for name, path in MODULES.items() if name.startswith("fastlstm_lib.runtime")}
    assert not {name: targets for name, targets in runtime.items() if targets}  # where we run: below everything


def test_the_topics_never_import_the_course():
    """The side topics (CNN layouts, data feeding, the Keras layer) stand beside the course, not on
    it: nothing of ``topics/`` imports ``course/`` (the results files they share are the root's
    ``results.py``)."""
    wrong = {name: sorted(target for target in imported_modules(name, path) if part_of(target) == "course")
             for name, path in MODULES.items() if part_of(name) == "topics"}
    assert not {name: targets for name, targets in wrong.items() if targets}


#: What the kernels stand on, the ground floor: the argument checks, the GPU table, the tolerances
#: and float64 numerics, the results files (the runner's --out), the table helper, the timer, and
#: runtime/ (where we run). Not the LSTM's sizes, weights or reference (config, params, reference),
#: nor the recorder, the replay, the harness, the steps, the course or the topics: they stand on
#: the kernels.
BELOW_THE_KERNELS = {f"fastlstm_lib.{name}" for name in ("checks", "gpus", "numerics", "results", "tables", "timing")}


def below_the_kernels(name: str) -> bool:
    return name in BELOW_THE_KERNELS or name.startswith("fastlstm_lib.runtime")


def test_the_kernels_import_nothing_above_them():
    """``kernels/`` imports only itself and what stands below it (not the steps, the harness, the
    recorder, the launch counter, the course or the topics), and what stands below imports only
    what stands below: a kernel family can be read, checked and timed on its own."""
    wrong = {name: sorted(target for target in imported_modules(name, path)
                          if not (target.startswith("fastlstm_lib.kernels") or below_the_kernels(target)))
             for name, path in MODULES.items() if name.startswith("fastlstm_lib.kernels")}
    assert not {name: targets for name, targets in wrong.items() if targets}
    below = {name: sorted(target for target in imported_modules(name, MODULES[name]) if not below_the_kernels(target))
             for name in BELOW_THE_KERNELS}
    assert not {name: targets for name, targets in below.items() if targets}


def test_the_recorder_knows_no_kernel():
    """The launch recorder (``launches``, ``replay``) records whatever kernel is launched: it
    imports nothing of ``kernels/`` (a kernel's name comes from ``runtime/numba_compat``)."""
    wrong = {name: sorted(target for target in imported_modules(name, MODULES[name])
                          if target.startswith("fastlstm_lib.kernels"))
             for name in ("fastlstm_lib.launches", "fastlstm_lib.replay")}
    assert not {name: targets for name, targets in wrong.items() if targets}


def test_kernels_and_steps_ask_the_device_object_not_the_test_modes():
    """Kernels and steps ask ``runtime.device.DEVICE`` what the machine allows; only
    ``runtime/device.py`` reads the simulator's flags, and nothing names the fake GPU's package."""
    flag = re.compile(r"\bSIMULATOR\b|\bFAKE_GPU\b|values_computed|runtime import simulator|runtime\.simulator|fakegpu")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for folder in ("kernels", "steps", "backward")
             for path in sorted((PACKAGE / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if flag.search(line)]
    assert not found, found


def test_one_model_of_stream_ordering():
    """CUDA's stream ordering is written once, ``profile/graph.Order``: the profile's dependency
    graph and the exercises' race checks both ask it (no second model, such as vector clocks)."""
    graph = "fastlstm_lib.course.profile.graph"
    for user in ("fastlstm_lib.course.profile.record", "fastlstm_lib.course.exercises.trace"):
        assert graph in imported_modules(user, MODULES[user]), user
    defines = {name for name, path in MODULES.items()
               if any(isinstance(node, ast.ClassDef) and node.name == "Order" or
                      isinstance(node, ast.FunctionDef) and node.name in ("ordered", "join", "dependencies")
                      for node in ast.walk(ast.parse(path.read_text())))}
    assert defines == {graph}, defines


def test_every_module_says_what_it_is_for_and_is_one_concept():
    for name, path in MODULES.items():
        source = path.read_text()
        assert ast.get_docstring(ast.parse(source)), f"{name} has no module docstring"
        assert source.count("\n") <= MAX_LINES, f"{name} has {source.count(chr(10))} lines (> {MAX_LINES})"


def definitions():
    """(qualified module, name, normalised source of the body) of every top-level function and class."""
    found = []
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                body = [statement for statement in node.body
                        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))]
                found.append((module, node.name, len(body), ast.dump(ast.Module(body=body, type_ignores=[]))))
    return found


def test_no_helper_is_defined_twice():
    """Two modules defining the same name with (nearly) the same body is a helper written twice
    (the library's `_check_int`, `backend_name` and `_epoch_timer` once were). Same names for
    different jobs (`check` in the harness and in the exercises) are fine, and so are one-line
    bodies that differ (each naming its own target)."""
    by_name = {}
    for module, name, size, body in definitions():
        by_name.setdefault(name, []).append((module, size, body))
    twice = []
    for name, places in by_name.items():
        for i, (module_a, size_a, body_a) in enumerate(places):
            for module_b, size_b, body_b in places[i + 1:]:
                similarity = difflib.SequenceMatcher(None, body_a, body_b).ratio()
                if similarity == 1.0 or (min(size_a, size_b) >= 2 and similarity >= 0.8):
                    twice.append(f"{name}: {module_a} and {module_b}")
    assert not twice, "written twice: " + "; ".join(twice)


def test_the_ladder_is_its_step_files_in_notebook_order():
    files = sorted(path.stem for path in (PACKAGE / "steps").glob("step[0-9][0-9]_*.py"))
    assert fl.steps.LADDER.modules() == files  # in order: the step files' numbers are the notebooks'
    for name, module in zip(fl.steps.names(), files):
        number = re.match(r"step(\d\d)_", module).group(1)
        assert list((ROOT / "notebooks").glob(f"{number}_*.ipynb")), f"step {name!r} has no notebook {number}_*"


def test_keras_steps_share_the_step_interface():
    for name in fl.steps.keras_names():
        assert isinstance(fl.steps.get(name), fl.steps.LSTMStep)


#: Where the library may change Numba's objects other than through ``launches.patched``: fixes
#: made for good, once per process, never undone (module, function -> why).
PERMANENT_NUMBA_FIXES = {
    ("fastlstm_lib.runtime.numba_compat", "complete_builtin_simulator"): "names numba's own simulator lacks",
    ("fastlstm_lib.runtime.numba_compat", "restore_numpy_aliases"): "NumPy aliases numba-cuda needs",
    ("fastlstm_lib.runtime.numba_compat", "quiet_low_occupancy_warnings"): "no low-occupancy warning at small launches",
    ("fastlstm_lib.runtime.simulator", "lock_shared_array_allocation"): "the simulator's shared arrays, under a lock",
}


def numba_patches(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(enclosing top-level function, line, what) of every ``setattr``/``delattr`` call, every
    assignment to a ``__getitem__``, and every assignment to (or ``del`` of) an attribute of a
    Numba object: a name imported from numba, read from one (``shared = kernelapi.FakeCUDAShared``)
    or returned by a function of the module that imports from numba (``_simulator_modules()``)."""
    numba, loaders = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            numba.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "numba")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "numba":
            numba.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef) and any(isinstance(inner, (ast.Import, ast.ImportFrom))
                                                       and "numba" in ast.dump(inner) for inner in ast.walk(node)):
            loaders.add(node.name)
    assigns = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)]
    while True:  # names bound to what a numba name holds, until nothing new
        bound = {target.id for node in assigns for top in node.targets
                 for target in ([top] if isinstance(top, ast.Name) else getattr(top, "elts", []))
                 if isinstance(target, ast.Name)
                 and ({n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & numba
                      and not isinstance(node.value, ast.Call)
                      or isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in loaders)}
        if bound <= numba:
            break
        numba |= bound

    def root(node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return getattr(node, "id", None)

    found = []
    for function in tree.body:
        for node in ast.walk(function):
            where = (getattr(function, "name", ""), getattr(node, "lineno", 0))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("setattr", "delattr"):
                found.append((*where, f"{node.func.id}()"))
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                       else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in (t for top in targets for t in ast.walk(top)):
                if isinstance(target, ast.Attribute) and isinstance(target.ctx, (ast.Store, ast.Del)):
                    if target.attr == "__getitem__" or root(target) in numba:
                        found.append((*where, f"{ast.unparse(target)} assigned"))
    return found


def test_only_launches_patches_numba():
    """Counting launches, dry runs, replay recording, instrumented runs and the exercises' traces
    all intercept ``kernel[...]`` and replace Numba's attributes for a block. They do it through
    ``launches.py`` alone (``intercept``, ``patched``): one place to fix when numba-cuda changes,
    and interceptions that nest instead of overwriting each other. No other module assigns a
    ``__getitem__``, calls ``setattr``/``delattr``, or assigns an attribute of a Numba object,
    except the permanent fixes listed above."""
    offences = []
    for name, path in MODULES.items():
        if name == "fastlstm_lib.launches":
            continue
        for function, line, what in numba_patches(ast.parse(path.read_text())):
            if (name, function) not in PERMANENT_NUMBA_FIXES:
                offences.append(f"{path.relative_to(ROOT)}:{line} ({function or 'module level'}): {what}")
    assert not offences, "patch Numba through fastlstm_lib.launches (intercept, patched): " + "; ".join(offences)
    # The rule sees what it forbids: the patching helper itself is caught.
    assert [what for _, _, what in numba_patches(ast.parse(MODULES["fastlstm_lib.launches"].read_text()))]
