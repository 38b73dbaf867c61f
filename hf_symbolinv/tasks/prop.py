"""Propositional satisfiability: a formula in Polish notation -> a partial assignment that satisfies it."""

from __future__ import annotations

from .. import logic
from . import Judgement, Task, commuter, register_task, reprinter


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


def first_model(source: str, target: str) -> str:
    """The assignment training teaches for ``source``: a complete model found one decision at a time, every symbol
    in order of first appearance set to 0 if some completion then still satisfies the formula, else to 1
    (:func:`hf_symbolinv.logic.solve_prop` with ``minimal=False``, the symbols it leaves open set to 0, as the same
    rule sets them once the formula is forced).

    The order: datasets write assignments sorted by name (``a1b0``), an order that depends on the names, so a
    renaming-invariant model cannot know whether ``a`` or ``b`` comes first (``prop-small`` after 7,000 steps: 38%
    greedy validation correct with name-sorted targets, 47.5% in order of appearance); the order of first
    appearance follows any renaming, and the checker reads any order.

    The datasets' minimal assignment is shrunk after it is found: whether the first symbol belongs in it depends on
    the symbols after it, so a model writing it left to right must guess the whole answer before its first token
    (``prop-small``, 41% of the training targets differ from the first model). The solver's first model ends as
    soon as the formula is forced, so each token after a value is a second decision, whether every completion
    satisfies the formula; the complete model asks only the first question, one symbol at a time, and ends after
    the last symbol (``prop-small`` after 3,000 steps, 1,000 validation formulas, greedy: 59.2% correct with the
    first model, 64.5% with the complete one). It satisfies the formula like the minimal one (the checker judges
    both); only exact match with the dataset's minimal target falls. ``target`` is not read: the answer is the
    formula's.
    """
    formula = logic.parse_prop(source)  # parsed once for both
    result = logic.solve_prop(formula, minimal=False)
    if not result.sat:  # an unsatisfiable row keeps its target (the datasets have none)
        return target
    order = logic.symbols_of(formula, kind="prop")
    complete = {name: result.assignment.get(name, False) for name in order}
    return logic.format_assignment(complete, order=order)


def written_assignment(formula: logic.Formula) -> str | None:
    """The assignment the propositional datasets write for ``formula``: the engine's canonical minimal one, sorted by
    name (it follows the order in which the formula names its symbols); None for a tautology or an unsatisfiable
    formula, which the datasets drop."""
    result = logic.solve_prop(formula)
    return logic.format_assignment(result.assignment) if result.sat and not result.valid else None


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
        commuted=commuter(logic.parse_prop, logic.format_prop, written_assignment),
        in_own_names=reprinter(logic.parse_prop, logic.format_prop, logic.parse_assignment, logic.format_assignment),
        teaching_target=first_model,
        # A partial assignment names each symbol at most once: symbol and value per symbol, and the end.
        answer_budget=lambda source: 2 * len(logic.symbols_of(source, kind="prop")) + 1,
    )
)
