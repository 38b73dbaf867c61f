"""The package's layout: a top level of packages, old module names that still import, a CLI without import cycles."""

from __future__ import annotations

import ast
import importlib
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
    assert {"train", "evaluate", "solve", "convert", "data", "demo", "web", "common"} <= set(graph)
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
