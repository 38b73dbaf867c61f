"""PropRandom35 ("prop-35") and its variants, regenerated with the package's logic engine.

Configurations mirror the LTL ones (:mod:`.ltl_random35`): ``prop-35``, ``prop-35-10sym``,
``prop-35-supp``, ``prop-35-renamed``, ``prop-35-reduced`` and ``prop-heatmap``.

Formulas are random trees (Spot's ``randltl`` algorithm) with the priorities false = true = not =
and = or = 1, equiv = xor = 0.5, trivial identities applied while building. The target is a
*minimal* satisfying partial assignment (no literal can be dropped), sorted by symbol name
(``a1b0``), verified by the checker (every completion satisfies the formula); unsatisfiable
formulas and tautologies (valid under the empty assignment) are dropped. There are no samples over
0 symbols (a constant formula is valid or unsatisfiable), so the ``supp`` variant adds 1-symbol
samples only and the grid starts at 1 symbol.

The assignment is the engine's canonical one (:func:`~hf_symbolinv.logic.solve_prop`), which depends
on the formula alone, not on the worker process or what it solved before.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import datasets

from hf_symbolinv.logic import (
    Assignment,
    Formula,
    check_assignment,
    format_assignment,
    format_prop,
    parse_assignment,
    parse_prop,
    random_prop_formula,
    random_prop_formula_of_at_least,
    solve_prop,
)

from .logic_tasks import LogicTask, build_random35, random35_configs
from .params import BuildOptions, ConfigSpec

__all__ = ["CONFIGS", "PROP_TASK", "build_prop_random35", "minimal_assignment"]


def minimal_assignment(formula: Formula) -> tuple[str, Assignment | None]:
    """``("sat", assignment)`` with the engine's canonical minimal satisfying partial assignment
    (:func:`~hf_symbolinv.logic.solve_prop`: the first model with false before true over the symbols
    in order of first appearance, then literals dropped in that order while the rest forces the
    formula), ``("valid", {})`` for a tautology or ``("unsat", None)``; a function of the formula
    alone."""
    result = solve_prop(formula)
    if result.valid:
        return "valid", {}
    return result.status, result.assignment


def _draw(rng: random.Random, size: int, names: Sequence[str]) -> Formula:
    return random_prop_formula(rng, size, list(names), simplify=True)


def _draw_at_least(rng: random.Random, size: int, names: Sequence[str], at_least: int) -> Formula | None:
    return random_prop_formula_of_at_least(rng, size, at_least, list(names))


def _solve(formula: Formula, timeout: float | None) -> tuple[str, Assignment | None]:
    return minimal_assignment(formula)  # truth tables (SAT beyond 16 symbols): no time-out needed


def _check(formula: Formula, assignment: Assignment, timeout: float | None) -> str:
    return "holds" if check_assignment(formula, assignment) else "fails"


def _format_formula(formula: Formula) -> str:
    return format_prop(formula)  # the model vocabulary: = for <->, ^ for xor


def _parse_formula(text: str) -> Formula:
    return parse_prop(text)  # also reads the file spellings <-> and xor


def _format_assignment(assignment: Assignment) -> str:
    return format_assignment(assignment)


def _parse_assignment(text: str) -> Assignment:
    return parse_assignment(text)


PROP_TASK = LogicTask(
    name="prop",
    draw=_draw,
    format_formula=_format_formula,
    parse_formula=_parse_formula,
    solve=_solve,
    check=_check,
    format_target=_format_assignment,
    parse_target=_parse_assignment,
    drop_reasons=("unsat", "valid"),
    min_symbols=1,
    target_name="assignment",
    draw_at_least=_draw_at_least,
)

_ABOUT = """\
Formulas: random trees drawn with the algorithm of Spot's `randltl`, with the priorities
false = true = not = and = or = 1, equiv = xor = 0.5 (implies = 0), the symbol priority equal to
the number of symbols, and the trivial identities applied while building (`!!f = f`, `f & 1 = f`,
`f <-> 1 = f`, ...), so the final size may be below the drawn one. The formula is written in the
model vocabulary: Polish notation with `=` for <-> and `^` for xor. Target (`target`): a minimal
satisfying partial assignment sorted by symbol name, e.g. `a1c0` (no literal can be dropped),
chosen canonically (first model with false before true over the symbols in order of first
appearance, then literals dropped in that order while the rest forces the formula), verified with
the package's checker: every completion of the assignment satisfies the formula. Unsatisfiable
formulas and tautologies (valid under the empty assignment) are dropped. No sample has 0 symbols:
a constant formula is valid or unsatisfiable."""

CONFIGS: dict[str, ConfigSpec] = random35_configs(
    "prop",
    {
        "35": "PropRandom35: propositional formulas of size <= 35 over 5 symbols with a minimal satisfying "
        "partial assignment, split 80/10/10.",
        "35-10sym": "PropRandom35 over 10 symbols (the full-vocabulary baseline's data), split 80/10/10.",
        "35-supp": "PropRandom35 with 1-symbol samples added to the training split (constant formulas, the "
        "0-symbol case, are never samples).",
        "35-renamed": "PropRandom35, perturbed: symbols renamed so that those of the assignment are a, b, c, ... "
        "in order, the formula's others following.",
        "35-reduced": "PropRandom35 with the training split reduced to its first 80k samples (of 1M).",
        "small": "Small formulas that a CPU can learn: size <= 20 over at most 3 symbols, the operators and targets "
        "of prop-35 (a minimal satisfying partial assignment), split 80/10/10.",
        "small-8sym": "Formulas of prop-small's sizes (<= 20) over up to 8 symbols, for testing only (one test split): "
        "symbol counts that prop-small never trains on.",
        "heatmap": "Propositional evaluation grid: symbol count 1..10 x formula size 1..50, at most 100 samples "
        "per cell, symbols compacted to a, b, c, ....",
    },
)


def build_prop_random35(
    config: str = "prop-35", out_dir: str | os.PathLike | None = None, options: BuildOptions | None = None
) -> datasets.DatasetDict:
    """Build a propositional configuration and return it as a ``DatasetDict`` (as
    :func:`~dataset_builders.ltl_random35.build_ltl_random35`; there is no time-out: ``options.timeout`` is refused)."""
    return build_random35(PROP_TASK, CONFIGS, _ABOUT, config, out_dir, options)
