"""Check that code copied between model families' Hub folders has not drifted from its original.

A family's folder must be self-contained (``save_pretrained`` copies it next to the weights, and
``trust_remote_code=True`` loads it where this package is not installed), so a piece that two families
need exists twice, on purpose. Each copy is marked, in the style of transformers:

* ``# Copied from hf_symbolinv.models.symbolinv.streams.first_appearance_streams`` on the line before a
  top-level function, class or assignment: that definition must equal the original's source;
* ``# Copied from hf_symbolinv.utils.symbols`` (a module, no object) as the first line of a file: the rest of
  the file must equal the original module's text.

Run ``python -m hf_symbolinv.utils.check_copies`` (exit status 1 and one line per drifted copy) or
``--fix`` to rewrite the copies from their originals. The test suite runs the check.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^# Copied from (hf_symbolinv(?:\.\w+)+)\s*$")


@dataclass(frozen=True)
class Copy:
    path: Path
    line: int  # 1-based line of the marker
    target: str  # dotted name of the original
    module_copy: bool


def _module_path(dotted: str) -> Path | None:
    parts = dotted.split(".")[1:]
    candidate = PACKAGE_ROOT.joinpath(*parts)
    if candidate.with_suffix(".py").is_file():
        return candidate.with_suffix(".py")
    if (candidate / "__init__.py").is_file():
        return candidate / "__init__.py"
    return None


def _split_target(dotted: str) -> tuple[Path, str | None]:
    """The original's file and the object name in it (None for a whole module)."""
    path = _module_path(dotted)
    if path is not None:
        return path, None
    module, _, name = dotted.rpartition(".")
    path = _module_path(module)
    if path is None:
        raise ValueError(f"no module for {dotted!r}")
    return path, name


def _node_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _segment(text: str, node: ast.stmt) -> str:
    lines = text.splitlines()
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1 : node.end_lineno])


def _definition(path: Path, name: str) -> str:
    text = path.read_text()
    for node in ast.parse(text).body:
        if _node_name(node) == name:
            return _segment(text, node)
    raise ValueError(f"{path.relative_to(PACKAGE_ROOT.parent)} defines no top-level {name!r}")


def find_copies(root: Path = PACKAGE_ROOT) -> list[Copy]:
    copies = []
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = MARKER.match(line)
            if match:
                _, name = _split_target(match.group(1))
                copies.append(Copy(path, number, match.group(1), module_copy=name is None))
    return copies


def _copied_node(path: Path, text: str, marker_line: int) -> ast.stmt:
    for node in ast.parse(text).body:
        if node.lineno > marker_line:
            return node
    raise ValueError(f"{path}:{marker_line}: a 'Copied from' marker with no definition after it")


def check(fix: bool = False, root: Path = PACKAGE_ROOT) -> list[str]:
    """One message per copy that differs from its original (fixed in place when ``fix``)."""
    if not fix:
        return _check_once(False, root)
    fixed: list[str] = []
    # A fix moves the lines after it, so markers are found again after each fixed copy.
    for _ in range(len(find_copies(root)) + 1):
        problems = _check_once(True, root, stop_after_fix=True)
        if not problems:
            return fixed
        fixed += problems
    return fixed


def _check_once(fix: bool, root: Path, stop_after_fix: bool = False) -> list[str]:
    problems = []
    for copy in find_copies(root):
        original_path, name = _split_target(copy.target)
        text = copy.path.read_text()
        where = f"{copy.path.relative_to(root.parent)}:{copy.line}"
        if copy.module_copy:
            if copy.line != 1:
                problems.append(f"{where}: a whole-module 'Copied from' marker must be the file's first line")
                continue
            body = text.split("\n", 1)[1] if "\n" in text else ""
            original = original_path.read_text()
            if body != original:
                problems.append(f"{where}: differs from {copy.target} (the whole module)")
                if fix:
                    copy.path.write_text(text.split("\n", 1)[0] + "\n" + original)
                    if stop_after_fix:
                        return problems
            continue
        node = _copied_node(copy.path, text, copy.line)
        found = _node_name(node)
        if found != name:
            problems.append(f"{where}: the marker names {name!r} but the definition after it is {found!r}")
            continue
        original = _definition(original_path, name)
        current = _segment(text, node)
        if current != original:
            problems.append(f"{where}: {name} differs from {copy.target}")
            if fix:
                copy.path.write_text(text.replace(current, original, 1))
                if stop_after_fix:
                    return problems
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="rewrite drifted copies from their originals")
    args = parser.parse_args(argv)
    problems = check(fix=args.fix)
    for problem in problems:
        print(problem)
    if problems and not args.fix:
        return 1
    print(f"{len(find_copies())} copies checked" + (f", {len(problems)} fixed" if args.fix and problems else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
