"""Reading the original DeepLTL data files (one formula and its answer per two lines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from hf_symbolinv.logic import LogicSyntaxError, symbols_of

from .output import FEATURES

if TYPE_CHECKING:
    from .logic_tasks import LogicTask


# ---------------------------------------------------------------------------------------------------
# The original DeepLTL files
# ---------------------------------------------------------------------------------------------------
class DeepLTLFormatError(ValueError):
    """A malformed line in a DeepLTL ``train.txt``/``val.txt``/``test.txt`` file."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}, line {line}: {message}")
        self.path = path
        self.line = line


DEEPLTL_SPLITS = {"train": "train.txt", "validation": "val.txt", "test": "test.txt"}


def read_deepltl_file(path: Path, task: LogicTask, check: bool = False) -> list[dict[str, Any]]:
    """Rows from one DeepLTL file: lines alternate input (Polish notation) and target."""
    lines = Path(path).read_text().split("\n")
    while lines and not lines[-1].strip():
        lines.pop()  # trailing newline(s)
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
        raise FileNotFoundError(f"{directory} is not a directory with DeepLTL train.txt/val.txt/test.txt files")
    splits = {
        name: read_deepltl_file(directory / file, task, check)
        for name, file in DEEPLTL_SPLITS.items()
        if (directory / file).exists()
    }
    if not splits:
        raise FileNotFoundError(f"{directory} has none of {', '.join(DEEPLTL_SPLITS.values())}")
    return datasets.DatasetDict(
        {name: datasets.Dataset.from_list(rows, features=FEATURES) for name, rows in splits.items()}
    )
