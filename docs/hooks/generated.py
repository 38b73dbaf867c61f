"""MkDocs hook: the parts of the documentation that are produced from the code at build time.

- ``<!-- symbolinv:commands -->`` ... ``<!-- /symbolinv:commands -->`` becomes the command reference: the ``--help``
  of ``symbolinv`` and of every subcommand, taken from the CLI's own argparse parsers, so the page cannot go stale
  (what is between the markers is for readers of the Markdown source).
- ``<!-- symbolinv:lines PATH -->`` becomes the number of lines of Python under PATH (a folder or a file).
- Sphinx roles in docstrings (``:func:`solve_ltl```), which mkdocstrings leaves as text, are shown as the code they
  name.
- The web demo's screenshot (``examples/space/screenshot.png``, kept beside the Space) is served as
  ``assets/screenshot.png`` without a second copy in ``docs/``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

COMMANDS_MARKER = "<!-- symbolinv:commands -->"
COMMANDS_BLOCK = re.compile(r"<!-- symbolinv:commands -->.*?<!-- /symbolinv:commands -->", re.DOTALL)
LINES_MARKER = re.compile(r"<!-- symbolinv:lines (?P<path>[^ ]+) -->")
#: Repository files served by the site under another name: site path -> repository path.
EXTRA_FILES = {"assets/screenshot.png": "examples/space/screenshot.png"}
#: The width the help text is wrapped to (argparse reads COLUMNS), the same on every machine that builds the site.
HELP_COLUMNS = "100"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
#: A Sphinx cross-reference role as the docstrings write it, rendered: ``:func:<code>name</code>``.
SPHINX_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|data|meth|attr|obj|exc|const):(?=<code>)")


def _repository_root(config: Any) -> Path:
    return Path(config.docs_dir).resolve().parent


def on_config(config: Any) -> Any:
    # The checkout's package, not whichever one the interpreter would otherwise find.
    root = str(_repository_root(config))
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_files(files: Files, config: Any) -> Files:
    root = _repository_root(config)
    for site_path, repository_path in EXTRA_FILES.items():
        source = root / repository_path
        if not source.is_file():
            raise FileNotFoundError(f"{repository_path} (served as {site_path}) does not exist")
        files.append(File.generated(config, site_path, abs_src_path=str(source)))
    return files


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every subcommand under ``parser``, depth first, as (``"data build"``-style name, parser)."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                found.append((name, subparser))
                found.extend((f"{name} {inner}", inner_parser) for inner, inner_parser in _subcommands(subparser))
    return found


def _help(parser: argparse.ArgumentParser) -> str:
    return ANSI_ESCAPE.sub("", parser.format_help()).rstrip()


def command_reference() -> str:
    """The command reference in Markdown: one section per command with its ``--help``."""
    from hf_symbolinv.commands import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = build_parser()
        sections = ["## symbolinv", "", "```text", _help(parser), "```"]
        for name, subparser in _subcommands(parser):
            sections += ["", f"## symbolinv {name}", "", "```text", _help(subparser), "```"]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)


def python_lines(path: Path) -> int:
    """Lines of the ``.py`` files at ``path`` (a file, or a folder searched recursively)."""
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    return sum(len(file.read_text(encoding="utf-8").splitlines()) for file in files)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if COMMANDS_MARKER in markdown:
        if not COMMANDS_BLOCK.search(markdown):
            raise ValueError(f"{page.file.src_path}: {COMMANDS_MARKER} without its closing marker")
        reference = command_reference()
        markdown = COMMANDS_BLOCK.sub(lambda _: reference, markdown)
    root = _repository_root(config)

    def lines(match: re.Match[str]) -> str:
        path = root / match["path"]
        if not path.exists():
            raise FileNotFoundError(f"{page.file.src_path}: {match['path']} (counted for the layout) does not exist")
        return f"{python_lines(path):,}"

    return LINES_MARKER.sub(lines, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    return SPHINX_ROLE.sub("", html)
