"""Propositional satisfiability: a formula in Polish notation -> a partial assignment that satisfies it."""

from __future__ import annotations

from .. import logic
from . import Judgement, Task, register_task, reprinter


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = 10.0) -> Judgement:
    """Correct iff the partial assignment makes the formula true whatever the other symbols. A source that does
    not parse raises ``LogicSyntaxError`` (the input's fault, not the answer's)."""
    formula = logic.parse_prop(source)
    try:
        assignment = logic.parse_assignment(prediction)
        correct = logic.check_assignment(formula, assignment)
        exact = reference is not None and assignment == logic.parse_assignment(reference)
        return Judgement(correct=correct, exact=exact)
    except (logic.LogicSyntaxError, ValueError):
        return Judgement(correct=False, exact=False, invalid=True)


def in_order_of_appearance(source: str, target: str) -> str:
    """The assignment ``target`` written with its symbols in the order they first appear in ``source``.

    Datasets write assignments sorted by name (``a1b0``), an order that depends on the names: a renaming-invariant
    model cannot know whether ``a`` or ``b`` comes first, and trained on it spends its loss on a guess (``prop-small``
    after 7,000 steps: 38% greedy validation correct with name-sorted targets, 47.5% with these). The order of first
    appearance follows any renaming; the checker reads both orders alike.
    """
    return logic.format_assignment(logic.parse_assignment(target), order=logic.symbols_of(source, kind="prop"))


TASK = register_task(
    Task(
        name="prop",
        vocabulary="prop",
        description="propositional satisfiability (formula in Polish notation -> a minimal satisfying partial "
        "assignment)",
        example="&a|!bc",
        intended_use="Research on neural SAT solving: proposing partial assignments that are then verified "
        "(`hf_symbolinv.logic.check_assignment`). Predictions are not guaranteed correct.",
        judge=judge,
        input_size=lambda source: logic.formula_size(source, kind="prop"),
        symbol_names=lambda source: logic.symbols_of(source, kind="prop"),
        in_own_names=reprinter(logic.parse_prop, logic.format_prop, logic.parse_assignment, logic.format_assignment),
        teaching_target=in_order_of_appearance,
        # A partial assignment names each symbol at most once: symbol and value per symbol, and the end.
        answer_budget=lambda source: 2 * len(logic.symbols_of(source, kind="prop")) + 1,
    )
)
