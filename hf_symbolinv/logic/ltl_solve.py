"""LTL solving: an accepting lasso of the automaton of ``f``, then minimised (fewer literals, shorter
steps) with the checker verifying every candidate."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..utils.symbols import SymbolRule
from .formula import Atom, Formula, Not, Trace, conjunction
from .ltl_check import _trace_has_counterexample
from .ltl_core import (
    _LAZY_SOLVE,
    _NO_CLOCK,
    LTLSolveResult,
    _accepting_scc,
    _as_formula,
    _Automaton,
    _check_budget,
    _Clock,
    _deadline,
    _NoGC,
    _OutOfWork,
    _remember,
    _Timeout,
)


def _cube_formula(cube: tuple[int, int], symbols: list[str]) -> Formula:
    pos, negs = cube
    literals: list[Formula] = []
    for idx, name in enumerate(symbols):
        if pos >> idx & 1:
            literals.append(Atom(name))
        elif negs >> idx & 1:
            literals.append(Not(Atom(name)))
    return conjunction(literals)


_Hop = tuple[int, tuple[int, int], int]  # (target state, cube, marks)
_Edges = Callable[[int], list[tuple[int, int, tuple[int, int]]]]  # state -> (target, marks, cube)


def _bfs(edges: _Edges, start: int, allowed: set[int], goal, clock: _Clock, score=None) -> list[_Hop] | None:
    """Shortest path from ``start`` (at least one edge) ending with an edge accepted by ``goal``.

    ``goal(target, marks)`` accepts an edge; only states in ``allowed`` are visited; among the
    goal edges leaving the first state that has one, ``score(marks)`` picks the best.
    """
    parent: dict[int, tuple[int, tuple[int, int], int]] = {}
    queue = deque([start])
    seen = {start}
    tick = clock.tick
    while queue:
        u = queue.popleft()
        best: _Hop | None = None
        for v, marks, cube in edges(u):
            tick()
            if v not in allowed:
                continue
            if goal(v, marks) and (best is None or (score is not None and score(marks) > score(best[2]))):
                best = (v, cube, marks)
            if v not in seen:
                seen.add(v)
                parent[v] = (u, cube, marks)
                queue.append(v)
        if best is not None:
            path = [best]
            node = u
            while node != start:
                prev, cube, marks = parent[node]
                path.append((node, cube, marks))
                node = prev
            path.reverse()
            return path
    return None


def _lasso(
    edges: _Edges, init: int, scc: list[int], explored: Iterable[int], all_marks: int, clock: _Clock
) -> tuple[list[_Hop], list[_Hop]]:
    """Shortest prefix to the accepting SCC, then a cycle in it through every mark (greedy)."""
    members = set(scc)
    prefix: list[_Hop] = []
    entry = init
    if init not in members:
        prefix = _bfs(edges, init, set(explored), lambda v, m: v in members, clock) or []
        entry = prefix[-1][0]
    cycle: list[_Hop] = []
    missing = all_marks
    current = entry
    while missing:
        want = missing
        part = _bfs(
            edges,
            current,
            members,
            lambda v, m, w=want: bool(m & w),
            clock,
            lambda m, w=want: (m & w).bit_count(),
        )
        assert part is not None, "an accepting SCC has edges carrying every mark"
        for _, _, marks in part:
            missing &= ~marks
        cycle.extend(part)
        current = part[-1][0]
    if current != entry or not cycle:
        back = _bfs(edges, current, members, lambda v, m: v == entry, clock)
        assert back is not None
        cycle.extend(back)
    return prefix, cycle


def _roll(prefix: list, cycle: list) -> tuple[list, list]:
    """Same lasso language, fewer steps: shrink a periodic cycle, roll the prefix into it."""

    def shrink(cycle: list) -> list:
        n = len(cycle)
        for period in range(1, n):
            if n % period == 0 and all(cycle[i] == cycle[i % period] for i in range(n)):
                return cycle[:period]
        return cycle

    prefix, cycle = list(prefix), shrink(list(cycle))
    while prefix and prefix[-1] == cycle[-1]:  # u x (v x)^w = u (x v)^w
        prefix.pop()
        cycle = [cycle[-1]] + cycle[:-1]
    return prefix, shrink(cycle)


def simplify_trace(trace: Trace) -> Trace:
    """Same language, shorter text: roll the prefix into the cycle and shrink periodic cycles."""
    prefix, cycle = _roll(trace.prefix, trace.cycle)
    return Trace(prefix, cycle)


_MINIMIZE_TICKS = 100_000  # deterministic work budget of the trace minimisation


def _minimize(
    aut: _Automaton, symbols: list[str], prefix: list[tuple[int, int]], cycle: list[tuple[int, int]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Greedily drop steps, then literals, while the lasso still satisfies the formula.

    ``aut`` is the automaton of the negated formula, with the call's clock. Every candidate is
    verified by the exact checker and ``prefix``/``cycle`` are only ever rebound to a verified
    candidate (never mutated in place), so when the clock or the work budget stops a check half-way
    the lasso returned is the last verified one (or the search's own lasso, sound by construction).
    """

    def holds(prefix: list[tuple[int, int]], cycle: list[tuple[int, int]]) -> bool:
        return not _trace_has_counterexample(aut, _cube_trace(prefix, cycle, symbols))

    try:
        i = 0
        while i < len(prefix):  # shorter prefixes first
            candidate = prefix[:i] + prefix[i + 1 :]
            if holds(candidate, cycle):
                prefix = candidate
            else:
                i += 1
        i = 0
        while len(cycle) > 1 and i < len(cycle):
            candidate = cycle[:i] + cycle[i + 1 :]
            if holds(prefix, candidate):
                cycle = candidate
            else:
                i += 1
        for in_cycle in (False, True):
            for i in range(len(cycle if in_cycle else prefix)):
                for idx in range(len(symbols)):
                    part = cycle if in_cycle else prefix
                    pos, negs = part[i]
                    bit = 1 << idx
                    if not (pos | negs) & bit:
                        continue
                    candidate = part[:i] + [(pos & ~bit, negs & ~bit)] + part[i + 1 :]
                    trial = (prefix, candidate) if in_cycle else (candidate, cycle)
                    if holds(*trial):
                        prefix, cycle = trial
    except (_Timeout, _OutOfWork):
        pass  # keep the last verified lasso
    return prefix, cycle


def _cube_trace(prefix: list[tuple[int, int]], cycle: list[tuple[int, int]], symbols: list[str]) -> Trace:
    return Trace([_cube_formula(c, symbols) for c in prefix], [_cube_formula(c, symbols) for c in cycle])


def solve_ltl(
    formula: Formula | str,
    timeout: float | None = None,
    backend: str = "native",
    notation: str = "polish",
    symbols: SymbolRule | Iterable[str] | None = None,
    minimize: bool = True,
    max_work: int | None = None,
) -> LTLSolveResult:
    """A satisfying symbolic lasso for ``formula``, or ``unsat``, or ``timeout``.

    Steps are conjunctions of literals over the formula's symbols in order of first appearance
    (symbols the step does not constrain are left out; ``1`` is a free step). With ``minimize``
    the lasso found is then shortened greedily (steps, then literals), each candidate verified by
    the exact checker, within a fixed work budget. Everything depends only on the formula's
    structure, so renaming the formula renames the trace the same way, and results are
    reproducible: the solver builds its automata afresh on every call, so the result does not
    depend on what was solved or checked before.

    ``timeout`` is wall-clock seconds; ``max_work`` is a deterministic budget in work units (see
    :func:`check_ltl`) for the whole call. Either one running out during the search gives
    ``timeout``; running out during the minimisation gives the lasso minimised so far (every
    returned lasso satisfies the formula). With ``max_work`` and no ``timeout`` the result is a
    function of ``(formula, max_work)`` alone, the same on every machine and in every process.
    """
    start = time.perf_counter()
    _check_budget(max_work)
    if backend == "spot":
        if max_work is not None:
            raise ValueError("max_work is only supported by the native backend")
        from .spot_backend import spot_solve_ltl

        return spot_solve_ltl(_as_formula(formula, notation, symbols), timeout)
    if backend != "native":
        raise ValueError(f"unknown backend {backend!r}; choose 'native' or 'spot'")
    f = _as_formula(formula, notation, symbols)
    deadline = _deadline(timeout, start)
    clock = _Clock(deadline, max_work)
    # A fresh automaton, not the cached one: how much is already expanded changes the work counted
    # (so where a budget runs out), and the solver's output must not depend on earlier calls.
    aut = _Automaton(f, negate=False)
    with _NoGC():
        aut.clock = clock
        try:
            if aut.init is None:
                return LTLSolveResult("unsat")
            # Edges the search has examined, per state: the lasso is cut from these only, so a
            # lazily expanded state is never expanded in full.
            examined: dict[int, list[tuple[int, int, tuple[int, int]]]] = {}
            transitions = aut.transitions

            def successors(sid: int) -> Iterator[tuple[int, int]]:
                seen = examined.setdefault(sid, [])
                if aut.trans[sid] is not None or aut.product_estimate(sid, _LAZY_SOLVE) <= _LAZY_SOLVE:
                    edges: Iterable = ((nsid, marks, cubes[0]) for nsid, marks, cubes in transitions(sid))
                else:
                    edges = aut.lazy_transitions(sid)
                for edge in edges:
                    seen.append(edge)
                    yield edge[0], edge[1]

            found = _accepting_scc(aut.init, successors, aut.all_marks, clock)
            if found is None:
                return LTLSolveResult("unsat")
            scc, index = found
            prefix, cycle = _lasso(lambda u: examined.get(u, []), aut.init, scc, index.keys(), aut.all_marks, clock)
        except (_Timeout, _OutOfWork):
            return LTLSolveResult("timeout")
        finally:
            aut.clock = _NO_CLOCK
        symbols_list = aut.symbols
        prefix_cubes, cycle_cubes = _roll([cube for _, cube, _ in prefix], [cube for _, cube, _ in cycle])
        if minimize:
            budget = _MINIMIZE_TICKS if max_work is None else max(0, min(_MINIMIZE_TICKS, max_work - clock.ticks))
            negated = _Automaton(f, negate=True)  # fresh, for the same reason as above
            negated.clock = _Clock(deadline, budget)
            try:
                prefix_cubes, cycle_cubes = _minimize(negated, symbols_list, prefix_cubes, cycle_cubes)
            finally:
                negated.clock = _NO_CLOCK
            _remember(f, True, negated)  # written, never read by the solver: speeds up a later check
        trace = _cube_trace(prefix_cubes, cycle_cubes, symbols_list)
    return LTLSolveResult("sat", simplify_trace(trace))
