"""LTL witness generation: a formula in Polish notation -> a symbolic lasso trace that satisfies it."""

from __future__ import annotations

from .. import logic
from . import Judgement, Task, commuter, register_task, reprinter


def describes_a_word(trace: logic.Trace) -> bool:
    """Whether some infinite word fits the symbolic lasso: every step (a propositional formula over the
    symbols) must be satisfiable. A step like ``0`` or ``&a!a`` fits no letter, and the lasso no word."""
    return all(logic.solve_prop(step).sat for step in trace.steps)


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = 10.0) -> Judgement:
    """Correct iff the predicted lasso describes at least one infinite word and every word it describes
    satisfies the formula (the exact checker). A lasso that describes no word (``{0}``) satisfies any
    formula vacuously; it is judged incorrect, or a model answering ``{0}`` to everything would score 100%.

    A source that does not parse (``LogicSyntaxError``) or nests deeper than the engine accepts (``ValueError``)
    raises: that is the input's fault, not the answer's, and must not be counted as an invalid answer."""
    formula = logic.parse_ltl(source)
    logic.check_ltl_depth(formula)
    try:
        trace = logic.parse_trace(prediction)
        if not describes_a_word(trace):
            return Judgement(correct=False, exact=False)
        verdict = logic.check_ltl(formula, trace, timeout=timeout)
        if verdict is logic.Verdict.UNKNOWN:
            return Judgement(correct=False, exact=False, unknown=True)
        exact = reference is not None and logic.traces_equal_up_to_commutativity(trace, reference)
        return Judgement(correct=bool(verdict), exact=exact)
    except (logic.LogicSyntaxError, ValueError):
        return Judgement(correct=False, exact=False, invalid=True)


#: The deterministic work budget (the engine's elementary steps) of the trace written for a rewritten formula: the
#: ltl-35 formulas take a few thousand; a formula that needs more keeps its row's trace.
WRITTEN_TRACE_WORK = 1_000_000


def written_trace(formula: logic.Formula) -> str | None:
    """The trace the LTL datasets write for ``formula``: the engine's solver, minimised (as the builders call it),
    within :data:`WRITTEN_TRACE_WORK` so that the answer is the same on every machine; None when it runs out."""
    result = logic.solve_ltl(formula, max_work=WRITTEN_TRACE_WORK)
    return logic.format_trace(result.trace) if result.sat else None


TASK = register_task(
    Task(
        name="ltl",
        vocabulary="ltl",
        description="LTL witness generation (formula in Polish notation -> a satisfying symbolic lasso trace)",
        example="&aXb",
        intended_use="Research on neural LTL satisfiability: proposing traces that a model checker then verifies "
        "(`hf_symbolinv.logic.check_ltl`). Predictions are not guaranteed correct; always check them.",
        judge=judge,
        input_size=lambda source: logic.formula_size(source, kind="ltl"),
        symbol_names=lambda source: logic.symbols_of(source, kind="ltl"),
        commuted=commuter(logic.parse_ltl, logic.format_ltl, written_trace),
        in_own_names=reprinter(logic.parse_ltl, logic.format_ltl, logic.parse_trace, logic.format_trace),
    )
)
