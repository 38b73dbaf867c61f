"""Reading the original DeepLTL data files (one formula and its answer per two lines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from hf_symbolinv.logic import LogicSyntaxError, symbols_of

from .errors import DeepLTLFilesNotFoundError, FileLineError, read_text_lines
from .output import FEATURES, rows_to_dataset

if TYPE_CHECKING:
    from .logic_tasks import LogicTask


# ---------------------------------------------------------------------------------------------------
# The original DeepLTL files
# ---------------------------------------------------------------------------------------------------
class DeepLTLFormatError(FileLineError):
    """A malformed line in a DeepLTL ``train.txt``/``val.txt``/``test.txt`` file."""


DEEPLTL_SPLITS = {"train": "train.txt", "validation": "val.txt", "test": "test.txt"}


def read_lines(path: Path) -> list[str]:
    """The lines of a DeepLTL file without trailing blank lines; a UTF-8 byte-order mark is skipped
    (editors on Windows add one). A binary, non-UTF-8 or empty file raises :class:`DeepLTLFormatError`."""
    path = Path(path)
    lines = read_text_lines(path, DeepLTLFormatError)
    while lines and not lines[-1].strip():
        lines.pop()  # trailing newline(s)
    if not lines:
        raise DeepLTLFormatError(path, 1, "empty file; expected lines alternating input and target")
    return lines


def detect_task(directory: Path) -> str:
    """``prop`` if the first target line of the first file present is an assignment, else ``ltl`` (a
    trace has ``;`` or ``{``)."""
    for file in DEEPLTL_SPLITS.values():
        candidate = Path(directory) / file
        if candidate.is_file():
            lines = [line.strip() for line in read_lines(candidate)[:2]]
            if len(lines) == 2 and lines[1] and not any(c in lines[1] for c in ";{}"):
                return "prop"
            break
    return "ltl"


def read_deepltl_file(path: Path, task: LogicTask, check: bool = False) -> list[dict[str, Any]]:
    """Rows from one DeepLTL file: lines alternate input (Polish notation) and target."""
    lines = read_lines(path)
    if len(lines) % 2:
        raise DeepLTLFormatError(path, len(lines), f"input without a {task.target_name} line (odd number of lines)")
    rows = []
    for i in range(0, len(lines), 2):
        for j in (i, i + 1):
            if not lines[j].strip():
                raise DeepLTLFormatError(path, j + 1, "empty line (lines must alternate input and target)")
        try:
            formula = task.parse_formula(lines[i].strip())
        except (LogicSyntaxError, ValueError) as error:
            raise DeepLTLFormatError(path, i + 1, f"not a {task.name} formula: {error}") from None
        try:
            target = task.parse_target(lines[i + 1].strip())
        except (LogicSyntaxError, ValueError) as error:
            raise DeepLTLFormatError(path, i + 2, f"not a {task.target_name}: {error}") from None
        if check and task.check(formula, target, None) != "holds":
            raise DeepLTLFormatError(
                path, i + 2, f"the {task.target_name} does not satisfy the formula on line {i + 1}"
            )
        rows.append(
            {
                "input": task.format_formula(formula),
                "target": task.format_target(target),
                "num_symbols": len(symbols_of(formula)),
                "size": formula.size,
            }
        )
    return rows


def read_deepltl(path: str | os.PathLike, task: LogicTask, check: bool = False) -> datasets.DatasetDict:
    directory = Path(path)
    if not directory.is_dir():
        raise DeepLTLFilesNotFoundError(f"{directory} is not a directory with DeepLTL train.txt/val.txt/test.txt files")
    splits = {
        name: read_deepltl_file(directory / file, task, check)
        for name, file in DEEPLTL_SPLITS.items()
        if (directory / file).exists()
    }
    if not splits:
        raise DeepLTLFilesNotFoundError(f"{directory} has none of {', '.join(DEEPLTL_SPLITS.values())}")
    return datasets.DatasetDict({name: rows_to_dataset(rows, FEATURES) for name, rows in splits.items()})
