"""Every command line of the project shows its help: the ``symbolinv`` subcommands, the package's ``python -m``
modules and the scripts of ``benchmarks/``, ``scripts/`` and ``examples/``. A script that cannot import (a sibling
module moved away) or a help text that argparse cannot format (a bare ``%`` in it) fails here, not in front of a
user who asked for ``--help``.

Each script runs in this process up to its first parse of the command line, which is stopped there: no script does
its work, and the imports the scripts share are paid once."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

import pytest

from hf_symbolinv.commands.cli import build_parser

REPOSITORY = Path(__file__).resolve().parent.parent
SCRIPT_FOLDERS = ("benchmarks", "benchmarks/speed", "scripts", "examples")


def _scripts() -> list[Path]:
    """The scripts that parse a command line: a ``__main__`` guard and an argparse parser of their own."""
    found = []
    for folder in SCRIPT_FOLDERS:
        for path in sorted((REPOSITORY / folder).glob("*.py")):
            text = path.read_text()
            if 'if __name__ == "__main__":' in text and ("ArgumentParser(" in text or "experiment_parser(" in text):
                found.append(path)
    return found


def every_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The formatted help of ``parser`` and of each of its subcommands, by the command line that shows it."""
    helps = {parser.prog: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                helps.update(every_help(subparser))
    return helps


class _Parsed(Exception):
    """Raised where a script parses its command line: the helps are read and the script stops there."""

    def __init__(self, helps: dict[str, str]) -> None:
        super().__init__()
        self.helps = helps


def _helps_up_to_the_parse(run, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    def stop_at_the_parse(parser: argparse.ArgumentParser, *args, **kwargs):
        raise _Parsed(every_help(parser))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop_at_the_parse)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", stop_at_the_parse)
    with pytest.raises(_Parsed) as parsed:
        run()
    return parsed.value.helps


def _assert_usable(helps: dict[str, str]) -> None:
    assert helps
    for command, text in helps.items():
        assert text.startswith("usage: "), (command, text[:200])


def test_the_finder_finds_the_scripts_that_parse_a_command_line() -> None:
    names = {path.relative_to(REPOSITORY).as_posix() for path in _scripts()}
    assert {"benchmarks/gpu_campaign.py", "benchmarks/speed/answer_budget.py", "scripts/ship_model.py"} <= names
    assert "benchmarks/experiment_runs.py" not in names  # a module the scripts import, not a script


def test_every_symbolinv_subcommand_formats_its_help() -> None:
    helps = every_help(build_parser())
    _assert_usable(helps)
    assert {"symbolinv solve", "symbolinv train", "symbolinv demo"} <= set(helps)


@pytest.mark.parametrize("module", ["hf_symbolinv.web", "hf_symbolinv.utils.check_copies"])
def test_every_module_run_with_python_m_formats_its_help(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    _assert_usable(_helps_up_to_the_parse(lambda: runpy.run_module(module, run_name="__main__"), monkeypatch))


@pytest.mark.parametrize("script", _scripts(), ids=lambda path: path.relative_to(REPOSITORY).as_posix())
def test_every_script_imports_and_formats_its_help(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(script.parent))  # as ``python SCRIPT`` puts the script's folder first
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    try:
        helps = _helps_up_to_the_parse(lambda: runpy.run_path(str(script), run_name="__main__"), monkeypatch)
    finally:  # the sibling modules of one folder must not answer another folder's imports of the same name
        folders = {REPOSITORY / folder for folder in SCRIPT_FOLDERS}
        for name in set(sys.modules) - before:
            if Path(getattr(sys.modules[name], "__file__", None) or "/").resolve().parent in folders:
                del sys.modules[name]
    _assert_usable(helps)
