"""Trained checkpoints that ship with the package (half-precision safetensors, a few MB each).

``symbolinv solve`` uses them when no model is given, so a new install answers with a trained model
at once. Each folder holds weights, config, tokenizer files, generation config and card, and no code: whoever has
the folder has the package, whose classes load it::

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from hf_symbolinv.pretrained import shipped_model

    path = shipped_model("prop-small")  # or a task: shipped_model("ltl")
    model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
    tokenizer = AutoTokenizer.from_pretrained(path)

:func:`export_model` (``symbolinv export NAME DIR``) writes one as a self-contained Hub folder, its family's code
beside the weights, which loads with ``trust_remote_code=True`` where the package is not installed (and which
``push_to_hub`` or ``hf upload`` publishes as it is).

How each was trained and what it scores is in its model card (``README.md``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PRETRAINED_DIR = Path(__file__).resolve().parent

#: The shipped checkpoints by name, each with its task.
SHIPPED: dict[str, str] = {
    "prop-small": "prop",
    "ltl-small": "ltl",
    "prop-35": "prop",
    "ltl-35": "ltl",
    "clutrr": "clutrr",
}
#: Checkpoints that shipped once and were retired, each with what answers in its place and why.
RETIRED: dict[str, str] = {
    "prop-best": "prop-35 replaces it: better at every size of the paper's distribution (94.4% against 32.3%), at a "
    "sixth of its size",
    "ltl-best": "ltl-35 replaces it: better on every set measured (the paper's distribution, 10 symbols, small "
    "formulas of 1-3 and 4-8 symbols) at a sixth of its size",
}
#: The shipped tree models (the tree route: ``pipeline("tree-transduction")``), by name, each with its task.
SHIPPED_TREES: dict[str, str] = {"active-logical": "tree"}
#: The checkpoint a task's inputs get where no shipped model of the task has a choice table (see :func:`model_for`).
DEFAULT_FOR_TASK: dict[str, str] = {"prop": "prop-35", "ltl": "ltl-35"}
#: The table each shipped folder holds of its model's first answers on the validation split of the task's paper-size
#: data (``prop-35`` / ``ltl-35``), by symbol count and formula size; written by ``benchmarks/paper_distribution.py
#: --write-choice``.
CHOICE_TABLE = "evaluation.json"
#: Formula sizes pooled into one cell of the choice (the bands of the paper's distribution, 1-35 nodes).
SIZE_BANDS: tuple[tuple[int, int], ...] = ((1, 10), (11, 20), (21, 35))
#: The fewest judged formulas a cell needs before its symbol count is told apart; below, the band's counts pooled.
MIN_CELL_COUNT = 30


def shipped_model(name: str) -> Path:
    """The folder of the shipped checkpoint ``name`` (``prop-small``, ``ltl-small``, ``prop-35``, ``ltl-35``,
    ``clutrr``, ``active-logical``), or of the default checkpoint of a task (``prop``, ``ltl``); a ``ValueError``
    names what ships (and, for a retired checkpoint, what replaces it)."""
    name = DEFAULT_FOR_TASK.get(name, name)
    if name in RETIRED:
        raise ValueError(f"the trained model {name!r} no longer ships: {RETIRED[name]}")
    if name not in SHIPPED and name not in SHIPPED_TREES:
        have = ", ".join([*sorted(SHIPPED), *sorted(SHIPPED_TREES), *sorted(DEFAULT_FOR_TASK)])
        raise ValueError(f"no trained model {name!r} ships with the package (shipped: {have}); pass a MODEL folder")
    return PRETRAINED_DIR / name


def size_band(size: int) -> tuple[int, int]:
    """The band of :data:`SIZE_BANDS` that ``size`` falls in (larger formulas count with the largest band)."""
    for low, high in SIZE_BANDS:
        if size <= high:
            return low, high
    return SIZE_BANDS[-1]


def choice_table(name: str) -> dict[str, Any] | None:
    """The choice table of the shipped model ``name`` (``None`` where its folder has none)."""
    path = PRETRAINED_DIR / name / CHOICE_TABLE
    if not path.is_file():
        return None
    try:
        return parse_choice_table(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a choice table ({error})") from None


def parse_choice_table(table: dict[str, Any]) -> dict[str, Any]:
    """A choice table as its JSON holds it, with its symbol counts and sizes as numbers and its cells as (hits,
    formulas); a ``ValueError`` where it is not one."""
    try:
        cells = table["cells"]
        return {
            "task": table["task"],
            "cells": {int(k): {int(n): tuple(c) for n, c in v.items()} for k, v in cells.items()},
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(str(error)) from None


def _pooled(
    cells: dict[int, dict[int, tuple[int, int]]], symbol_counts: list[int], low: int = 0, high: int | None = None
) -> tuple[int, int]:
    """Correct first answers and formulas that ``cells`` record over ``symbol_counts`` and sizes ``low``-``high``
    (every size where ``high`` is ``None``)."""
    hits = count = 0
    for k in symbol_counts:
        for n, (h, c) in cells.get(k, {}).items():
            if low <= n and (high is None or n <= high):
                hits, count = hits + h, count + c
    return hits, count


def expected_correct(table: dict[str, Any], size: int, num_symbols: int | None) -> tuple[float, int]:
    """The share of correct first answers ``table`` records for formulas of ``size``'s band with ``num_symbols``
    symbols (the largest count it holds where it holds fewer; the whole band where that cell is too thin), and how
    many formulas that share is of."""
    low, high = size_band(size)
    cells: dict[int, dict[int, tuple[int, int]]] = table["cells"]
    hits, count = 0, 0
    if num_symbols is not None and cells:
        hits, count = _pooled(cells, [min(num_symbols, max(cells))], low, high)
    if count < MIN_CELL_COUNT:
        hits, count = _pooled(cells, list(cells), low, high)
    return (hits / count if count else 0.0), count


def table_hits(table: dict[str, Any]) -> tuple[int, int]:
    """Correct first answers and formulas over every cell of ``table``."""
    return _pooled(table["cells"], list(table["cells"]))


def _whole_table_share(table: dict[str, Any]) -> float:
    """The share of correct first answers over every cell of ``table``."""
    hits, count = table_hits(table)
    return hits / count if count else 0.0


def model_for(task: str, size: int, num_symbols: int | None = None) -> Path:
    """The shipped checkpoint that answers an input of ``task`` with ``size`` nodes and ``num_symbols`` symbols best:
    the one whose choice table (measured, never written by hand) records the most correct first answers for such
    formulas; on a tie, the one with the most over the formula's whole size band, then over its whole table, then
    the first of :data:`SHIPPED`. The task's default where no model of the task has a table."""
    scored = []
    for order, (name, model_task) in enumerate(SHIPPED.items()):
        if model_task != task or (table := choice_table(name)) is None:
            continue
        share, count = expected_correct(table, size, num_symbols)
        if count:
            scored.append((-share, -expected_correct(table, size, None)[0], -_whole_table_share(table), order, name))
    return shipped_model(min(scored)[-1] if scored else task)


def export_model(name: str, destination: str | os.PathLike[str]) -> Path:
    """Write the shipped checkpoint ``name`` (or a task's default) into ``destination`` as a self-contained Hub
    folder: its weights (as stored), config, tokenizer, generation config and card, with its family's code and the
    config's ``auto_map`` (as ``save_pretrained`` writes any model of the package). A destination that holds files
    the package did not write is refused. Returns the folder written."""
    from ..models.folders import load_folder
    from ..utils.files import check_model_destination, save_model_folder

    folder = shipped_model(name)
    destination = Path(destination)
    check_model_destination(destination)
    model, tokenizer = load_folder(folder, dtype="auto")  # the stored float16, not a float32 copy twice the size
    save_model_folder(model, tokenizer, destination, card=(folder / "README.md").read_text(encoding="utf-8"))
    return destination


__all__ = [
    "CHOICE_TABLE",
    "DEFAULT_FOR_TASK",
    "PRETRAINED_DIR",
    "RETIRED",
    "SHIPPED",
    "SHIPPED_TREES",
    "choice_table",
    "expected_correct",
    "export_model",
    "model_for",
    "shipped_model",
]
