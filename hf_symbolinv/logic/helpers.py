"""Size, symbol-set, renaming and comparison helpers for formulas, traces and assignments.

Order of first appearance is the left-to-right order of the printed text, which is the same in
Polish and infix notation (operands keep their order), i.e. the pre-order of the tree.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable, Mapping, Sequence

from ..utils.symbols import SymbolRule
from .formula import Assignment, Atom, Formula, Trace, rename_nodes
from .notation import (
    LogicSyntaxError,
    format_formula,
    format_trace,
    parse_assignment,
    parse_ltl,
    parse_prop,
    parse_trace,
)

__all__ = [
    "formula_size",
    "symbols_of",
    "rename_formula",
    "rename_trace",
    "rename_assignment",
    "rename",
    "compact_mapping",
    "compact",
    "canonical_commutative",
    "COMMUTATIVE_OPERATORS",
    "commute_operands",
    "formulas_equal_up_to_commutativity",
    "traces_equal_up_to_commutativity",
]

Symbols = SymbolRule | Iterable[str] | None
Renamable = Formula | Trace | Mapping[str, bool]


def formula_size(formula: Formula | str, notation: str = "polish", symbols: Symbols = None, kind: str = "ltl") -> int:
    """Tree size (number of nodes). Strings are parsed as ``kind`` (``"ltl"``: derived operators
    rewritten first; ``"prop"``: ``<->`` and ``xor`` count as one node)."""
    if isinstance(formula, str):
        parse = parse_prop if kind == "prop" else parse_ltl
        formula = parse(formula, notation, symbols)
    return formula.size


def _parse_any(obj: object, kind: str, notation: str, symbols: Symbols) -> Renamable:
    if not isinstance(obj, str):
        return obj  # type: ignore[return-value]
    if kind == "ltl":
        return parse_ltl(obj, notation, symbols)
    if kind == "prop":
        return parse_prop(obj, notation, symbols)
    if kind == "trace":
        return parse_trace(obj, notation, symbols)
    if kind == "assignment":
        return parse_assignment(obj, symbols)
    raise ValueError(f"unknown kind {kind!r}; choose 'ltl', 'prop', 'trace' or 'assignment'")


def symbols_of(
    obj: Renamable | str, kind: str = "ltl", notation: str = "polish", symbols: Symbols = None
) -> tuple[str, ...]:
    """Distinct symbol names in order of first appearance (strings are parsed as ``kind``)."""
    obj = _parse_any(obj, kind, notation, symbols)
    seen: dict[str, None] = {}
    if isinstance(obj, Formula):
        roots: Sequence[Formula] = (obj,)
    elif isinstance(obj, Trace):
        roots = obj.prefix + obj.cycle
    else:
        return tuple(dict.fromkeys(obj))
    for root in roots:
        for node in root.distinct_nodes():
            if isinstance(node, Atom):
                seen.setdefault(node.name, None)
    return tuple(seen)


def _check_injective(present: Iterable[str], mapping: Mapping[str, str]) -> None:
    images: dict[str, str] = {}
    for name in present:
        new = mapping.get(name, name)
        if new in images and images[new] != name:
            raise ValueError(f"renaming merges {images[new]!r} and {name!r} into {new!r}")
        images[new] = name


def rename_formula(
    formula: Formula | str,
    mapping: Mapping[str, str],
    kind: str = "ltl",
    notation: str = "polish",
    symbols: Symbols = None,
) -> Formula | str:
    """Rename symbols (names not in ``mapping`` are kept). A string comes back as a string in
    the same notation (``kind`` says how to parse it: ``"ltl"`` or ``"prop"``)."""
    f = _parse_any(formula, kind, notation, symbols)
    assert isinstance(f, Formula)
    _check_injective(symbols_of(f), mapping)
    renamed = rename_nodes(f, mapping)
    if isinstance(formula, str):
        return format_formula(renamed, notation, "model")
    return renamed


def rename_trace(
    trace: Trace | str, mapping: Mapping[str, str], notation: str = "polish", symbols: Symbols = None
) -> Trace | str:
    """Rename the symbols of every step; strings come back as strings."""
    t = _parse_any(trace, "trace", notation, symbols)
    assert isinstance(t, Trace)
    _check_injective(symbols_of(t), mapping)
    renamed = Trace([rename_nodes(s, mapping) for s in t.prefix], [rename_nodes(s, mapping) for s in t.cycle])
    if isinstance(trace, str):
        return format_trace(renamed, notation)
    return renamed


def rename_assignment(
    assignment: Mapping[str, bool] | str, mapping: Mapping[str, str], symbols: Symbols = None
) -> Assignment | str:
    """Rename the keys, keeping them sorted by (new) name; strings come back as strings."""
    from .notation import format_assignment

    a = _parse_any(assignment, "assignment", "polish", symbols)
    assert isinstance(a, Mapping)
    _check_injective(a, mapping)
    renamed = {mapping.get(k, k): v for k, v in a.items()}
    result = dict(sorted(renamed.items()))
    if isinstance(assignment, str):
        return format_assignment(result)
    return result


def rename(obj: Renamable, mapping: Mapping[str, str]) -> Renamable:
    """Rename a parsed formula, trace or assignment."""
    if isinstance(obj, Formula):
        return rename_formula(obj, mapping)
    if isinstance(obj, Trace):
        return rename_trace(obj, mapping)
    if isinstance(obj, Mapping):
        return rename_assignment(obj, mapping)
    raise TypeError(f"cannot rename a {type(obj).__name__}; parse strings first")


def compact_mapping(*objects: Renamable, names: Sequence[str] | None = None) -> dict[str, str]:
    """Map symbols to ``a, b, c, ...`` (or ``names``) in order of first appearance across the
    objects, taken in the order given (pass the reference first, e.g. the trace)."""
    targets = list(string.ascii_lowercase) if names is None else list(names)
    order: dict[str, None] = {}
    for obj in objects:
        for name in symbols_of(obj):
            order.setdefault(name, None)
    if len(order) > len(targets):
        raise ValueError(f"{len(order)} symbols but only {len(targets)} target names; pass names=")
    return {old: new for old, new in zip(order, targets)}


def compact(*objects: Renamable, names: Sequence[str] | None = None) -> list[Renamable]:
    """Rename all objects consistently by :func:`compact_mapping`; returns them in order."""
    mapping = compact_mapping(*objects, names=names)
    return [rename(obj, mapping) for obj in objects]


def canonical_commutative(f: Formula) -> str:
    """A string equal for two formulas iff they are equal up to swapping operands of & and |."""
    values: dict[int, str] = {}
    for node in f.children_first():
        if not node.children:
            # Atoms are marked so that a symbol named like a constant cannot collide with it.
            values[id(node)] = "@" + node.name if isinstance(node, Atom) else node.op
        else:
            kids = [values[id(c)] for c in node.children]
            if node.op in ("and", "or"):
                kids.sort()
            values[id(node)] = f"({node.op} {' '.join(kids)})"
    return values[id(f)]


#: The binary operators whose operands may change places: ``f op g`` and ``g op f`` hold in the same states.
COMMUTATIVE_OPERATORS = frozenset({"and", "or", "equiv", "xor"})


def commute_operands(f: Formula, rng: random.Random) -> Formula:
    """``f`` with the operands of each node of a :data:`COMMUTATIVE_OPERATORS` operator swapped with probability 1/2
    (drawn from ``rng`` bottom-up, a subformula shared by several parents once): the same formula up to the order of
    operands, so it holds in exactly the same states."""
    built: dict[int, Formula] = {}
    for node in f.children_first():
        kids = [built[id(c)] for c in node.children]
        if node.op in COMMUTATIVE_OPERATORS and rng.random() < 0.5:
            kids.reverse()
        same = all(new is old for new, old in zip(kids, node.children))
        built[id(node)] = node if same else type(node)(*kids)
    return built[id(f)]


def formulas_equal_up_to_commutativity(a: Formula, b: Formula) -> bool:
    return a == b or canonical_commutative(a) == canonical_commutative(b)


def traces_equal_up_to_commutativity(
    a: Trace | str, b: Trace | str, notation: str = "polish", symbols: Symbols = None
) -> bool:
    """The ``exact`` metric: same prefix and cycle lengths and, step by step, the same formula up
    to commutativity of ``&`` and ``|``. Text that does not parse is never exact."""
    try:
        ta = a if isinstance(a, Trace) else parse_trace(a, notation, symbols)
        tb = b if isinstance(b, Trace) else parse_trace(b, notation, symbols)
    except LogicSyntaxError:
        return False
    if len(ta.prefix) != len(tb.prefix) or len(ta.cycle) != len(tb.cycle):
        return False
    return all(formulas_equal_up_to_commutativity(x, y) for x, y in zip(ta.steps, tb.steps))
