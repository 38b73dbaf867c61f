# Copied from hf_symbolinv.utils.symbols
"""What counts as an interchangeable symbol, and which slot each symbol takes.

This module is the one place that defines the symbol rules. It is imported by the tokenizer
(and copied next to it by ``save_pretrained``, so it may only import the standard library) and
by the logic engine (which must not import torch).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import Any

#: The paper's symbols. Each has a slot fixed by name: ``a`` -> 0, ``b`` -> 1, ...
LETTERS = string.ascii_lowercase
DEFAULT_SYMBOL_PATTERN = "[a-z]"


class SymbolRule:
    """Decides which token strings are interchangeable symbols.

    A name is a symbol when it fully matches ``pattern`` or belongs to ``names``. With neither
    given, the symbols are the single lowercase letters (the papers' atomic propositions).

    Slots: a single lowercase letter always takes its fixed slot (``a`` -> 0, ..., ``z`` -> 25),
    as the reference code and the fixed-embedding baselines expect; any other name takes the
    lowest slot not used by a letter of the same example, in order of first appearance.
    """

    def __init__(self, pattern: str | None = None, names: Iterable[str] | None = None) -> None:
        if pattern is None and names is None:
            pattern = DEFAULT_SYMBOL_PATTERN
        self.pattern = pattern
        self.names = frozenset(names) if names is not None else frozenset()
        try:
            self._regex = re.compile(pattern) if pattern is not None else None
        except re.error as err:
            raise ValueError(f"symbol pattern {pattern!r} is not a valid regular expression: {err}") from err
        for name in self.names:
            if not name or any(ch.isspace() for ch in name):
                raise ValueError(f"symbol name {name!r} is empty or contains whitespace")
        # Longest names first so that matching inside unsegmented text is greedy.
        self._names_longest_first = sorted(self.names, key=len, reverse=True)

    def is_symbol(self, token: str) -> bool:
        """True when ``token`` (a whole token) is an interchangeable symbol."""
        if token in self.names:
            return True
        return self._regex is not None and self._regex.fullmatch(token) is not None

    def match_at(self, text: str, pos: int) -> int:
        """Length of the longest symbol name starting at ``text[pos]`` (0 when there is none)."""
        best = 0
        for name in self._names_longest_first:
            if text.startswith(name, pos):
                best = len(name)
                break
        if self._regex is not None:
            found = self._regex.match(text, pos)
            if found is not None and found.end() - pos > best:
                best = found.end() - pos
        return best

    @staticmethod
    def fixed_slot(name: str) -> int | None:
        """The slot a name owns whatever else appears (the paper's letters), else None."""
        if len(name) == 1 and name in LETTERS:
            return LETTERS.index(name)
        return None

    def assign_slots(self, names_in_order: Sequence[str]) -> dict[str, int]:
        """Slots for the distinct symbol names of one example, given in order of appearance."""
        slots: dict[str, int] = {}
        taken: set[int] = set()
        for name in names_in_order:
            fixed = self.fixed_slot(name)
            if fixed is not None and name not in slots:
                slots[name] = fixed
                taken.add(fixed)
        free = 0
        for name in names_in_order:
            if name in slots:
                continue
            while free in taken:
                free += 1
            slots[name] = free
            taken.add(free)
        return slots

    def to_dict(self) -> dict[str, Any]:
        # An empty name list is kept when there is no pattern, so that such a rule round-trips
        # instead of turning into the default letter rule.
        names = sorted(self.names) if self.names or self._regex is None else None
        return {"pattern": self.pattern, "names": names}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SymbolRule:
        data = data or {}
        return cls(pattern=data.get("pattern"), names=data.get("names"))

    def __eq__(self, other: object) -> bool:
        # A rule is its pattern and names: copies of this class in a family's Hub folder compare equal.
        return type(other).__name__ == "SymbolRule" and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.pattern, self.names))

    def __repr__(self) -> str:
        return f"SymbolRule(pattern={self.pattern!r}, names={sorted(self.names) or None})"
