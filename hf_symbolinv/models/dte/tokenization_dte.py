"""The DTE family's tokenizer: bracketed trees (or Polish-notation formulas) to the model's position tensors
and back.

A tree becomes two rows of ``num_roles`` integers, one entry per tree position (breadth-first, root 0,
children of ``i`` at ``2i+1`` and ``2i+2``): the label id (0: empty, 1: a symbol, 2...: the base labels)
and, for a symbol, its first-appearance index in the input tree (-1 elsewhere). Which leaves are symbols
is decided by the symbol rule: a label that is not a base label and fully matches ``symbol_pattern``.
Symbols have no ids of their own, so any name works, including names never seen in training.

Inputs are not token sequences, so this is not a ``PreTrainedTokenizer``: it saves ``dte_tokenizer.json``
next to the model and loads from a folder or a Hub repository.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any

from .bracketed import EMPTY, Tree, format_bracketed, parse_bracketed

TOKENIZER_FILE = "dte_tokenizer.json"
SPECIAL_LABELS = (EMPTY, "<symbol>")
EMPTY_ID, SYMBOL_ID = 0, 1
NO_SYMBOL = -1
IGNORE_INDEX = -100


class DTETreeTokenizer:
    """Reads and writes trees for a DTE model.

    Args:
        base_labels: every label that is not a symbol (node labels, operators, inserted words).
        max_depth: the deepest node depth (the model's ``max_depth``).
        max_symbols: distinct symbols one tree may hold (the model's ``max_symbols``).
        symbol_pattern: a regular expression a symbol fully matches.
        input_format: ``bracketed`` (``(f a (g b c))``) or ``polish`` (``& a | b ! c``: a prefix formula
            whose operators' arities are ``arities``; a unary node is written ``(! a _)``).
        arities: the arity (1 or 2) of each operator label, for ``polish``.
    """

    def __init__(
        self,
        base_labels: Sequence[str],
        max_depth: int,
        max_symbols: int = 32,
        symbol_pattern: str = r"[a-z][a-z0-9]*",
        input_format: str = "bracketed",
        arities: dict[str, int] | None = None,
    ) -> None:
        labels = list(base_labels)
        clash = [label for label in labels if label in SPECIAL_LABELS or not label or re.search(r"[\s()]", label)]
        if clash:
            raise ValueError(f"base_labels: {clash[0]!r} cannot be a label (reserved, empty, or with space/brackets)")
        if len(set(labels)) != len(labels):
            raise ValueError("base_labels: a label is listed twice")
        if input_format not in ("bracketed", "polish"):
            raise ValueError(f"input_format: must be 'bracketed' or 'polish', got {input_format!r}")
        self.arities = dict(arities or {})
        bad = {op: n for op, n in self.arities.items() if n not in (1, 2) or op not in labels}
        if bad:
            raise ValueError(f"arities: {bad} (each must be a base label of arity 1 or 2)")
        self.base_labels = labels
        self.max_depth = max_depth
        self.max_symbols = max_symbols
        self.symbol_pattern = symbol_pattern
        self._symbol = re.compile(symbol_pattern)
        self.input_format = input_format
        self.labels = [*SPECIAL_LABELS, *labels]
        self.label_ids = {label: index for index, label in enumerate(self.labels)}
        self.num_roles = 2 ** (max_depth + 1) - 1

    @property
    def vocab_size(self) -> int:
        return len(self.labels)

    def is_symbol(self, label: str) -> bool:
        return label not in self.label_ids and self._symbol.fullmatch(label) is not None

    # -- text <-> trees ---------------------------------------------------------------------------------
    def parse(self, text: str) -> Tree:
        """The tree of one input or answer string (a ``ValueError`` names the problem and its position). A bracketed
        node may have one child, as in the DTM papers' files: ``(X c)`` reads as ``(X c _)``."""
        if self.input_format == "bracketed":
            return parse_bracketed(text, unary=True)
        return self._parse_polish(text)

    def _parse_polish(self, text: str) -> Tree:
        tokens = [(m.group(), m.start()) for m in re.finditer(r"\S+", text)]
        if not tokens:
            raise ValueError("empty formula")
        pos = 0

        def node() -> Tree:
            nonlocal pos
            if pos >= len(tokens):
                raise ValueError(f"formula ends early at position {len(text)}: an operator lacks an operand")
            token, _ = tokens[pos]
            pos += 1
            arity = self.arities.get(token, 0)
            if arity == 0:
                return token
            left = node()
            right = node() if arity == 2 else None
            return (token, left, right)

        tree = node()
        if pos < len(tokens):
            raise ValueError(f"trailing token {tokens[pos][0]!r} at position {tokens[pos][1]}")
        return tree

    def format(self, tree: Tree | None) -> str:
        """The string of ``tree`` in this tokenizer's input format."""
        if self.input_format == "bracketed":
            return format_bracketed(tree)
        out: list[str] = []

        def visit(node: Tree | None) -> None:
            if node is None:
                return
            if isinstance(node, str):
                out.append(node)
                return
            out.append(node[0])
            visit(node[1])
            visit(node[2])

        visit(tree)
        return " ".join(out)

    # -- trees <-> position rows ------------------------------------------------------------------------
    def encode_tree(
        self, tree: Tree, symbols: list[str] | None = None, what: str = "tree"
    ) -> tuple[list[int], list[int], list[str]]:
        """Label ids, symbol indices and the symbol names (first appearance, breadth-first) of ``tree``.

        With ``symbols`` given (an input's names), a symbol of ``tree`` must be one of them: the answer can
        only copy the input's symbols."""
        labels = [EMPTY_ID] * self.num_roles
        indices = [NO_SYMBOL] * self.num_roles
        names = [] if symbols is None else list(symbols)
        queue: list[tuple[Tree | None, int, int, str]] = [(tree, 0, 0, "")]
        for node, role, depth, path in queue:
            if node is None:
                continue
            where = f"the node at path {path or 'root'!r} (0 = left, 1 = right)"
            if depth > self.max_depth:
                raise ValueError(f"{what} is deeper than max_depth={self.max_depth}: {where} has depth {depth}")
            label = node if isinstance(node, str) else node[0]
            if label in self.label_ids:
                labels[role] = self.label_ids[label]
            elif self.is_symbol(label):
                if label not in names:
                    if symbols is not None:
                        raise ValueError(f"{what}: symbol {label!r} at {where} is not in the input")
                    if len(names) == self.max_symbols:
                        raise ValueError(f"{what} has more than max_symbols={self.max_symbols} symbols")
                    names.append(label)
                labels[role], indices[role] = SYMBOL_ID, names.index(label)
            else:
                raise ValueError(
                    f"{what}: unknown label {label!r} at {where}: not a base label, and not a symbol "
                    f"(pattern {self.symbol_pattern!r})"
                )
            if not isinstance(node, str):
                queue.append((node[1], 2 * role + 1, depth + 1, path + "0"))
                queue.append((node[2], 2 * role + 2, depth + 1, path + "1"))
        return labels, indices, names

    def decode_tree(self, labels: Sequence[int], indices: Sequence[int], names: Sequence[str]) -> Tree | None:
        """The tree of one row of label ids and symbol indices; nodes under an empty position are dropped."""

        def build(role: int) -> Tree | None:
            if role >= len(labels) or labels[role] == EMPTY_ID:
                return None
            if labels[role] == SYMBOL_ID:
                index = indices[role]
                label = names[index] if 0 <= index < len(names) else "<unknown-symbol>"
            else:
                label = self.labels[labels[role]]
            left, right = build(2 * role + 1), build(2 * role + 2)
            return label if left is None and right is None else (label, left, right)

        return build(0)

    def __call__(
        self, inputs: str | Sequence[str], targets: str | Sequence[str] | None = None, return_tensors: str = "pt"
    ) -> dict[str, Any]:
        """Encode a batch: ``input_labels``, ``input_symbols``, ``num_symbols`` (and ``labels``,
        ``label_symbols`` for targets) as tensors, plus ``symbol_names`` (a list per row). Errors name the
        row."""
        import torch

        single = isinstance(inputs, str)
        inputs = [inputs] if single else list(inputs)
        if targets is not None:
            targets = [targets] if isinstance(targets, str) else list(targets)
            if len(targets) != len(inputs):
                raise ValueError(f"{len(inputs)} inputs but {len(targets)} targets")
        rows: dict[str, list] = {"input_labels": [], "input_symbols": [], "num_symbols": [], "symbol_names": []}
        if targets is not None:
            rows["labels"], rows["label_symbols"] = [], []
        for row, text in enumerate(inputs):
            try:
                labels, indices, names = self.encode_tree(self.parse(text), what="input")
                rows["input_labels"].append(labels)
                rows["input_symbols"].append(indices)
                rows["num_symbols"].append(len(names))
                rows["symbol_names"].append(names)
                if targets is not None:
                    target_labels, target_indices, _ = self.encode_tree(
                        self.parse(targets[row]), symbols=names, what="target"
                    )
                    rows["labels"].append(target_labels)
                    rows["label_symbols"].append(target_indices)
            except ValueError as err:
                raise ValueError(f"row {row}: {err}") from None
        if return_tensors != "pt":
            raise ValueError(f"return_tensors: only 'pt' is supported, got {return_tensors!r}")
        return {key: value if key == "symbol_names" else torch.tensor(value) for key, value in rows.items()}

    def batch_decode(self, label_logits: Any, symbol_probs: Any, symbol_names: Sequence[Sequence[str]]) -> list[str]:
        """The answer strings of a model output (argmax label per position; a symbol position copies the input
        symbol with the highest pointer probability)."""
        labels = label_logits.argmax(-1).tolist()
        indices = symbol_probs.argmax(-1).tolist()
        return [
            self.format(self.decode_tree(row, idx, names)) for row, idx, names in zip(labels, indices, symbol_names)
        ]

    # -- saving and loading -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "base_labels": self.base_labels,
            "max_depth": self.max_depth,
            "max_symbols": self.max_symbols,
            "symbol_pattern": self.symbol_pattern,
            "input_format": self.input_format,
            "arities": self.arities,
        }

    def save_pretrained(self, save_directory: str | os.PathLike) -> tuple[str]:
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, TOKENIZER_FILE)
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"tokenizer_class": type(self).__name__, **self.to_dict()}, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, path)
        return (path,)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, **hub_kwargs: Any) -> DTETreeTokenizer:
        path = os.path.join(name_or_path, TOKENIZER_FILE)
        if not os.path.isdir(name_or_path):
            from huggingface_hub import hf_hub_download

            path = hf_hub_download(str(name_or_path), TOKENIZER_FILE, **hub_kwargs)
        elif not os.path.isfile(path):
            raise ValueError(f"{path}: no DTE tokenizer file in this folder")
        with open(path, encoding="utf-8") as handle:
            try:
                data = json.load(handle)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: not valid JSON ({err})") from None
        data.pop("tokenizer_class", None)
        known = set(cls(["x"], 1).to_dict())
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {unknown}")
        return cls(**data)

    def with_max_depth(self, max_depth: int) -> DTETreeTokenizer:
        """This tokenizer for trees of depth up to ``max_depth`` (the tokenizer of a model grown by
        ``resize_max_depth``)."""
        return type(self)(**{**self.to_dict(), "max_depth": max_depth})

    def check_model_config(self, config: Any) -> None:
        """Refuse a model whose sizes disagree with this tokenizer's (naming the field)."""
        for field, mine in (("vocab_size", self.vocab_size), ("max_depth", self.max_depth)):
            theirs = getattr(config, field)
            if theirs != mine:
                raise ValueError(f"the model's {field}={theirs} but the tokenizer's is {mine}")
        if config.max_symbols < self.max_symbols:
            raise ValueError(f"the model's max_symbols={config.max_symbols} < the tokenizer's {self.max_symbols}")


__all__ = ["DTETreeTokenizer"]
