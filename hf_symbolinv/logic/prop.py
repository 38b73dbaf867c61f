"""Propositional checking and solving, built on py-aiger and py-aiger-sat.

Formulas are written as AIGER ASCII text and parsed by py-aiger (building expressions with the
``&``/``^`` operators of py-aiger is ~100x slower), then handed to one incremental py-aiger-sat
solver per formula. The circuit's output is ``phi xor sel`` for a selector input ``sel``: under
the assumption ``sel = 0`` plus a partial assignment the solver decides whether some completion
satisfies ``phi``; under ``sel = 1`` whether the assignment forces ``phi`` (unsat means every
completion satisfies ``phi``). Only these yes/no answers are used, never the solver's models or
unsat cores: those depend on the solver's history and on py-aiger's variable order (which follows
Python's per-process string hashing), and ``solve_prop`` must be canonical.

``check_assignment`` and ``solve_prop`` work exactly on bit-parallel truth tables up to 16 free
symbols (no SAT solver needed) and fall back to the SAT solver beyond.
"""

from __future__ import annotations

import atexit
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..utils.symbols import SymbolRule
from .formula import Assignment, Atom, Formula
from .ltl_core import _NoGC, _patterns  # truth-table patterns and GC pause, shared with the LTL engine
from .notation import parse_assignment, parse_prop

__all__ = ["PropSolveResult", "check_assignment", "solve_prop", "evaluate_prop", "clear_prop_caches"]

_TABLE_LIMIT = 16  # unassigned symbols up to which check_assignment uses a truth table
_SELECTOR = "sel"


@dataclass(frozen=True)
class PropSolveResult:
    """Result of :func:`solve_prop`.

    ``status`` is ``"sat"`` or ``"unsat"``; ``assignment`` is a minimal partial assignment
    (no literal can be dropped), sorted by symbol name; ``valid`` is true when the formula holds
    under the empty assignment (a tautology; the dataset builder drops those).
    """

    status: str
    assignment: Assignment | None = field(default=None)

    @property
    def sat(self) -> bool:
        return self.status == "sat"

    @property
    def valid(self) -> bool:
        return self.status == "sat" and not self.assignment

    def __bool__(self) -> bool:
        return self.sat


def _symbols_in_order(f: Formula) -> list[str]:
    seen: dict[str, None] = {}
    for node in f.distinct_nodes():
        if isinstance(node, Atom):
            seen.setdefault(node.name, None)
    return list(seen)


def _aiger_text(f: Formula, names: list[str]) -> tuple[str | None, bool | None]:
    """AIGER ASCII for ``f xor sel``; or ``(None, value)`` when ``f`` folds to a constant."""
    n = len(names)
    index = {name: 2 * (k + 1) for k, name in enumerate(names)}
    sel = 2 * (n + 1)
    next_var = n + 2
    gates: list[tuple[int, int, int]] = []
    table: dict[tuple[int, int], int] = {}

    def land(a: int, b: int) -> int:
        nonlocal next_var
        if a == 0 or b == 0 or a == b ^ 1:
            return 0
        if a == 1:
            return b
        if b == 1 or a == b:
            return a
        key = (a, b) if a < b else (b, a)
        lit = table.get(key)
        if lit is None:
            lit = 2 * next_var
            next_var += 1
            table[key] = lit
            gates.append((lit, key[1], key[0]))
        return lit

    def lxor(a: int, b: int) -> int:
        return land(land(a, b ^ 1) ^ 1, land(a ^ 1, b) ^ 1) ^ 1

    # Post-order over the tree with an explicit stack (no recursion limit).
    lits: dict[int, int] = {}
    stack: list[tuple[Formula, bool]] = [(f, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in lits:
            continue
        op = node.op
        if op == "ap":
            lits[key] = index[node.name]  # type: ignore[attr-defined]
        elif op == "true":
            lits[key] = 1
        elif op == "false":
            lits[key] = 0
        elif not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children)
        else:
            kids = [lits[id(c)] for c in node.children]
            if op == "not":
                lits[key] = kids[0] ^ 1
            elif op == "and":
                lits[key] = land(kids[0], kids[1])
            elif op == "or":
                lits[key] = land(kids[0] ^ 1, kids[1] ^ 1) ^ 1
            elif op == "xor":
                lits[key] = lxor(kids[0], kids[1])
            elif op == "equiv":
                lits[key] = lxor(kids[0], kids[1]) ^ 1
            else:
                raise ValueError(f"temporal operator {op!r} in a propositional formula")
    out = lits[id(f)]
    if out in (0, 1):
        return None, bool(out)
    out = lxor(out, sel)
    lines = [f"aag {next_var - 1} {n + 1} 0 1 {len(gates)}"]
    lines.extend(str(2 * (k + 1)) for k in range(n + 1))
    lines.append(str(out))
    lines.extend(f"{lhs} {r0} {r1}" for lhs, r0, r1 in gates)
    lines.extend(f"i{k} x{k}" for k in range(n))
    lines.append(f"i{n} {_SELECTOR}")
    lines.append("o0 out")
    return "\n".join(lines) + "\n", None


class _PropSolver:
    """Incremental SAT solver for one formula (see the module docstring)."""

    def __init__(self, f: Formula) -> None:
        import aiger  # imported lazily: only the SAT route needs them
        import aiger_sat

        self.names = _symbols_in_order(f)
        self.internal = {name: f"x{k}" for k, name in enumerate(self.names)}
        self.external = {v: k for k, v in self.internal.items()}
        text, constant = _aiger_text(f, self.names)
        self.constant = constant
        self.solver = None
        if text is not None:
            self.solver = aiger_sat.SolverWrapper()
            self.solver.add_expr(aiger.BoolExpr(aiger.parse(text)))

    def _assume(self, assignment: Mapping[str, bool], selector: bool) -> dict[str, bool]:
        assumptions = {self.internal[name]: bool(value) for name, value in assignment.items()}
        assumptions[_SELECTOR] = selector
        return assumptions

    def satisfiable(self, assignment: Mapping[str, bool]) -> bool:
        """Does some completion of ``assignment`` satisfy the formula?"""
        if self.constant is not None:
            return self.constant
        assert self.solver is not None
        return bool(self.solver.is_sat(assumptions=self._assume(assignment, False)))

    def close(self) -> None:
        """Free the native solver now (pysat's finaliser fails if it runs at interpreter exit)."""
        if self.solver is not None:
            self.solver.solver.delete()
            self.solver = None

    def forces(self, assignment: Mapping[str, bool]) -> bool:
        """Does ``assignment`` make the formula true for every completion?"""
        if self.constant is not None:
            return self.constant
        assert self.solver is not None
        return not self.solver.is_sat(assumptions=self._assume(assignment, True))


_CACHE_SIZE = 64
_solvers: OrderedDict[Formula, _PropSolver] = OrderedDict()


def _solver_for(f: Formula) -> _PropSolver:
    solver = _solvers.get(f)
    if solver is None:
        solver = _solvers[f] = _PropSolver(f)
        if len(_solvers) > _CACHE_SIZE:
            _solvers.popitem(last=False)[1].close()
    else:
        _solvers.move_to_end(f)
    return solver


@atexit.register
def clear_prop_caches() -> None:
    """Free the cached SAT solvers."""
    while _solvers:
        _solvers.popitem()[1].close()


def _as_prop(formula: Formula | str, notation: str, symbols: SymbolRule | Iterable[str] | None) -> Formula:
    return formula if isinstance(formula, Formula) else parse_prop(formula, notation, symbols)


def solve_prop(
    formula: Formula | str,
    notation: str = "polish",
    symbols: SymbolRule | Iterable[str] | None = None,
    minimal: bool = True,
) -> PropSolveResult:
    """The canonical minimal satisfying partial assignment, or ``unsat``; ``result.valid`` flags
    tautologies. ``minimal=False``: the first model before its literals are dropped (below), an answer
    written one decision at a time.

    Canonical: a function of the formula alone (not of the process, its string hashing or what was
    solved before), and renaming the formula's symbols renames the assignment the same way. Over the
    symbols in order of first appearance: the first model in the order "false before true" (each
    symbol set to 0 if some completion then still satisfies the formula, else to 1; it stops as
    soon as the partial model forces the formula), then literals dropped in that order while the
    rest still forces it. One pass gives a minimal assignment: a literal needed with more literals
    assigned is needed with fewer. Every step is an exact decision (a truth table up to 16 symbols,
    else the SAT solver's yes/no answers, never its models or cores, which vary between runs).
    """
    f = _as_prop(formula, notation, symbols)
    names = _symbols_in_order(f)
    with _NoGC():
        if len(names) <= _TABLE_LIMIT:
            return _solve_prop_table(f, names, minimal)
        return _solve_prop_sat(f, names, minimal)


def _solve_prop_table(f: Formula, names: list[str], minimal: bool = True) -> PropSolveResult:
    """:func:`solve_prop` on one truth table of ``f``: every decision is a mask operation."""
    k = len(names)
    full = (1 << (1 << k)) - 1
    pats = _patterns(k)
    mask = _truth_mask(f, {}, {name: j for j, name in enumerate(names)}, pats, full)
    if mask == 0:
        return PropSolveResult("unsat")
    model: Assignment = {}
    cube = full  # valuations that agree with the partial model
    if mask != full:
        for j, name in enumerate(names):
            low = cube & ~pats[j]
            if mask & low:  # some completion with name = 0 satisfies the formula
                model[name], cube = False, low
            else:
                model[name], cube = True, cube & pats[j]
            if mask & cube == cube:
                break  # forced: the other symbols stay unassigned

    index = {name: j for j, name in enumerate(names)}

    def forces(assignment: Assignment) -> bool:
        sub = full
        for name, value in assignment.items():
            j = index[name]
            sub &= pats[j] if value else ~pats[j]
        return mask & sub == sub

    return PropSolveResult("sat", _answer(model, names, forces, minimal))


def _solve_prop_sat(f: Formula, names: list[str], minimal: bool = True) -> PropSolveResult:
    """:func:`solve_prop` with the incremental SAT solver, asking only yes/no questions."""
    solver = _solver_for(f)
    if solver.constant is not None:
        return PropSolveResult("sat", {}) if solver.constant else PropSolveResult("unsat")
    if not solver.satisfiable({}):
        return PropSolveResult("unsat")
    model: Assignment = {}
    if not solver.forces({}):
        for name in names:
            trial = {**model, name: False}
            model = trial if solver.satisfiable(trial) else {**model, name: True}
            if solver.forces(model):
                break
    return PropSolveResult("sat", _answer(model, names, solver.forces, minimal))


def _answer(model: Assignment, names: list[str], forces: Callable[[Assignment], bool], minimal: bool) -> Assignment:
    """The first model as :func:`solve_prop` answers it, sorted: with ``minimal``, literals dropped in order of
    first appearance while the rest forces the formula."""
    current = dict(model)
    for name in names if minimal else ():
        if name in current:
            trial = {k: v for k, v in current.items() if k != name}
            if forces(trial):
                current = trial
    return dict(sorted(current.items()))


def _truth_mask(f: Formula, fixed: Mapping[str, bool], free: dict[str, int], pats: list[int], full: int) -> int:
    """Bit-parallel truth table of ``f`` over the ``free`` symbols, others fixed; iterative."""
    values: dict[int, int] = {}
    stack: list[tuple[Formula, bool]] = [(f, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in values:
            continue
        op = node.op
        if op == "ap":
            name = node.name  # type: ignore[attr-defined]
            values[key] = (full if fixed[name] else 0) if name in fixed else pats[free[name]]
        elif op == "true":
            values[key] = full
        elif op == "false":
            values[key] = 0
        elif not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children)
        else:
            kids = [values[id(c)] for c in node.children]
            if op == "not":
                values[key] = full & ~kids[0]
            elif op == "and":
                values[key] = kids[0] & kids[1]
            elif op == "or":
                values[key] = kids[0] | kids[1]
            elif op == "xor":
                values[key] = kids[0] ^ kids[1]
            elif op == "equiv":
                values[key] = full & ~(kids[0] ^ kids[1])
            else:
                raise ValueError(f"temporal operator {op!r} in a propositional formula")
    return values[id(f)]


def evaluate_prop(formula: Formula | str, assignment: Mapping[str, bool]) -> bool:
    """Truth value of a formula under a total assignment of its symbols."""
    f = _as_prop(formula, "polish", None)
    return bool(_truth_mask(f, assignment, {}, [], 1))


def check_assignment(
    formula: Formula | str,
    assignment: Mapping[str, bool] | str,
    notation: str = "polish",
    symbols: SymbolRule | Iterable[str] | None = None,
    method: str = "auto",
) -> bool:
    """True iff every completion of the partial ``assignment`` satisfies ``formula``.

    Assigning a symbol that does not occur in the formula makes the answer False. ``method`` is
    ``"table"`` (exact truth table of the residual formula), ``"sat"`` (py-aiger-sat with
    assumptions) or ``"auto"`` (table up to 16 unassigned symbols).
    """
    f = _as_prop(formula, notation, symbols)
    if isinstance(assignment, str):
        assignment = parse_assignment(assignment, symbols)
    for name, value in assignment.items():
        # 0/1 are booleans in the task's notation; anything else ("no", 2, None) is a caller's error,
        # not a truth value that Python's bool() would silently accept.
        if not isinstance(value, bool) and value not in (0, 1):
            raise ValueError(f"assignment of {name!r} is {value!r}, not a truth value (True/False or 1/0)")
    names = _symbols_in_order(f)
    present = set(names)
    if any(name not in present for name in assignment):
        return False
    free = [name for name in names if name not in assignment]
    if method == "auto":
        method = "table" if len(free) <= _TABLE_LIMIT else "sat"
    if method == "table":
        k = len(free)
        full = (1 << (1 << k)) - 1
        mask = _truth_mask(f, assignment, {name: j for j, name in enumerate(free)}, _patterns(k), full)
        return mask == full
    if method == "sat":
        with _NoGC():
            return _solver_for(f).forces(assignment)
    raise ValueError(f"unknown method {method!r}; choose 'auto', 'table' or 'sat'")
