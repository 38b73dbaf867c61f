"""Negation normal form: a propositional formula in Polish notation -> an equivalent formula whose negations
apply to atoms only.

The input uses the package's propositional model vocabulary (``! & | = ^``, symbols single lowercase letters;
``->`` is read as ``| ! a b``); the answer uses ``! & |`` only: ``=`` (equivalence) and ``^`` (xor) are
expanded, since no NNF connective expresses them::

    = a ! & b c   ->   | & a | ! b ! c & ! a & b c

:func:`to_nnf` gives the reference answer: negations are pushed inward by De Morgan, a double negation
cancels, ``= x y`` becomes ``| & x y & ! x ! y`` and ``^ x y`` becomes ``| & x ! y & ! x y`` (with the negated
operands in NNF too); constants flip under negation. Tokens are written separated by single spaces (the
tree tokenizer's Polish format); the judge reads spaced and unspaced text alike.

Plain Python: the dataset builder and the judge share these functions.
"""

from __future__ import annotations

from .. import logic
from ..logic import FALSE, TRUE, And, Atom, Const, Equiv, Formula, Not, Or, Xor
from . import Judgement, Task, register_task, reprinter

#: The connectives an answer may use, in the model spelling.
NNF_OPERATORS: tuple[str, ...] = ("!", "&", "|")
#: Every connective an input may use (``1``/``0`` are the constants).
NNF_INPUT_OPERATORS: tuple[str, ...] = ("!", "&", "|", "=", "^")
#: The arity of each connective (the tree tokenizer's ``arities`` for the ``polish`` input format).
NNF_ARITIES: dict[str, int] = {"!": 1, "&": 2, "|": 2, "=": 2, "^": 2}


def to_nnf(formula: Formula, positive: bool = True) -> Formula:
    """The negation normal form of ``formula`` (of its negation where ``positive`` is false)."""
    if isinstance(formula, Atom):
        return formula if positive else Not(formula)
    if isinstance(formula, Const):
        return formula if positive else (FALSE if formula.value else TRUE)
    if isinstance(formula, Not):
        return to_nnf(formula.arg, not positive)
    if isinstance(formula, And | Or):
        left, right = to_nnf(formula.left, positive), to_nnf(formula.right, positive)
        conjunction = isinstance(formula, And) == positive
        return And(left, right) if conjunction else Or(left, right)
    if isinstance(formula, Equiv | Xor):
        left, right = formula.left, formula.right
        same = isinstance(formula, Equiv) == positive  # true: both operands agree
        pos_l, neg_l = to_nnf(left, True), to_nnf(left, False)
        pos_r, neg_r = to_nnf(right, True), to_nnf(right, False)
        if same:
            return Or(And(pos_l, pos_r), And(neg_l, neg_r))
        return Or(And(pos_l, neg_r), And(neg_l, pos_r))
    raise ValueError(f"{formula!r} is not a propositional formula")


def is_nnf(formula: Formula) -> bool:
    """Whether ``formula`` uses only ``! & |`` (and constants) with every negation on an atom."""
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, Not):
            if not isinstance(node.arg, Atom):
                return False
        elif isinstance(node, And | Or):
            stack.extend(node.children)
        elif not isinstance(node, Atom | Const):
            return False
    return True


def equivalent(first: Formula, second: Formula) -> bool:
    """Whether two propositional formulas agree under every assignment (the logic engine decides that the
    equivalence of both is valid: a truth table up to 16 symbols, SAT beyond)."""
    return logic.check_assignment(Equiv(first, second), {})


def format_nnf(formula: Formula) -> str:
    """Polish notation in the model spelling, tokens separated by single spaces: ``| & a b ! c``."""
    return " ".join(logic.polish_tokens(formula))


def formula_depth(formula: Formula) -> int:
    """The depth of the formula's tree, the root at depth 0 (a negation is a node with one child)."""
    deepest, stack = 0, [(formula, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children)
    return deepest


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = None) -> Judgement:
    """Correct iff the prediction parses, is in NNF (only ``! & |``, negations on atoms; an implication,
    which the parser would rewrite, does not count) and is equivalent to the source; exact iff it is the
    reference formula (token for token, spacing aside). A prediction that does not parse is invalid; a
    source that does not parse raises ``LogicSyntaxError`` (the input's fault, not the answer's)."""
    formula = logic.parse_prop(source)
    try:
        answer = logic.parse_prop(prediction)
    except (logic.LogicSyntaxError, ValueError, TypeError):
        return Judgement(correct=False, exact=False, invalid=True)
    exact = reference is not None and answer == logic.parse_prop(reference)
    in_nnf = is_nnf(answer) and "->" not in prediction and "=>" not in prediction
    return Judgement(correct=in_nnf and equivalent(formula, answer), exact=exact and in_nnf)


def _format_spaced(formula: Formula | str) -> str:
    return format_nnf(logic.parse_prop(formula) if isinstance(formula, str) else formula)


TASK = register_task(
    Task(
        name="nnf",
        vocabulary="nnf",
        description="negation normal form (a propositional formula in Polish notation -> an equivalent formula "
        "over ! & | with negations on atoms only)",
        example="= a ! & b c",
        intended_use="Research on neural tree transduction (tree models) over formulas: answers are checked "
        "for NNF and for equivalence with the logic engine, so any correct NNF counts, not only the reference.",
        judge=judge,
        input_size=lambda source: logic.formula_size(source, kind="prop"),
        symbol_names=lambda source: list(logic.symbols_of(source, kind="prop")),
        in_own_names=reprinter(logic.parse_prop, _format_spaced, logic.parse_prop, _format_spaced),
    )
)
