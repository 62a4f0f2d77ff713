"""The library's shape, as a newcomer relies on it: no import cycle, small documented modules,
one definition per helper, and a ladder that is exactly its stepNN_*.py files."""

import ast
import difflib
import re
from pathlib import Path

import fastlstm_lib as fl

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fastlstm_lib"
#: "Modules under ~300 lines": a little slack, not a second limit.
MAX_LINES = 320


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


def test_every_module_is_small_and_says_what_it_is_for():
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
    bodies that differ (each exercise's `_plant` names its own kernel)."""
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
    assert fl.steps.ladder_modules() == files
    numbers = [fl.steps.notebook(name) for name in fl.steps.names()]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    for name, module in zip(fl.steps.names(), files):
        number = re.match(r"step(\d\d)_", module).group(1)
        assert list((ROOT / "notebooks").glob(f"{number}_*.ipynb")), f"step {name!r} has no notebook {number}_*"


def test_keras_steps_share_the_step_interface():
    for name in fl.steps.keras_names():
        assert isinstance(fl.steps.get(name), fl.steps.LSTMStep)
