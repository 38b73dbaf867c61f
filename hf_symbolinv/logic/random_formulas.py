"""Random formulas with the distribution of the DeepLTL generators, and the per-size gate.

The tree generator follows the algorithm of Spot's ``randltl`` (which DeepLTL used), written
from its description: a formula of tree size ``n`` is an operand when ``n == 1``, a unary operator
over a formula of size ``n - 1`` when ``n == 2``, and otherwise a unary or binary operator
(chosen by priority among the operators of that arity or less); a binary operator splits the
remaining ``n - 1`` nodes uniformly (left size in ``1..n-2``). The priority of ``ap`` defaults to
the number of symbols, as in Spot, and each symbol is then drawn uniformly. A size range draws the
size uniformly first, as ``randltl --tree-size=MIN..MAX`` does. The random stream is Python's
:class:`random.Random`, so results are reproducible from a seed (but not equal to Spot's).

With ``simplify=True`` the trivial identities that Spot's formula constructors apply are applied
while building (``!!f = f``, ``f & 1 = f``, ``f & f = f``, ``X 1 = 1``, ``0 U f = f`` ...), so the
returned formula may be smaller than the drawn tree, as in the DeepLTL data; the builder then
measures :func:`formula_size` and gates on it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from .formula import (
    FALSE,
    TRUE,
    And,
    Atom,
    Const,
    Equiv,
    Formula,
    Next,
    Not,
    Or,
    Until,
    Xor,
    eventually,
    globally,
    implies,
    ltl_equiv,
    ltl_xor,
    release,
    strong_release,
    weak_until,
)

__all__ = [
    "LTL_PRIORITIES",
    "PROP_PRIORITIES",
    "random_ltl_formula",
    "random_prop_formula",
    "random_prop_formula_of_at_least",
    "SizeGate",
    "symbol_names",
]

#: DeepLTL "ltl-35" priorities (Spot names). ``ap`` is omitted: it defaults to the symbol count.
LTL_PRIORITIES: dict[str, float] = {
    "false": 1,
    "true": 1,
    "not": 1,
    "F": 0,
    "G": 0,
    "X": 1,
    "equiv": 0,
    "implies": 0,
    "xor": 0,
    "R": 0,
    "U": 1,
    "W": 0,
    "M": 0,
    "and": 1,
    "or": 0,
}
#: "prop-35" priorities.
PROP_PRIORITIES: dict[str, float] = {
    "false": 1,
    "true": 1,
    "not": 1,
    "equiv": 0.5,
    "implies": 0,
    "xor": 0.5,
    "and": 1,
    "or": 1,
}

_ARITY = {
    "ap": 0,
    "false": 0,
    "true": 0,
    "not": 1,
    "F": 1,
    "G": 1,
    "X": 1,
    "equiv": 2,
    "implies": 2,
    "xor": 2,
    "R": 2,
    "U": 2,
    "W": 2,
    "M": 2,
    "and": 2,
    "or": 2,
}
_LTL_OPS = frozenset(_ARITY)
_PROP_OPS = frozenset({"ap", "false", "true", "not", "equiv", "implies", "xor", "and", "or"})


def symbol_names(symbols: int | Sequence[str]) -> list[str]:
    """``5`` -> ``a..e``; a sequence of names is used as given."""
    if isinstance(symbols, int):
        if not 0 <= symbols <= 26:
            raise ValueError("an integer symbol count must be between 0 and 26; pass names for more")
        return [chr(ord("a") + i) for i in range(symbols)]
    names = list(symbols)
    if len(set(names)) != len(names):
        raise ValueError("symbol names must be distinct")
    return names


class _Generator:
    def __init__(self, priorities: Mapping[str, float], names: list[str], allowed: frozenset[str]) -> None:
        unknown = set(priorities) - allowed
        if unknown:
            raise ValueError(f"unknown operators in priorities: {sorted(unknown)}")
        if any(w < 0 for w in priorities.values()):
            raise ValueError("priorities must be non-negative")
        weights = dict(priorities)
        weights.setdefault("ap", float(len(names)))
        if not names:
            weights["ap"] = 0.0
        self.names = names
        # Same order as Spot's tables so the semantics of ties are the same.
        order = [op for op in _ARITY if op in allowed]
        self.by_arity = [
            [(op, weights.get(op, 0.0)) for op in order if _ARITY[op] == k and weights.get(op, 0.0) > 0]
            for k in range(3)
        ]
        self.total = [sum(w for _, w in ops) for ops in self.by_arity]

    def _choose(self, rng: random.Random, ops: list[tuple[str, float]], total: float) -> str:
        r = rng.random() * total
        acc = 0.0
        for op, weight in ops:
            acc += weight
            if r < acc:
                return op
        return ops[-1][0]

    def pick(self, rng: random.Random, n: int) -> tuple[str, int]:
        """An operator for a tree of size ``n``, and the size the operator's builder uses."""
        t0, t1, t2 = self.total
        # Spot's approximations of impossible cases.
        if n == 1 and t0 == 0:
            n = 2 if t1 else 3
        elif n == 2 and t1 == 0:
            n = 1 if t0 else 3
        elif n > 2 and t1 + t2 == 0:
            n = 1
        if n == 1:
            if t0 == 0:
                raise ValueError("no operand has a positive priority")
            return self._choose(rng, self.by_arity[0], t0), n
        if n == 2:
            return self._choose(rng, self.by_arity[1], t1), n
        return self._choose(rng, self.by_arity[1] + self.by_arity[2], t1 + t2), n

    def generate(self, rng: random.Random, size: int, build, max_constants: int | None = None) -> Formula | None:
        # Pre-order draw with an explicit stack (no recursion limit), then bottom-up build. ``max_constants``: None,
        # given up at once, when the plan draws more constant leaves than that.
        plan: list[tuple[str, str | None]] = []
        pending = [size]
        constants = 0
        while pending:
            op, n = self.pick(rng, pending.pop())
            arity = _ARITY[op]
            if arity == 0:
                if op != "ap":
                    constants += 1
                    if max_constants is not None and constants > max_constants:
                        return None
                plan.append((op, rng.choice(self.names) if op == "ap" else None))
            elif arity == 1:
                plan.append((op, None))
                pending.append(n - 1)
            else:
                rest = n - 1
                left = rng.randint(1, rest - 1)
                plan.append((op, None))
                pending.append(rest - left)  # right operand (popped after the left one)
                pending.append(left)
        values: list[Formula] = []
        for op, name in reversed(plan):
            arity = _ARITY[op]
            if arity == 0:
                values.append(Atom(name) if op == "ap" else (TRUE if op == "true" else FALSE))  # type: ignore[arg-type]
            elif arity == 1:
                values.append(build(op, values.pop()))
            else:
                left_f = values.pop()
                right_f = values.pop()
                values.append(build(op, left_f, right_f))
        assert len(values) == 1
        return values[0]


def _draw_size(rng: random.Random, size: int | tuple[int, int]) -> int:
    if isinstance(size, int):
        lo = hi = size
    else:
        lo, hi = size
    if lo < 1 or hi < lo:
        raise ValueError(f"invalid size {size!r}")
    return lo if lo == hi else rng.randint(lo, hi)


# --- node builders --------------------------------------------------------------------------


def _plain_ltl(op: str, a: Formula, b: Formula | None = None) -> Formula:
    if op == "not":
        return Not(a)
    if op == "X":
        return Next(a)
    if op == "F":
        return eventually(a)
    if op == "G":
        return globally(a)
    assert b is not None
    if op == "and":
        return And(a, b)
    if op == "or":
        return Or(a, b)
    if op == "U":
        return Until(a, b)
    if op == "implies":
        return implies(a, b)
    if op == "equiv":
        return ltl_equiv(a, b)
    if op == "xor":
        return ltl_xor(a, b)
    if op == "R":
        return release(a, b)
    if op == "W":
        return weak_until(a, b)
    return strong_release(a, b)  # M


def _plain_prop(op: str, a: Formula, b: Formula | None = None) -> Formula:
    if op == "not":
        return Not(a)
    assert b is not None
    if op == "and":
        return And(a, b)
    if op == "or":
        return Or(a, b)
    if op == "equiv":
        return Equiv(a, b)
    if op == "xor":
        return Xor(a, b)
    return Or(Not(a), b)  # implies


def _const(f: Formula) -> bool | None:
    return f.value if isinstance(f, Const) else None


def _trivial(op: str, a: Formula, b: Formula | None, plain) -> Formula:
    """Trivial identities applied by Spot's constructors (within our operator set)."""
    ca = _const(a)
    cb = _const(b) if b is not None else None
    if op == "not":
        if ca is not None:
            return FALSE if ca else TRUE
        if isinstance(a, Not):
            return a.arg
    elif op == "X":
        if ca is not None:
            return a
    elif op in ("and", "or"):
        absorbing = op == "or"  # 1 absorbs |, 0 absorbs &
        if ca is not None:
            return a if ca == absorbing else b  # type: ignore[return-value]
        if cb is not None:
            return b if cb == absorbing else a  # type: ignore[return-value]
        if a == b:
            return a
    elif op == "U":
        if cb is True or ca is False or a == b:
            return b  # type: ignore[return-value]
    elif op in ("equiv", "xor"):
        flip = op == "xor"
        if a == b:
            return FALSE if flip else TRUE
        for c, other in ((ca, b), (cb, a)):
            if c is not None:
                keep = c != flip  # 1 <-> f = f, 0 xor f = f
                return other if keep else _trivial("not", other, None, plain)  # type: ignore[arg-type]
    return plain(op, a, b) if b is not None else plain(op, a)


def _simplified_prop(op: str, a: Formula, b: Formula | None = None) -> Formula:
    return _trivial(op, a, b, _plain_prop)


def random_ltl_formula(
    rng: random.Random,
    size: int | tuple[int, int],
    symbols: int | Sequence[str] = 5,
    priorities: Mapping[str, float] | None = None,
    simplify: bool = False,
) -> Formula:
    """A random LTL formula of tree size ``size`` (or uniform in the range ``(lo, hi)``).

    ``priorities`` maps Spot operator names (``ap false true not F G X equiv implies xor R U W M
    and or``) to weights; default :data:`LTL_PRIORITIES`. Derived operators are rewritten into
    ``! & | X U`` after drawing, which changes the size; ``simplify`` applies Spot's trivial
    identities (see the module docstring).
    """
    names = symbol_names(symbols)
    gen = _Generator(LTL_PRIORITIES if priorities is None else priorities, names, _LTL_OPS)
    build = _plain_ltl
    if simplify:

        def build(op: str, a: Formula, b: Formula | None = None) -> Formula:
            return _trivial(op, a, b, _plain_ltl)

    return gen.generate(rng, _draw_size(rng, size), build)


def random_prop_formula(
    rng: random.Random,
    size: int | tuple[int, int],
    symbols: int | Sequence[str] = 5,
    priorities: Mapping[str, float] | None = None,
    simplify: bool = False,
) -> Formula:
    """A random propositional formula (``! & | <-> xor``; ``implies`` is rewritten), as above."""
    names = symbol_names(symbols)
    gen = _Generator(PROP_PRIORITIES if priorities is None else priorities, names, _PROP_OPS)
    return gen.generate(rng, _draw_size(rng, size), _simplified_prop if simplify else _plain_prop)


def random_prop_formula_of_at_least(
    rng: random.Random, size: int, at_least: int, symbols: int | Sequence[str] = 5
) -> Formula | None:
    """:func:`random_prop_formula` with ``simplify=True`` and the default priorities, or None where the drawn tree
    cannot keep ``at_least`` nodes, found as soon as its plan shows it (before the tree is built, most often a few
    nodes into the plan): a size gate whose smaller sizes are full rejects nearly every large draw, and this finds
    most of those rejections at a fraction of a draw's cost. Whenever it returns a formula, the random stream was
    consumed exactly as for :func:`random_prop_formula`, so the same draw gives the same formula.

    Why: every constant leaf takes at least one node with it. A simplified propositional formula is a constant or
    holds none (each of ``! & | <-> xor`` with a constant operand is rewritten), and by induction over the tree a
    subtree of ``n`` nodes with ``k >= 1`` constant leaves becomes a constant or a formula of at most ``n - k``
    nodes (``1 xor f = !f`` adds one node for the two it takes). So a tree of ``size`` nodes with more than ``size -
    at_least`` constant leaves keeps fewer than ``at_least`` (a constant keeps 1). ``->``, rewritten into ``| !``
    without the identities, would break this: its default priority is 0."""
    if size < at_least:
        return None
    names = symbol_names(symbols)
    gen = _Generator(PROP_PRIORITIES, names, _PROP_OPS)
    bounded = at_least > 1 and not PROP_PRIORITIES.get("implies")
    return gen.generate(rng, size, _simplified_prop, max_constants=size - at_least if bounded else None)


class SizeGate:
    """DeepLTL's per-size gate that makes formula sizes near-uniform.

    Every size in ``[min_size, max_size]`` may hold ``total * (1 - alpha) / #bins`` samples, where
    the bins counted are the sizes from ``start_from`` on (smaller sizes are rarer and are not
    waited for); a sample is accepted while its size is below its target. ``full()`` is true when
    every counted bin is full. Call :meth:`accepts` before the (expensive) solving and
    :meth:`record` once the sample is kept.
    """

    def __init__(
        self, total: int, alpha: float = 0.112, min_size: int = 1, max_size: int = 35, start_from: int = 10
    ) -> None:
        if min_size > max_size:
            raise ValueError("min_size must not exceed max_size")
        self.total = total
        self.alpha = alpha
        self.min_size = min_size
        self.max_size = max_size
        self.enforced = [s for s in range(min_size, max_size + 1) if s >= start_from]
        if not self.enforced:
            raise ValueError("no size bin at or above start_from")
        self.target = total * (1 - alpha) / len(self.enforced)
        self.counts = dict.fromkeys(range(min_size, max_size + 1), 0)

    def accepts(self, size: int) -> bool:
        count = self.counts.get(size)
        return count is not None and count < self.target

    def record(self, size: int) -> None:
        if size in self.counts:
            self.counts[size] += 1

    def full(self) -> bool:
        return all(self.counts[s] >= self.target for s in self.enforced)

    def __repr__(self) -> str:
        kept = sum(self.counts.values())
        return f"SizeGate(total={self.total}, alpha={self.alpha}, kept={kept}, target/bin={self.target:.1f})"
