"""Reading the original Differentiable Tree Machine data files (``*.jsonl``, one ``source``/``target`` pair of
trees a line) into a ``DatasetDict`` of the tree datasets' columns."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import datasets

from hf_symbolinv.tasks.trees import tree_symbol_names
from hf_symbolinv.utils.trees import Tree, format_bracketed, parse_bracketed, tree_nodes

from .errors import DatasetBuildError, FileLineError, read_text_lines
from .output import FEATURES, rows_to_dataset
from .trees import SPLITS


class DTMFormatError(FileLineError):
    """A malformed line in an original DTM ``*.jsonl`` file (the message names the file and the line)."""


#: File stems of the DTM split files, and the split each becomes (any other stem is a split of its own).
DTM_SPLIT_NAMES = {
    "train": "train",
    "dev": "validation",
    "val": "validation",
    "valid": "validation",
    "validation": "validation",
    "test": "test",
    "ood_lexical": "test_ood_lexical",
    "test_ood_lexical": "test_ood_lexical",
    "ood_structural": "test_ood_structural",
    "test_ood_structural": "test_ood_structural",
}


def parse_dtm_tree(text: str) -> Tree:
    """A tree in the DTM files' style (``( S ( NP ( DET the ) ( N dog ) ) ... )``: spaces optional, a node has
    one or two children) as a binary tree: a unary node ``( X c )`` becomes ``(X c _)``. A ``ValueError``
    names the problem and its character position."""
    return parse_bracketed(text, unary=True)


def read_dtm_file(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of one DTM ``*.jsonl`` file: one JSON object with ``source`` and ``target`` trees a line (blank
    lines are skipped)."""
    path = Path(path)
    rows = []
    for number, line in enumerate(read_text_lines(path, DTMFormatError), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DTMFormatError(path, number, f"not JSON: {error.msg} (column {error.colno})") from None
        if not isinstance(record, dict):
            raise DTMFormatError(path, number, f"expected a JSON object with source and target, found {line[:40]!r}")
        trees = {}
        for key in ("source", "target"):
            if key not in record:
                raise DTMFormatError(path, number, f"missing key {key!r}")
            if not isinstance(record[key], str):
                raise DTMFormatError(path, number, f"{key!r} is not a string")
            try:
                trees[key] = format_bracketed(parse_dtm_tree(record[key]))
            except ValueError as error:
                raise DTMFormatError(path, number, f"{key!r} is not a tree: {error}") from None
        rows.append(
            {
                "input": trees["source"],
                "target": trees["target"],
                "num_symbols": len(tree_symbol_names(trees["source"])),
                "size": tree_nodes(parse_bracketed(trees["source"])),
            }
        )
    if not rows:
        raise DTMFormatError(path, 1, "no rows (an empty file)")
    return rows


def load_dtm(path: str | os.PathLike) -> datasets.DatasetDict:
    """Read the original DTM files (``*.jsonl`` in the folder ``path``) into a ``DatasetDict`` with the builders'
    features; a file becomes the split :data:`DTM_SPLIT_NAMES` names (``dev`` -> ``validation``, ...; another
    stem is a split of its own name). Malformed lines raise :class:`DTMFormatError` naming file and line."""
    directory = Path(path)
    if not directory.is_dir():
        raise DatasetBuildError(f"{directory} is not a directory of DTM *.jsonl files")
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        raise DatasetBuildError(f"{directory} has no *.jsonl files")
    splits: dict[str, list[dict[str, Any]]] = {}
    sources: dict[str, Path] = {}
    for file in files:
        stem = file.stem.lower()
        name = DTM_SPLIT_NAMES.get(stem, re.sub(r"\W+", "_", stem).strip("_") or "split")
        if name in splits:
            raise DatasetBuildError(f"{file} and {sources[name]} would both be the split {name!r}")
        sources[name] = file
        splits[name] = read_dtm_file(file)
    order = {name: i for i, name in enumerate(SPLITS)}
    names = sorted(splits, key=lambda n: (order.get(n, len(order)), n))
    return datasets.DatasetDict({name: rows_to_dataset(splits[name], FEATURES) for name in names})
