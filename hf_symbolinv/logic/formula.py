"""Formula and trace objects shared by the LTL and propositional parts of the engine.

Formulas are immutable trees with structural equality and a cached hash, so they can be used as
dictionary keys (the checkers memoise compiled automata per formula). The hash is built from fixed
integer operator codes and a CRC-32 of symbol names, never from ``hash(str)``, so it is the same in
every process (whatever ``PYTHONHASHSEED``) and a formula or trace pickled in one process is equal
to, and hashes like, the same formula built in another. The core LTL operators are
``! & | X U`` and the constants; the derived LTL operators (``F G -> R W M``) are rewritten into the
core by the helper constructors below. ``<->`` (:class:`Equiv`) and ``xor`` (:class:`Xor`) stay
first-class nodes in parsed formulas, LTL ones included: rewriting them doubles their operands, so a
nested chain of them would grow exponentially. The LTL engine handles them natively;
:func:`in_ltl_core` rewrites them (within a size limit) where the LTL model vocabulary needs it.

Everything here is iterative where input size is unbounded (parsing, printing, symbol walks), so
long formulas do not hit the recursion limit.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

#: How ``str`` prints a formula and a trace: the notations are :mod:`.notation`'s, which imports this module and
#: sets them (importing any module of ``hf_symbolinv.logic`` imports the package, and with it the notations), so
#: that this module, the lower one, imports nothing of the logic engine.
PRINTERS: dict[str, Callable[[Any], str]] = {}

__all__ = [
    "Formula",
    "Const",
    "Atom",
    "Not",
    "Next",
    "And",
    "Or",
    "Until",
    "Equiv",
    "Xor",
    "TRUE",
    "FALSE",
    "Trace",
    "Assignment",
    "neg",
    "eventually",
    "globally",
    "implies",
    "release",
    "weak_until",
    "strong_release",
    "ltl_equiv",
    "ltl_xor",
    "in_ltl_core",
    "MAX_CORE_SIZE",
    "conjunction",
    "is_propositional",
    "is_temporal_free",
]

#: Characters after which ``repr`` of a formula stops writing.
_REPR_LIMIT = 2000

#: A (partial) assignment of truth values to symbol names.
Assignment = dict[str, bool]


class Formula:
    """Base class of formula nodes. Treat instances as immutable.

    ``op`` is the operator name (``"true"``, ``"false"``, ``"ap"``, ``"not"``, ``"X"``, ``"and"``,
    ``"or"``, ``"U"``, ``"equiv"``, ``"xor"``), ``children`` the operand tuple. ``size`` is the
    tree size (number of nodes), computed once at construction.
    """

    __slots__ = ("children", "size", "_hash")
    op: ClassVar[str] = ""
    arity: ClassVar[int] = 0
    #: Fixed operator code for the process-independent hash (``hash`` of a string is salted per
    #: process, and the cached hash travels with a pickled formula).
    _code: ClassVar[int] = 0

    children: tuple[Formula, ...]
    size: int
    _hash: int

    def __eq__(self, other: object) -> bool:
        # Iterative: formulas nest as deep as their input, past Python's recursion limit. Pairs already
        # compared are skipped, so formulas that share subtrees (``ltl_xor``) compare in linear time.
        pending = [(self, other)]
        compared: set[tuple[int, int]] = set()
        while pending:
            a, b = pending.pop()
            if a is b:
                continue
            pair = (id(a), id(b))
            if pair in compared:
                continue
            compared.add(pair)
            if not isinstance(b, Formula) or a._hash != b._hash or a.op != b.op:
                return False
            if a.children:
                pending.extend(zip(a.children, b.children))
            elif a._key() != b._key():
                return False
        return True

    def __reduce__(self) -> tuple:
        # Pickled as a flat list of distinct nodes, children first: the default (nested) pickle recurses
        # once per level and fails on deep formulas, and a shared subtree is written once.
        return (_rebuild, (_flat_nodes(self),))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return PRINTERS["formula"](self)

    def __repr__(self) -> str:
        # Iterative and cut short: a formula may nest past the recursion limit, and one built with shared
        # subtrees (``ltl_xor``) may stand for a tree far too large to write out.
        out: list[str] = []
        written = 0
        stack: list[str | Formula] = [self]
        while stack:
            if written > _REPR_LIMIT:
                out.append("...")
                break
            item = stack.pop()
            if isinstance(item, str):
                piece = item
            elif not item.children:
                piece = repr(item)
            else:
                piece = f"{type(item).__name__}("
                stack.append(")")
                for k, child in enumerate(reversed(item.children)):
                    stack.append(child)
                    if k < len(item.children) - 1:
                        stack.append(", ")
            out.append(piece)
            written += len(piece)
        return "".join(out)

    def _has_prop_only_ops(self) -> bool:
        return any(node.op in ("equiv", "xor") for node in self.distinct_nodes())

    def walk(self) -> Iterator[Formula]:
        """All nodes in pre-order (Polish order), iteratively; a shared subtree is visited once per use."""
        stack: list[Formula] = [self]
        while stack:
            node = stack.pop()
            yield node
            if node.children:
                stack.extend(reversed(node.children))

    def distinct_nodes(self) -> Iterator[Formula]:
        """Each distinct node object once, in pre-order of first visit. Linear in the number of objects even
        when subtrees are shared (``ltl_xor(a, b)`` uses ``a`` and ``b`` twice, and nesting it doubles the tree
        :meth:`walk` visits per level); symbols come in the same first-appearance order as with :meth:`walk`."""
        seen: set[int] = set()
        stack: list[Formula] = [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            if node.children:
                stack.extend(reversed(node.children))

    def children_first(self) -> Iterator[Formula]:
        """Each distinct node object once, every node after its children (left to right): the order in which to
        compute a value of each node from its children's, without recursion and once per shared subtree."""
        done: set[int] = set()
        stack: list[tuple[Formula, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if expanded or not node.children:
                done.add(id(node))
                yield node
            else:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.children))

    # Convenience constructors so formulas can be built with operators in tests and scripts.
    def __and__(self, other: Formula) -> Formula:
        return And(self, other)

    def __or__(self, other: Formula) -> Formula:
        return Or(self, other)

    def __invert__(self) -> Formula:
        return Not(self)


class Const(Formula):
    """The constants ``1`` (true) and ``0`` (false); use :data:`TRUE` and :data:`FALSE`."""

    __slots__ = ("value",)
    arity = 0
    _code = 1

    def __init__(self, value: bool) -> None:
        self.value = bool(value)
        self.children = ()
        self.size = 1
        self._hash = hash((self._code, self.value))

    @property
    def op(self) -> str:  # type: ignore[override]
        return "true" if self.value else "false"

    def _key(self) -> tuple:
        return (self.value,)

    def __repr__(self) -> str:
        return "TRUE" if self.value else "FALSE"


TRUE = Const(True)
FALSE = Const(False)


def _flat_nodes(formula: Formula) -> list[tuple[type, object, tuple[int, ...]]]:
    """The distinct nodes of ``formula``, children before parents, each as (class, name or value or None,
    indices of its children in the list); the root is last."""
    index: dict[int, int] = {}
    out: list[tuple[type, object, tuple[int, ...]]] = []
    for node in formula.children_first():
        payload = node.name if isinstance(node, Atom) else node.value if isinstance(node, Const) else None
        index[id(node)] = len(out)
        out.append((type(node), payload, tuple(index[id(child)] for child in node.children)))
    return out


def _rebuild(nodes: list[tuple[type, object, tuple[int, ...]]]) -> Formula:
    """Inverse of :func:`_flat_nodes`."""
    built: list[Formula] = []
    for cls, payload, children in nodes:
        if cls is Atom:
            built.append(Atom(payload))  # type: ignore[arg-type]
        elif cls is Const:
            built.append(TRUE if payload else FALSE)
        else:
            built.append(cls(*(built[k] for k in children)))
    return built[-1]


def _name_digest(name: str) -> int:
    """A process-independent 32-bit digest of a symbol name (``hash(name)`` varies per process)."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass"))


class Atom(Formula):
    """An atomic proposition (an interchangeable symbol)."""

    __slots__ = ("name",)
    op = "ap"
    arity = 0
    _code = 2

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"symbol name must be a non-empty string, got {name!r}")
        self.name = name
        self.children = ()
        self.size = 1
        self._hash = hash((self._code, _name_digest(name)))

    def _key(self) -> tuple:
        return (self.name,)

    def __repr__(self) -> str:
        return f"Atom({self.name!r})"


class _Unary(Formula):
    __slots__ = ()
    arity = 1

    def __init__(self, arg: Formula) -> None:
        if not isinstance(arg, Formula):
            raise TypeError(f"operand must be a Formula, got {type(arg).__name__}")
        self.children = (arg,)
        self.size = 1 + arg.size
        self._hash = hash((self._code, arg._hash))

    @property
    def arg(self) -> Formula:
        return self.children[0]


class _Binary(Formula):
    __slots__ = ()
    arity = 2

    def __init__(self, left: Formula, right: Formula) -> None:
        if not isinstance(left, Formula) or not isinstance(right, Formula):
            raise TypeError("operands must be Formula objects")
        self.children = (left, right)
        self.size = 1 + left.size + right.size
        self._hash = hash((self._code, left._hash, right._hash))

    @property
    def left(self) -> Formula:
        return self.children[0]

    @property
    def right(self) -> Formula:
        return self.children[1]


class Not(_Unary):
    __slots__ = ()
    op = "not"
    _code = 3


class Next(_Unary):
    """LTL ``X``."""

    __slots__ = ()
    op = "X"
    _code = 4


class And(_Binary):
    __slots__ = ()
    op = "and"
    _code = 5


class Or(_Binary):
    __slots__ = ()
    op = "or"
    _code = 6


class Until(_Binary):
    """LTL ``U`` (strong until)."""

    __slots__ = ()
    op = "U"
    _code = 7


class Equiv(_Binary):
    """Propositional ``<->`` (``=`` in the model vocabulary)."""

    __slots__ = ()
    op = "equiv"
    _code = 8


class Xor(_Binary):
    """Propositional ``xor`` (``^`` in the model vocabulary)."""

    __slots__ = ()
    op = "xor"
    _code = 9


# --- derived LTL operators, rewritten into the core ``! & | X U`` ----------------------------


def neg(f: Formula) -> Formula:
    """Negation that folds the double negations the rewrites would otherwise introduce."""
    if isinstance(f, Not):
        return f.arg
    if isinstance(f, Const):
        return FALSE if f.value else TRUE
    return Not(f)


def eventually(f: Formula) -> Formula:
    """``F f`` = ``1 U f``."""
    return Until(TRUE, f)


def globally(f: Formula) -> Formula:
    """``G f`` = ``!(1 U !f)``."""
    return Not(Until(TRUE, neg(f)))


def implies(a: Formula, b: Formula) -> Formula:
    """``a -> b`` = ``!a | b``."""
    return Or(neg(a), b)


def release(a: Formula, b: Formula) -> Formula:
    """``a R b`` = ``!(!a U !b)``."""
    return Not(Until(neg(a), neg(b)))


def weak_until(a: Formula, b: Formula) -> Formula:
    """``a W b`` = ``(a U b) | G a``."""
    return Or(Until(a, b), globally(a))


def strong_release(a: Formula, b: Formula) -> Formula:
    """``a M b`` = ``b U (a & b)``."""
    return Until(b, And(a, b))


def ltl_equiv(a: Formula, b: Formula) -> Formula:
    """``a <-> b`` in the LTL core: ``(a & b) | (!a & !b)``."""
    return Or(And(a, b), And(neg(a), neg(b)))


def ltl_xor(a: Formula, b: Formula) -> Formula:
    """``a xor b`` in the LTL core: ``(a & !b) | (!a & b)``."""
    return Or(And(a, neg(b)), And(neg(a), b))


#: Largest tree :func:`in_ltl_core` builds. Rewriting ``<->`` and ``xor`` doubles both operands, so the
#: tree grows exponentially with their nesting; past this size no model input or printed text is useful.
MAX_CORE_SIZE = 100_000


def in_ltl_core(f: Formula, max_size: int = MAX_CORE_SIZE) -> Formula:
    """``f`` with ``<->`` and ``xor`` rewritten into ``! & |`` (:func:`ltl_equiv`, :func:`ltl_xor`), as the
    LTL model vocabulary needs. The rewritten operands are shared, so building it is linear; a ``ValueError``
    names the size when its tree (what printing writes out) would exceed ``max_size`` nodes."""
    done: dict[int, Formula] = {}
    for node in f.children_first():
        if not node.children:
            done[id(node)] = node
        else:
            kids = [done[id(child)] for child in node.children]
            if node.op == "equiv":
                new = ltl_equiv(*kids)
            elif node.op == "xor":
                new = ltl_xor(*kids)
            else:
                new = node if all(k is c for k, c in zip(kids, node.children)) else type(node)(*kids)
            if new.size > max_size:
                raise ValueError(
                    f"the formula has {new.size:,}+ nodes with <-> and xor rewritten into ! & | (the LTL model "
                    f"vocabulary has neither); the limit is {max_size:,}"
                )
            done[id(node)] = new
    return done[id(f)]


def conjunction(literals: Iterable[Formula]) -> Formula:
    """Left-nested conjunction (``&&abc``); ``1`` when empty (a free trace step)."""
    result: Formula | None = None
    for lit in literals:
        result = lit if result is None else And(result, lit)
    return TRUE if result is None else result


def is_temporal_free(f: Formula) -> bool:
    """True when the formula has no ``X``/``U`` (a valid trace step)."""
    return all(node.op not in ("X", "U") for node in f.distinct_nodes())


def is_propositional(f: Formula) -> bool:
    """Alias of :func:`is_temporal_free`, for readability at call sites about prop formulas."""
    return is_temporal_free(f)


class Trace:
    """A symbolic lasso: finite ``prefix`` steps then ``cycle`` steps repeated forever.

    Each step is a temporal-free formula constraining the valuation at that position; the trace
    denotes every infinite word whose letters satisfy the respective steps.
    """

    __slots__ = ("prefix", "cycle", "_hash")

    def __init__(self, prefix: Iterable[Formula], cycle: Iterable[Formula]) -> None:
        self.prefix: tuple[Formula, ...] = tuple(prefix)
        self.cycle: tuple[Formula, ...] = tuple(cycle)
        if not self.cycle:
            raise ValueError("a lasso trace needs a non-empty cycle")
        for step in self.prefix + self.cycle:
            if not isinstance(step, Formula):
                raise TypeError(f"trace steps must be Formula objects, got {type(step).__name__}")
            if not is_temporal_free(step):
                raise ValueError(f"trace step {step} contains a temporal operator")
        self._hash = hash((self.prefix, self.cycle))  # process-independent: built from formula hashes

    @property
    def steps(self) -> tuple[Formula, ...]:
        return self.prefix + self.cycle

    def __len__(self) -> int:
        return len(self.prefix) + len(self.cycle)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.prefix == other.prefix and self.cycle == other.cycle

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return PRINTERS["trace"](self)

    def __repr__(self) -> str:
        return f"Trace({str(self)!r})"


def rename_nodes(f: Formula, mapping: Mapping[str, str]) -> Formula:
    """Rebuild ``f`` with atoms renamed by ``mapping`` (names not in it are kept); iterative."""
    # Shared subtrees are rebuilt once.
    done: dict[int, Formula] = {}
    for node in f.children_first():
        if isinstance(node, Atom):
            new = mapping.get(node.name, node.name)
            done[id(node)] = node if new == node.name else Atom(new)
        else:
            kids = tuple(done[id(c)] for c in node.children)
            done[id(node)] = node if all(k is c for k, c in zip(kids, node.children)) else type(node)(*kids)
    return done[id(f)]
