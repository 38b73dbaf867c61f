"""Exact LTL trace checking: the automaton of ``!f`` times the symbolic lasso, searched for an accepting
cycle (a word of the trace that violates ``f``)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from ..utils.symbols import SymbolRule
from .formula import Formula, Trace
from .ltl_core import (
    _LAZY_CHECK,
    _NO_CLOCK,
    Verdict,
    _accepting_scc,
    _as_formula,
    _as_trace,
    _Automaton,
    _automaton,
    _check_budget,
    _Clock,
    _deadline,
    _NoGC,
    _OutOfWork,
    _Step,
    _Timeout,
)


def _trace_has_counterexample(aut: _Automaton, trace: Trace) -> bool:
    """True iff some word of the trace is accepted by ``aut`` (the automaton of ``!f``)."""
    if aut.init is None:
        return False
    steps = trace.prefix + trace.cycle
    n_prefix, n_pos = len(trace.prefix), len(steps)
    classes: dict[Formula, int] = {}
    step_tests: list[_Step] = []
    cls = []
    for step in steps:
        c = classes.get(step)
        if c is None:
            c = classes[step] = len(step_tests)
            step_tests.append(_Step(step, aut.sym_index, aut.clock))
        cls.append(c)
    if any(step_tests[c].kind == "false" for c in cls):
        return False  # the trace describes no word at all: inclusion holds vacuously
    succ = [i + 1 for i in range(n_pos)]
    succ[-1] = n_prefix
    n_classes = len(step_tests)
    edge_cache: dict[int, list[tuple[int, int]]] = {}
    transitions = aut.transitions

    def successors(node: int) -> Iterable[tuple[int, int]]:
        sid, i = divmod(node, n_pos)
        c = cls[i]
        nxt = succ[i]
        if aut.trans[sid] is None and aut.product_estimate(sid, _LAZY_CHECK) > _LAZY_CHECK:
            test = step_tests[c]
            if test.kind == "cube":
                lazy = aut.lazy_transitions(sid, (test.pos, test.neg))
            else:
                lazy = aut.lazy_transitions(sid, compatible=None if test.kind == "true" else test.compatible)
            return ((nsid * n_pos + nxt, marks) for nsid, marks, _ in lazy)
        key = sid * n_classes + c
        edges = edge_cache.get(key)
        if edges is None:
            test = step_tests[c]
            if test.kind == "true":
                edges = [(nsid, marks) for nsid, marks, _ in transitions(sid)]
            else:
                compatible = test.compatible
                edges = [
                    (nsid, marks) for nsid, marks, cubes in transitions(sid) if any(compatible(cube) for cube in cubes)
                ]
            edge_cache[key] = edges
        return [(nsid * n_pos + nxt, marks) for nsid, marks in edges]

    return _accepting_scc(aut.init * n_pos, successors, aut.all_marks, aut.clock) is not None


def check_ltl(
    formula: Formula | str,
    trace: Trace | str,
    notation: str = "polish",
    timeout: float | None = None,
    backend: str = "native",
    symbols: SymbolRule | Iterable[str] | None = None,
    max_work: int | None = None,
) -> Verdict:
    """Does every concrete infinite word described by the symbolic lasso ``trace`` satisfy ``formula``?

    Strings are parsed in ``notation`` (malformed text raises :class:`LogicSyntaxError`).
    Returns :attr:`Verdict.UNKNOWN` when ``timeout`` seconds pass first, or when ``max_work`` work
    units are spent first. A trace whose steps admit no word at all (e.g. a step ``&a!a``) holds
    vacuously, as language inclusion does in Spot.

    Work units (``max_work``, also in :func:`solve_ltl`) count the engine's elementary steps: an
    automaton edge examined by the search, or a term formed, compared or sorted while expanding
    tableau states. They are counted exactly and do not depend on machine speed, load or process,
    so a budget gives the same outcome everywhere; CPython does very roughly 1,000-5,000 units per
    millisecond on one core (the low end on small formulas, where fixed costs dominate). The
    budget is looked at every 16 units (and after each bulk charge), so a call stops a few units
    past it. With ``max_work`` the checker uses a fresh automaton (how much of a memoised one is
    already expanded would change the count), so it forgoes the cache's speed-up.
    """
    start = time.perf_counter()
    _check_budget(max_work)
    if backend == "spot":
        if max_work is not None:
            raise ValueError("max_work is only supported by the native backend")
        from .spot_backend import spot_check_ltl

        f, t = _as_formula(formula, notation, symbols), _as_trace(trace, notation, symbols)
        return spot_check_ltl(f, t, timeout)
    if backend != "native":
        raise ValueError(f"unknown backend {backend!r}; choose 'native' or 'spot'")
    f = _as_formula(formula, notation, symbols)
    t = _as_trace(trace, notation, symbols)
    clock = _Clock(_deadline(timeout, start), max_work)
    aut = _automaton(f, negate=True) if max_work is None else _Automaton(f, negate=True)
    with _NoGC():
        aut.clock = clock
        try:
            found = _trace_has_counterexample(aut, t)
        except (_Timeout, _OutOfWork):
            return Verdict.UNKNOWN
        finally:
            aut.clock = _NO_CLOCK
    return Verdict.FAILS if found else Verdict.HOLDS
