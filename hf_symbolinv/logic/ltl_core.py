"""The LTL engine's shared core: verdicts and results, work and time budgets, the on-the-fly tableau
automaton (generalised Büchi, transitions labelled by cubes) with its cache, step truth tables and the
accepting-SCC search. See ``ltl.py`` for the route."""

from __future__ import annotations

import gc
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

from ..utils.symbols import SymbolRule
from .formula import Atom, Formula, Trace
from .notation import parse_ltl, parse_trace

# Node kinds of the engine's NNF.
_T, _F, _LIT, _AND, _OR, _X, _U, _R = range(8)
_EMPTY: frozenset[int] = frozenset()
_EMPTY_TERM = (0, 0, _EMPTY, 0)
_CHECK_EVERY = 16  # look at the clock every 16 units of work (a clock read costs ~60 ns)
# A state is expanded lazily (no subsumption pruning, successors one at a time) when the product of
# its conjuncts' expansions may exceed this many terms. The search for a satisfying lasso usually
# needs only the first few successors; the checker gains more from pruning, so it waits longer.
_LAZY_SOLVE = 512
_LAZY_CHECK = 8192

_MAX_STEP_SYMBOLS = 22  # truth tables of a single trace step are 2**k bits


class Verdict(Enum):
    """Result of :func:`check_ltl`; truthy only for HOLDS."""

    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"

    def __bool__(self) -> bool:
        return self is Verdict.HOLDS


@dataclass(frozen=True)
class LTLSolveResult:
    """Result of :func:`solve_ltl`: ``status`` is ``"sat"``, ``"unsat"`` or ``"timeout"``."""

    status: str
    trace: Trace | None = None

    @property
    def sat(self) -> bool:
        return self.status == "sat"

    @property
    def unsat(self) -> bool:
        return self.status == "unsat"

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"

    def __bool__(self) -> bool:
        return self.sat


class _Timeout(Exception):
    pass


class _OutOfWork(Exception):
    pass


class _Clock:
    """Deadline (wall clock) and optional work budget (ticks, deterministic) of one call."""

    __slots__ = ("deadline", "ticks", "limit", "next_check")

    def __init__(self, deadline: float | None, limit: int | None = None) -> None:
        self.deadline = deadline
        self.ticks = 0
        self.limit = limit
        self.next_check = _CHECK_EVERY

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks >= self.next_check:
            self._check()

    def charge(self, units: int) -> None:
        """Account for ``units`` of work done in a tight loop."""
        self.ticks += units
        if self.ticks >= self.next_check:
            self._check()

    def _check(self) -> None:
        self.next_check = self.ticks + _CHECK_EVERY
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise _Timeout
        if self.limit is not None and self.ticks > self.limit:
            raise _OutOfWork


class _NoGC:
    """Pause the cyclic garbage collector during a call: the engine allocates many small acyclic
    objects, and collections triggered mid-search cost more than the search (restored after)."""

    __slots__ = ("was_enabled",)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


_NO_CLOCK = _Clock(None)


def _nlits(cube: tuple[int, int]) -> int:
    return cube[0].bit_count() + cube[1].bit_count()


def _preference(term: tuple[int, int, frozenset[int], int]) -> tuple[int, int, int]:
    return (term[3].bit_count(), len(term[2]), term[0].bit_count() + term[1].bit_count())


def _term_weight(term: tuple[int, int, frozenset[int], int]) -> int:
    return term[0].bit_count() + term[1].bit_count() + len(term[2]) + term[3].bit_count()


#: Deepest operator nesting the LTL engine accepts. Its tableau construction recurses once per level;
#: deeper formulas (far beyond any task's: the datasets stop at size 50) get a clear error rather than
#: Python's RecursionError.
MAX_LTL_DEPTH = 300


def nesting_depth(formula: Formula) -> int:
    """Operator nesting depth of ``formula`` (an atom has depth 1), computed without recursion and once per
    distinct node (shared subtrees would otherwise be walked once per path)."""
    depth: dict[int, int] = {}
    for node in formula.children_first():
        depth[id(node)] = 1 + max((depth[id(child)] for child in node.children), default=0)
    return depth[id(formula)]


def check_depth(formula: Formula) -> None:
    """A ``ValueError`` naming the depth if ``formula`` nests deeper than :data:`MAX_LTL_DEPTH`."""
    depth = nesting_depth(formula)
    if depth > MAX_LTL_DEPTH:
        raise ValueError(f"formula nests {depth} operators deep; the LTL engine accepts at most {MAX_LTL_DEPTH} levels")


class _Automaton:
    """Tableau automaton of one formula (optionally negated), expanded lazily and memoised."""

    def __init__(self, formula: Formula, negate: bool) -> None:
        check_depth(formula)
        self.symbols: list[str] = []
        self.sym_index: dict[str, int] = {}
        for node in formula.distinct_nodes():  # symbol bits in order of first appearance (rename-invariant)
            if isinstance(node, Atom) and node.name not in self.sym_index:
                self.sym_index[node.name] = len(self.symbols)
                self.symbols.append(node.name)
        self.ops: list[int] = [_T, _F]
        self.args: list[tuple[int, ...]] = [(), ()]
        self.ubit: dict[int, int] = {}
        self._intern: dict[tuple, int] = {}
        self._nnf_memo: dict[tuple[Formula, bool], int] = {}
        root = self._nnf(formula, negate)
        self._nnf_memo = {}
        self.all_marks = (1 << len(self.ubit)) - 1
        self._dnf: dict[int, list[tuple[int, int, frozenset[int], int]]] = {}
        self._implied_memo: dict[int, frozenset[int]] = {}
        self._sorted_dnf_memo: dict[int, list[tuple[int, int, frozenset[int], int]]] = {}
        self._reduced: dict[frozenset[int], frozenset[int]] = {}
        self.state_ids: dict[frozenset[int], int] = {}
        self.state_sets: list[frozenset[int]] = []
        self.trans: list[list[tuple[int, int, tuple[tuple[int, int], ...]]] | None] = []
        self.clock = _NO_CLOCK
        if root == 1:
            self.init: int | None = None  # the formula is false: empty automaton
        else:
            self.init = self._state_id(self._reduce(self._conjuncts(root)))

    # --- NNF construction with hash-consing -------------------------------------------------

    def _mk(self, op: int, args: tuple[int, ...]) -> int:
        key = (op, args)
        nid = self._intern.get(key)
        if nid is None:
            nid = len(self.ops)
            self.ops.append(op)
            self.args.append(args)
            self._intern[key] = nid
            if op == _U:
                self.ubit[nid] = 1 << len(self.ubit)
        return nid

    def _mk_junction(self, op: int, children: Iterable[int]) -> int:
        unit, zero = (0, 1) if op == _AND else (1, 0)
        ops, args = self.ops, self.args
        flat: set[int] = set()
        for c in children:
            if c == unit:
                continue
            if c == zero:
                return zero
            if ops[c] == op:
                flat.update(args[c])
            else:
                flat.add(c)
        lits = {args[c][0] for c in flat if ops[c] == _LIT}
        if any(lit ^ 1 in lits for lit in lits):
            return zero  # a & !a, a | !a
        if not flat:
            return unit
        if len(flat) == 1:
            return next(iter(flat))
        return self._mk(op, tuple(sorted(flat)))

    def _mk_x(self, c: int) -> int:
        return c if c <= 1 else self._mk(_X, (c,))

    def _mk_u(self, f: int, g: int) -> int:
        if g <= 1 or f == 1 or f == g:
            return g
        if self.ops[g] == _U and self.args[g][0] == f:
            return g  # f U (f U h) = f U h
        return self._mk(_U, (f, g))

    def _mk_r(self, f: int, g: int) -> int:
        if g <= 1 or f == 0 or f == g:
            return g
        if self.ops[g] == _R and self.args[g][0] == f:
            return g
        return self._mk(_R, (f, g))

    def _nnf(self, f: Formula, negated: bool) -> int:
        key = (f, negated)
        memo = self._nnf_memo.get(key)
        if memo is not None:
            return memo
        op = f.op
        if op == "true" or op == "false":
            result = 1 if (op == "true") == negated else 0
        elif op == "ap":
            result = self._mk(_LIT, (2 * self.sym_index[f.name] + negated,))  # type: ignore[attr-defined]
        elif op == "not":
            result = self._nnf(f.children[0], not negated)
        elif op == "and" or op == "or":
            a, b = f.children
            junction = _AND if (op == "and") != negated else _OR
            result = self._mk_junction(junction, (self._nnf(a, negated), self._nnf(b, negated)))
        elif op == "X":
            result = self._mk_x(self._nnf(f.children[0], negated))
        elif op == "U":
            a, b = f.children
            if negated:  # !(a U b) = !a R !b
                result = self._mk_r(self._nnf(a, True), self._nnf(b, True))
            else:
                result = self._mk_u(self._nnf(a, False), self._nnf(b, False))
        elif op == "equiv" or op == "xor":
            a, b = f.children
            same = (op == "equiv") != negated  # a<->b, or !(a xor b)
            pa, na, pb, nb = self._nnf(a, False), self._nnf(a, True), self._nnf(b, False), self._nnf(b, True)
            if same:
                parts = (self._mk_junction(_AND, (pa, pb)), self._mk_junction(_AND, (na, nb)))
            else:
                parts = (self._mk_junction(_AND, (pa, nb)), self._mk_junction(_AND, (na, pb)))
            result = self._mk_junction(_OR, parts)
        else:
            raise ValueError(f"operator {op!r} is not an LTL operator")
        self._nnf_memo[key] = result
        return result

    # --- tableau expansion ------------------------------------------------------------------

    def _conjuncts(self, nid: int) -> frozenset[int]:
        if nid == 0:
            return _EMPTY
        return frozenset(self.args[nid]) if self.ops[nid] == _AND else frozenset((nid,))

    def _implied(self, nid: int) -> frozenset[int]:
        """Obligations that ``nid`` forces at the same position (``f R g`` forces ``g``)."""
        found = self._implied_memo.get(nid)
        if found is None:
            op = self.ops[nid]
            if op == _R:
                g = self.args[nid][1]
                found = self._implied(g) | (self._conjuncts(g) if self.ops[g] == _AND else frozenset((g,)))
            elif op == _AND:
                found = frozenset().union(*(self._conjuncts(c) | self._implied(c) for c in self.args[nid]))
            else:
                found = _EMPTY
            self._implied_memo[nid] = found
        return found

    def _reduce(self, obligations: frozenset[int]) -> frozenset[int]:
        """An equivalent, smaller obligation set: drop what other members force, and ``f U g``
        when ``g`` is present. Equivalent sets have the same language, so this is exact."""
        if len(obligations) < 2:
            return obligations
        reduced = self._reduced.get(obligations)
        if reduced is None:
            forced: set[int] = set()
            for nid in obligations:
                forced |= self._implied(nid)
            kept = obligations - forced if forced else obligations
            ops, args = self.ops, self.args
            present = kept | forced
            drop = {nid for nid in kept if ops[nid] == _U and args[nid][1] in present}
            reduced = kept - drop if drop else kept
            self._reduced[obligations] = reduced
        return reduced

    def _state_id(self, obligations: frozenset[int]) -> int:
        sid = self.state_ids.get(obligations)
        if sid is None:
            sid = len(self.state_sets)
            self.state_ids[obligations] = sid
            self.state_sets.append(obligations)
            self.trans.append(None)
        return sid

    def _product(self, left: list, right: list) -> list:
        if len(right) == 1 and right[0] is _EMPTY_TERM:
            return left
        if len(left) == 1 and left[0] is _EMPTY_TERM:
            return right
        out: dict[tuple, None] = {}
        charge = self.clock.charge
        width = len(right)
        for p1, n1, x1, u1 in left:
            charge(width)
            for p2, n2, x2, u2 in right:
                p = p1 | p2
                n = n1 | n2
                if p & n:
                    continue
                out[(p, n, (x1 | x2) if (x1 and x2) else (x1 or x2), u1 | u2)] = None
        return list(out)

    def _prune(self, terms: list) -> list:
        """Drop terms subsumed by another (fewer literals, obligations and postponements).

        Sound and complete for emptiness: the canonical run of a word (pick, at each step, the
        branches that are true on the word) can always use the subsuming term instead, and doing
        so never postpones an eventuality that the canonical run fulfils.
        """
        if len(terms) < 2:
            return terms
        terms = sorted(terms, key=_term_weight)
        kept: list = []
        charge = self.clock.charge
        for term in terms:
            p, n, x, u = term
            charge(1 + len(kept))
            for p1, n1, x1, u1 in kept:
                if not (p1 & ~p or n1 & ~n or u1 & ~u) and x1 <= x:
                    break
            else:
                kept.append(term)
        return kept

    def _dnf_of(self, nid: int) -> list[tuple[int, int, frozenset[int], int]]:
        d = self._dnf.get(nid)
        if d is not None:
            return d
        op, args = self.ops[nid], self.args[nid]
        if op == _T:
            d = [_EMPTY_TERM]
        elif op == _F:
            d = []
        elif op == _LIT:
            lit = args[0]
            d = [(0, 1 << (lit >> 1), _EMPTY, 0)] if lit & 1 else [(1 << (lit >> 1), 0, _EMPTY, 0)]
        elif op == _AND:
            d = [_EMPTY_TERM]
            for c in args:
                d = self._product(d, self._dnf_of(c))
                if not d:
                    break
            d = self._prune(d)
        elif op == _OR:
            d = list(dict.fromkeys(t for c in args for t in self._dnf_of(c)))
            self.clock.charge(len(d))
            d = self._prune(d)
        elif op == _X:
            d = [(0, 0, self._conjuncts(args[0]), 0)]
        elif op == _U:  # f U g = g | (f & X(f U g)), postponing marks the transition
            f, g = args
            later = self._product(self._dnf_of(f), [(0, 0, frozenset((nid,)), self.ubit[nid])])
            d = self._prune(list(dict.fromkeys(self._dnf_of(g) + later)))
        else:  # f R g = (f & g) | (g & X(f R g))
            f, g = args
            dg = self._dnf_of(g)
            now = self._product(self._dnf_of(f), dg)
            later = self._product(dg, [(0, 0, frozenset((nid,)), 0)])
            d = self._prune(list(dict.fromkeys(now + later)))
        self._dnf[nid] = d
        return d

    def transitions(self, sid: int) -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
        """Transitions of state ``sid``: ``(successor, marks, cubes)``, cheapest cube first."""
        trans = self.trans[sid]
        if trans is not None:
            return trans
        terms = [_EMPTY_TERM]
        for nid in sorted(self.state_sets[sid]):
            terms = self._product(terms, self._dnf_of(nid))
            if not terms:
                break
        terms = self._prune(terms)
        all_marks = self.all_marks
        groups: dict[tuple[frozenset[int], int], list[tuple[int, int]]] = {}
        self.clock.charge(len(terms))
        for p, n, x, u in terms:
            groups.setdefault((x, all_marks & ~u), []).append((p, n))
        built = []
        charge = self.clock.charge
        for (x, marks), cubes in groups.items():
            charge(4 + len(x) + len(cubes))
            cubes.sort(key=_nlits)
            built.append((self._state_id(self._reduce(x)), marks, tuple(cubes)))
        # Search order (matters for the solver): most marks, fewest obligations, fewest literals.
        sets = self.state_sets
        built.sort(key=lambda t: (-t[1].bit_count(), len(sets[t[0]]), _nlits(t[2][0])))
        self.trans[sid] = built
        return built

    def _sorted_dnf(self, nid: int) -> list[tuple[int, int, frozenset[int], int]]:
        """The node's expansion, best terms first (fewest postponements, obligations, literals)."""
        found = self._sorted_dnf_memo.get(nid)
        if found is None:
            found = sorted(self._dnf_of(nid), key=_preference)
            self.clock.charge(len(found))
            self._sorted_dnf_memo[nid] = found
        return found

    def product_estimate(self, sid: int, cap: int) -> int:
        """Upper bound on the number of terms of the state's expansion (exact up to ``cap``)."""
        estimate = 1
        for nid in sorted(self.state_sets[sid]):  # sorted: the early exit decides which work is counted
            estimate *= max(1, len(self._dnf_of(nid)))
            if estimate > cap:
                break
        return estimate

    def lazy_transitions(
        self,
        sid: int,
        seed: tuple[int, int] = (0, 0),
        compatible: Callable[[tuple[int, int]], bool] | None = None,
    ) -> Iterator[tuple[int, int, tuple[int, int]]]:
        """The state's transitions one at a time, best first, without building the product.

        Used on states whose full expansion would be large: the search usually needs only the
        first few. Order: each conjunct's terms by (postponements, obligations, literals),
        combined lexicographically; repeated (successor, marks) pairs are skipped. ``seed``
        literals (a cube-shaped trace step) prune conflicting branches early and are part of the
        yielded cube; ``compatible`` filters complete terms (before de-duplication).
        """
        dnfs = [self._sorted_dnf(nid) for nid in sorted(self.state_sets[sid])]
        self.clock.charge(len(dnfs))
        all_marks = self.all_marks
        seen: set[tuple[frozenset[int], int]] = set()
        tick = self.clock.tick
        # Iterative depth-first walk over the product: one index per conjunct.
        depth = len(dnfs)
        if depth == 0:
            if compatible is None or compatible(seed):
                yield self._state_id(_EMPTY), all_marks, seed
            return
        partial: list[tuple[int, int, frozenset[int], int]] = [_EMPTY_TERM] * (depth + 1)
        partial[0] = (seed[0], seed[1], _EMPTY, 0)
        choice = [0] * depth
        k = 0
        while k >= 0:
            if choice[k] >= len(dnfs[k]):
                choice[k] = 0
                k -= 1
                if k >= 0:
                    choice[k] += 1
                continue
            tick()
            p0, n0, x0, u0 = partial[k]
            p1, n1, x1, u1 = dnfs[k][choice[k]]
            p, n = p0 | p1, n0 | n1
            if p & n:
                choice[k] += 1
                continue
            partial[k + 1] = (p, n, (x0 | x1) if (x0 and x1) else (x0 or x1), u0 | u1)
            if k + 1 < depth:
                k += 1
                continue
            _, _, x, u = partial[depth]
            key = (x, all_marks & ~u)
            if key not in seen and (compatible is None or compatible((p, n))):
                seen.add(key)
                yield self._state_id(self._reduce(x)), key[1], (p, n)
            choice[k] += 1


# --- automaton cache ------------------------------------------------------------------------

_CACHE_SIZE = 128
_automata: OrderedDict[tuple[Formula, bool], _Automaton] = OrderedDict()


def _automaton(formula: Formula, negate: bool) -> _Automaton:
    key = (formula, negate)
    aut = _automata.get(key)
    if aut is None:
        aut = _Automaton(formula, negate)
        _remember(formula, negate, aut)
    else:
        _automata.move_to_end(key)
    return aut


def _remember(formula: Formula, negate: bool, aut: _Automaton) -> None:
    key = (formula, negate)
    _automata[key] = aut
    _automata.move_to_end(key)
    if len(_automata) > _CACHE_SIZE:
        _automata.popitem(last=False)


def clear_caches() -> None:
    """Forget memoised automata (they are kept for the last few formulas). Only the speed of
    :func:`check_ltl` without ``max_work`` depends on them, never a result."""
    _automata.clear()


# --- trace steps ----------------------------------------------------------------------------

_patterns_cache: dict[int, list[int]] = {}


def _patterns(k: int) -> list[int]:
    """Bit-parallel truth tables: bit v of pattern j is bit j of valuation v (0 <= v < 2**k)."""
    pats = _patterns_cache.get(k)
    if pats is None:
        pats = []
        width = 1 << k
        for j in range(k):
            block = 1 << j
            pat = ((1 << block) - 1) << block  # ones in the upper half of a 2*block period
            # Repeat the period by doubling: a few big-integer operations instead of one per period.
            filled = 2 * block
            while filled < width:
                pat |= pat << filled
                filled *= 2
            pats.append(pat)
        _patterns_cache[k] = pats
    return pats


def _eval_mask(f: Formula, index: dict[str, int], pats: list[int], full: int, clock: _Clock = _NO_CLOCK) -> int:
    """The truth table of a temporal-free formula over the symbols of ``index`` (bit v: valuation v).
    Iterative, once per distinct node: steps nest as deep as their input. Each node costs the clock a unit
    per 4,096 bits of table, so a time-out stops a large step too."""
    masks: dict[int, int] = {}
    cost = 1 + (full.bit_length() >> 12)
    stack: list[tuple[Formula, bool]] = [(f, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in masks:
            continue
        op = node.op
        if node.children and not expanded:
            if op != "not" and op not in _BINARY_MASKS:
                raise ValueError(f"temporal operator {op!r} in a trace step")
            stack.append((node, True))
            stack.extend((child, False) for child in node.children)
            continue
        clock.charge(cost)
        if op == "ap":
            mask = pats[index[node.name]]  # type: ignore[attr-defined]
        elif op == "true" or op == "false":
            mask = full if op == "true" else 0
        elif op == "not":
            mask = full & ~masks[id(node.children[0])]
        else:
            mask = _BINARY_MASKS[op](masks[id(node.children[0])], masks[id(node.children[1])], full)
        masks[id(node)] = mask
    return masks[id(f)]


_BINARY_MASKS: dict[str, Callable[[int, int, int], int]] = {
    "and": lambda a, b, full: a & b,
    "or": lambda a, b, full: a | b,
    "equiv": lambda a, b, full: full & ~(a ^ b),
    "xor": lambda a, b, full: a ^ b,
}


_FALSE_CUBE = (frozenset({"0"}), frozenset({"0"}))  # sentinel: the step contains the constant 0


def _cube_of(f: Formula) -> tuple[frozenset[str], frozenset[str]] | None:
    """``(positive names, negative names)`` if ``f`` is a conjunction of literals/constants."""
    pos: set[str] = set()
    negs: set[str] = set()
    stack = [f]
    while stack:
        node = stack.pop()
        op = node.op
        if op == "and":
            stack.extend(node.children)
        elif op == "ap":
            pos.add(node.name)  # type: ignore[attr-defined]
        elif op == "not" and node.children[0].op == "ap":
            negs.add(node.children[0].name)  # type: ignore[attr-defined]
        elif op == "false":
            return _FALSE_CUBE
        elif op != "true":
            return None
    return frozenset(pos), frozenset(negs)


class _Step:
    """Compatibility test between transition cubes and one trace step formula."""

    __slots__ = ("kind", "pos", "neg", "syms", "mask")

    def __init__(self, step: Formula, sym_index: dict[str, int], clock: _Clock = _NO_CLOCK) -> None:
        self.pos = self.neg = 0
        self.syms: list[tuple[int, int]] = []
        self.mask = 0
        cube = _cube_of(step)
        if cube is _FALSE_CUBE:
            self.kind = "false"
            return
        if cube is not None:
            pos, negs = cube
            if pos & negs:
                self.kind = "false"
                return
            # Literals on symbols absent from the formula are irrelevant once consistent.
            for name in pos:
                if name in sym_index:
                    self.pos |= 1 << sym_index[name]
            for name in negs:
                if name in sym_index:
                    self.neg |= 1 << sym_index[name]
            self.kind = "cube" if (self.pos or self.neg) else "true"
            return
        names: list[str] = []
        for node in step.distinct_nodes():
            if isinstance(node, Atom) and node.name not in names:
                names.append(node.name)
        if len(names) > _MAX_STEP_SYMBOLS:
            raise ValueError(f"a trace step over {len(names)} symbols is too large to check")
        k = len(names)
        full = (1 << (1 << k)) - 1
        pats = _patterns(k)
        mask = _eval_mask(step, {name: j for j, name in enumerate(names)}, pats, full, clock)
        if mask == 0:
            self.kind = "false"
        elif mask == full:
            self.kind = "true"
        else:
            self.kind = "mask"
            self.mask = mask
            # Symbols absent from the formula stay free: projecting them away is exact because
            # the letters of different positions are chosen independently.
            self.syms = [(pats[j], sym_index[name]) for j, name in enumerate(names) if name in sym_index]
            if not self.syms:
                self.kind = "true"

    def compatible(self, cube: tuple[int, int]) -> bool:
        kind = self.kind
        if kind == "true":
            return True
        if kind == "cube":
            return not (cube[0] & self.neg or cube[1] & self.pos)
        if kind == "false":
            return False
        pos, negs = cube
        allowed = self.mask
        for pat, idx in self.syms:
            if pos >> idx & 1:
                allowed &= pat
            elif negs >> idx & 1:
                allowed &= ~pat
            else:
                continue
            if not allowed:
                return False
        return allowed != 0


# --- emptiness check (Couvreur's SCC algorithm) ---------------------------------------------


def _accepting_scc(init: int, successors, all_marks: int, clock: _Clock) -> tuple[list[int], dict[int, int]] | None:
    """First reachable SCC whose internal edges carry every mark; returns (its nodes, dfs index)."""
    index: dict[int, int] = {init: 1}
    live = [init]
    roots = [[1, 0]]
    arcs = [0]
    todo = [(init, iter(successors(init)))]
    count = 1
    tick = clock.tick
    while todo:
        frame = todo[-1]
        edge = next(frame[1], None)
        if edge is not None:
            target, marks = edge
            tick()
            h = index.get(target)
            if h is None:
                count += 1
                index[target] = count
                live.append(target)
                roots.append([count, 0])
                arcs.append(marks)
                todo.append((target, iter(successors(target))))
            elif h > 0:  # closes a cycle: merge the SCCs on the root stack down to the target
                acc = marks
                while h < roots[-1][0]:
                    root = roots.pop()
                    acc |= root[1] | arcs.pop()
                top = roots[-1]
                top[1] |= acc
                if top[1] == all_marks:
                    first = top[0]
                    return [node for node in live if index[node] >= first], index
            continue
        todo.pop()
        node = frame[0]
        if index[node] == roots[-1][0]:  # root of a finished SCC: retire it
            roots.pop()
            arcs.pop()
            while True:
                done = live.pop()
                index[done] = 0
                if done == node:
                    break
    return None


# --- public API -----------------------------------------------------------------------------


def _as_formula(formula: Formula | str, notation: str, symbols: SymbolRule | Iterable[str] | None) -> Formula:
    if isinstance(formula, Formula):
        return formula
    return parse_ltl(formula, notation, symbols)


def _as_trace(trace: Trace | str, notation: str, symbols: SymbolRule | Iterable[str] | None) -> Trace:
    if isinstance(trace, Trace):
        return trace
    return parse_trace(trace, notation, symbols)


def _deadline(timeout: float | None, start: float) -> float | None:
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError("timeout must be non-negative")
    return start + timeout


def _check_budget(max_work: int | None) -> None:
    if max_work is not None and (isinstance(max_work, bool) or not isinstance(max_work, int) or max_work < 0):
        raise ValueError(f"max_work must be a non-negative integer or None, got {max_work!r}")
