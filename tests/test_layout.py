"""The package's layout: a top level of packages, old module names that still import, a CLI without import cycles."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

import hf_symbolinv

PACKAGE = Path(hf_symbolinv.__file__).resolve().parent


def test_the_top_level_holds_packages_only() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py"]


@pytest.mark.parametrize(("old", "new"), sorted(hf_symbolinv.MOVED_MODULES.items()))
def test_a_moved_module_imports_under_its_old_name_as_the_same_module(old: str, new: str) -> None:
    assert importlib.import_module(f"hf_symbolinv.{old}") is importlib.import_module(f"hf_symbolinv.{new}")


def _relative_imports(path: Path) -> set[str]:
    """The sibling modules a module of ``hf_symbolinv/commands`` imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_the_cli_modules_import_each_other_without_a_cycle() -> None:
    folder = PACKAGE / "commands"
    graph = {path.stem: _relative_imports(path) & {p.stem for p in folder.glob("*.py")} for path in folder.glob("*.py")}
    assert {"train", "evaluate", "solve", "convert", "data", "demo_command", "export", "web", "common"} <= set(graph)
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for imported in graph[module]:
            visit(imported, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())


#: The folders whose modules must not import each other in a circle (a circle makes the import order matter, and
#: hides which module is the lower one).
CHECKED_FOLDERS = ("hf_symbolinv", "dataset_builders", "benchmarks", "scripts")


def _module_names(root: Path) -> dict[str, Path]:
    names = {}
    for folder in CHECKED_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    """Which of the checked modules each checked module imports: at the top, inside functions or under
    ``TYPE_CHECKING`` alike (each is an edge someone must reason about), read with ``ast`` (nothing is run). A
    script's bare ``import sibling`` is its folder's module (scripts run with their folder on ``sys.path``)."""
    names = _module_names(root)

    def known(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in names.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        imported: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    imported.add(known(alias.name))
                    if "." not in alias.name and package and f"{package}.{alias.name}" in names:
                        imported.add(f"{package}.{alias.name}")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                    if package and "." not in source and f"{package}.{source}" in names:
                        source = f"{package}.{source}"
                for alias in node.names:
                    imported.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in names else known(source))
        graph[module] = {name for name in imported if name is not None and name != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[module] = min(low[module], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(tmp_path) -> None:
    for name, text in {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .c import g\n",
        "c.py": "import hf_symbolinv.a\n",
        "d.py": "from .a import x\n",
    }.items():
        (tmp_path / "hf_symbolinv").mkdir(exist_ok=True)
        (tmp_path / "hf_symbolinv" / name).write_text(text, encoding="utf-8")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "one.py").write_text("import two\n", encoding="utf-8")
    (tmp_path / "benchmarks" / "two.py").write_text("def f():\n    import one\n", encoding="utf-8")
    circles = import_circles(import_graph(tmp_path))
    expected = [["benchmarks.one", "benchmarks.two"], ["hf_symbolinv.a", "hf_symbolinv.b", "hf_symbolinv.c"]]
    assert sorted(circles) == expected  # d imports a, but nothing imports d: not in a circle


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = import_graph(PACKAGE.parent)
    assert len(graph) > 100 and "hf_symbolinv.logic.formula" in graph["hf_symbolinv.logic.notation"]
    assert import_circles(graph) == []


#: The bottom layer: the logic engine and the utilities import each other and nothing else of the package.
BOTTOM_LAYER = ("hf_symbolinv.utils", "hf_symbolinv.logic")
#: Everything above it (imports point down: commands -> routes -> training/evaluation -> models/tasks -> logic/utils).
ABOVE_THE_BOTTOM = (
    "hf_symbolinv.tasks",
    "hf_symbolinv.models",
    "hf_symbolinv.pretrained",
    "hf_symbolinv.training",
    "hf_symbolinv.evaluation",
    "hf_symbolinv.routes",
    "hf_symbolinv.commands",
    "hf_symbolinv.web",
)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module of the bottom layer into a layer above it, as ``module -> imported``."""
    return sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        if _within(module, BOTTOM_LAYER)
        for imported in imports
        if _within(imported, ABOVE_THE_BOTTOM)
    )


def test_the_layer_check_finds_an_upward_import_inside_a_function(tmp_path) -> None:
    files = {
        "__init__.py": "",
        "utils/__init__.py": "",
        "utils/cards.py": "from .files import write\n\ndef card():\n    from ..models.registry import get_family\n",
        "utils/files.py": "def write():\n    from ..logic import parse\n",
        "logic/__init__.py": "import hf_symbolinv.routes.common\n",
        "models/__init__.py": "",
        "models/registry.py": "from ..utils.cards import card\n",
        "routes/__init__.py": "",
        "routes/common.py": "from ..models import registry\n",
    }
    for name, text in files.items():
        (tmp_path / "hf_symbolinv" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "hf_symbolinv" / name).write_text(text, encoding="utf-8")
    # models and routes importing utils is the right direction; utils importing logic stays in the bottom layer.
    assert upward_imports(import_graph(tmp_path)) == [
        "hf_symbolinv.logic -> hf_symbolinv.routes.common",
        "hf_symbolinv.utils.cards -> hf_symbolinv.models.registry",
    ]


def test_the_utilities_and_the_logic_engine_import_no_layer_above_them() -> None:
    graph = import_graph(PACKAGE.parent)
    assert "hf_symbolinv.utils.symbols" in graph["hf_symbolinv.logic.prop"]  # the graph sees the bottom layer
    assert upward_imports(graph) == []


#: The package's layers, top to bottom: a module imports its own layer's modules and the layers below only.
LAYERS = (
    ("hf_symbolinv.commands", "hf_symbolinv.web"),
    ("hf_symbolinv.routes",),
    ("hf_symbolinv.training", "hf_symbolinv.evaluation"),
    ("hf_symbolinv.models", "hf_symbolinv.pretrained", "hf_symbolinv.tasks"),
    BOTTOM_LAYER,
)


def imports_against_the_layers(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module of a higher layer than the importing module's, as ``module -> imported``."""

    def layer(module: str) -> int | None:
        return next((index for index, packages in enumerate(LAYERS) if _within(module, packages)), None)

    found = []
    for module, imports in graph.items():
        own = layer(module)
        for imported in imports:
            other = layer(imported)
            if own is not None and other is not None and other < own:
                found.append(f"{module} -> {imported}")
    return sorted(found)


def test_every_import_points_down_the_layers() -> None:
    graph = import_graph(PACKAGE.parent)
    assert "hf_symbolinv.utils.metrics" in graph["hf_symbolinv.tasks.copy"]  # tasks may use the utilities
    assert imports_against_the_layers({"hf_symbolinv.tasks.x": {"hf_symbolinv.evaluation.metrics"}}) == [
        "hf_symbolinv.tasks.x -> hf_symbolinv.evaluation.metrics"
    ]
    assert imports_against_the_layers(graph) == []


RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
#: Folders runs were writing into before the scheme: they keep their names and their own layout.
RESULTS_KEPT_AS_THEY_ARE = {"campaign"}


def test_every_study_of_the_results_has_its_folder_with_results_md_and_results_json() -> None:
    loose = sorted(path.name for path in RESULTS.iterdir() if path.is_file())
    assert not loose, f"benchmarks/results/ holds files outside a study's folder: {loose}"
    studies = sorted(path for path in RESULTS.iterdir() if path.is_dir() and path.name not in RESULTS_KEPT_AS_THEY_ARE)
    lacking = [f"{study.name}/{name}" for study in studies for name in ("RESULTS.md", "results.json")]
    lacking = [path for path in lacking if not (RESULTS / path).is_file()]
    assert not lacking, f"studies without their RESULTS.md or results.json: {lacking}"
    for study in studies:  # machine-readable: each parses
        json.loads((study / "results.json").read_text(encoding="utf-8"))


def test_study_folders_are_named_in_lower_case_words_joined_by_underscores() -> None:
    names = sorted(path.name for path in RESULTS.iterdir() if path.is_dir())
    badly_named = [name for name in names if not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", name)]
    assert not badly_named, f"study folders named outside benchmarks/README.md's scheme: {badly_named}"
