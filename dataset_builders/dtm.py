"""Reading the original Differentiable Tree Machine data files (``*.jsonl``/``*.json``, one ``source``/``target`` pair
of trees a line) into a ``DatasetDict`` of the tree datasets' columns; and their structural variants (more adjectives),
as the papers' structural split makes them."""

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


def dtm_files(directory: Path) -> list[Path]:
    """The DTM split files of ``directory``: its ``*.jsonl`` and ``*.json`` files (the released ``train.json`` holds
    one JSON object a line, as a ``.jsonl`` file does)."""
    return sorted([*directory.glob("*.jsonl"), *directory.glob("*.json")])


def is_dtm_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder of DTM split files: each ``*.json``/``*.jsonl`` file's first line a JSON object
    with ``source`` and ``target`` (a built data set's ``*.json`` metadata has no such line)."""
    directory = Path(path)
    files = dtm_files(directory) if directory.is_dir() else []
    for file in files:
        try:
            with file.open(encoding="utf-8") as handle:
                record = json.loads(handle.readline())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
        if not (isinstance(record, dict) and "source" in record and "target" in record):
            return False
    return bool(files)


def load_dtm(path: str | os.PathLike) -> datasets.DatasetDict:
    """Read the original DTM files (``*.jsonl`` or ``*.json``, one ``{"source", "target"}`` object a line, in the
    folder ``path``) into a ``DatasetDict`` with the builders' features; a file becomes the split
    :data:`DTM_SPLIT_NAMES` names (``dev`` -> ``validation``, ...; another stem is a split of its own name).
    Malformed lines raise :class:`DTMFormatError` naming file and line."""
    directory = Path(path)
    if not directory.is_dir():
        raise DatasetBuildError(f"{directory} is not a directory of DTM *.jsonl / *.json files")
    files = dtm_files(directory)
    if not files:
        raise DatasetBuildError(f"{directory} has no *.jsonl or *.json files")
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


def _noun_phrases(tree: Tree | None) -> list[Tree]:
    """The ``NP`` subtrees of a DTM tree, left to right."""
    if tree is None or isinstance(tree, str):
        return []
    found = [tree] if tree[0] == "NP" else []
    return found + _noun_phrases(tree[1]) + _noun_phrases(tree[2])


def _replace(tree: Tree | None, old: Tree, new: Tree) -> Tree | None:
    if tree == old:
        return new
    if tree is None or isinstance(tree, str):
        return tree
    return (tree[0], _replace(tree[1], old, new), _replace(tree[2], old, new))


def dtm_adjectives(rows: list[dict[str, Any]]) -> list[str]:
    """The adjectives (``ADJ`` leaves) of DTM rows, sorted."""
    found: set[str] = set()

    def visit(tree: Tree | None) -> None:
        if tree is None or isinstance(tree, str):
            return
        if tree[0] == "ADJ" and isinstance(tree[1], str):
            found.add(tree[1])
        visit(tree[1])
        visit(tree[2])

    for row in rows:
        visit(parse_bracketed(row["input"]))
    return sorted(found)


def lengthen_dtm_row(row: dict[str, Any], extra: int, adjectives: list[str], rng: Any) -> dict[str, Any] | None:
    """A structural variant of a DTM sentence row, as the papers' ``ood_long`` split makes them: ``extra`` more
    adjectives in front of one noun phrase's (``( NP ( DET d ) ( AP ( ADJ new ) ( AP ... ) ) )``), the same in the
    source and the target, drawn by ``rng`` from ``adjectives`` (the training words: the structure is new, the words
    are not). None where the row's noun phrases cannot be told apart (two equal ones)."""
    source, target = parse_bracketed(row["input"]), parse_bracketed(row["target"])
    phrases = _noun_phrases(source)
    if (
        not phrases
        or len(set(phrases)) != len(phrases)
        or sorted(map(str, phrases)) != sorted(map(str, _noun_phrases(target)))
    ):
        return None
    phrase = phrases[rng.randrange(len(phrases))]
    label, determiner, chain = phrase
    if not (label == "NP" and isinstance(chain, tuple) and chain[0] == "AP"):
        return None
    for word in rng.sample(adjectives, extra):
        chain = ("AP", ("ADJ", word, None), chain)
    longer = (label, determiner, chain)
    new_source, new_target = _replace(source, phrase, longer), _replace(target, phrase, longer)
    text = format_bracketed(new_source)
    return {
        "input": text,
        "target": format_bracketed(new_target),
        "num_symbols": len(tree_symbol_names(text)),
        "size": tree_nodes(new_source),
    }
