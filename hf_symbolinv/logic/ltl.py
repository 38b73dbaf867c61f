"""Exact LTL trace checking and LTL solving in pure Python.

Route (our own implementation):

* The formula is put in negation normal form over ``& | X U R`` and literals, with hash-consed
  nodes and cheap simplifications (constant folding, flattening and de-duplication of ``&``/``|``,
  complementary literals, ``f U (f U g) = f U g``).
* An on-the-fly tableau turns a set of obligations into transitions of a transition-based
  generalised Büchi automaton (one acceptance mark per ``U`` subformula: a transition carries the
  mark unless it postpones that eventuality). Each node's disjunctive expansion is memoised; a
  transition is labelled by the cubes (conjunctions of literals, as bitmasks over the symbols)
  that lead to the same successor with the same marks. Two exact reductions keep it small:
  expansion terms subsumed by another term (fewer literals, obligations and postponements) are
  dropped, and successor sets lose obligations forced by other members (``g`` next to
  ``f R g``; ``f U g`` next to ``g``). States whose expansion would be a large product are
  expanded lazily, best successor first.
* Checking a trace (``check_ltl``): build the automaton of ``!f`` and explore its product with
  the symbolic lasso (positions of the lasso times automaton states; an edge exists when some
  cube is compatible with the step formula at that position), looking for a reachable
  accepting cycle with Couvreur's SCC algorithm. An accepting cycle is a concrete word of the
  trace that violates ``f``, so the verdict is FAILS; none means every word satisfies ``f``
  (language inclusion, as Spot's ``contains`` decides). Step compatibility is decided exactly on
  bitmask truth tables of the step formula, so any propositional step is accepted, and symbols
  that occur only in the trace are projected away exactly.
* Solving (``solve_ltl``): the same search on the automaton of ``f`` alone; an accepting SCC gives
  a lasso (shortest prefix by BFS, then a cycle through all acceptance marks), whose steps are the
  cubes of the transitions; every word of it has an accepting run, so it satisfies ``f``.

Time-outs are checked inside every loop that can grow (expansion products and the search), so a
call returns UNKNOWN/"timeout" close to its budget (the residual overshoot is the odd resize of a
large dict, a few milliseconds at worst). The same loops count work units, so ``max_work`` gives a
deterministic budget instead (see :func:`check_ltl`). The checker memoises automata for the last
formulas (LRU); the solver builds its own afresh on every call (and leaves the negated automaton
of its minimiser in the cache for a later check), so its output never depends on earlier calls.
The cyclic garbage collector is paused during a call (the engine creates no reference cycles).
"""

# The engine is split by concern: ltl_core (automaton, budgets, search), ltl_check (check_ltl) and ltl_solve
# (solve_ltl, simplify_trace). This module is their public face.
from .ltl_check import check_ltl
from .ltl_core import MAX_LTL_DEPTH, LTLSolveResult, Verdict, clear_caches
from .ltl_core import check_depth as check_ltl_depth
from .ltl_solve import simplify_trace, solve_ltl

__all__ = [
    "MAX_LTL_DEPTH",
    "Verdict",
    "LTLSolveResult",
    "check_ltl",
    "check_ltl_depth",
    "solve_ltl",
    "simplify_trace",
    "clear_caches",
]
