"""Bounded logic engine: equivalence and xor stay linear, time-outs and work budgets hold on inputs built to
blow up, and deep formulas print and check without recursion.

The blow-up cases: rewriting ``<->`` / ``xor`` into ``! & |`` doubles both operands, so 25 nested xors become a
tree of about 10^8 nodes; a trace step's truth table over 20+ symbols has millions of bits.
"""

from __future__ import annotations

import pickle
import string
import time

import pytest

from hf_symbolinv import logic
from hf_symbolinv.logic import (
    MAX_LTL_DEPTH,
    Atom,
    Equiv,
    Verdict,
    Xor,
    check_ltl,
    format_formula,
    format_ltl,
    format_trace,
    in_ltl_core,
    parse_ltl,
    parse_trace,
    solve_ltl,
)
from hf_symbolinv.logic.formula import MAX_CORE_SIZE, ltl_xor
from hf_symbolinv.logic.ltl_core import nesting_depth
from hf_symbolinv.tasks import get_task

LETTERS = string.ascii_lowercase
XOR_CHAIN = "^" * 25 + LETTERS  # parity of 26 symbols
# Generous bound on how far past its time-out a call may run on a slow, loaded machine.
SLACK_S = 5.0


def test_parsed_xor_and_equivalence_stay_nodes_of_their_own() -> None:
    formula = parse_ltl(XOR_CHAIN)
    assert formula.size == 51 and isinstance(formula, Xor)
    assert isinstance(parse_ltl("a <-> X b", "infix"), Equiv)
    # Printed as it is, it reads back; printed for the LTL vocabulary, the rewritten tree is refused by size.
    assert parse_ltl(format_formula(formula)) == formula
    assert parse_ltl(format_formula(formula, "infix", "file"), "infix") == formula
    with pytest.raises(ValueError, match=f"limit is {MAX_CORE_SIZE:,}"):
        format_ltl(formula)


def test_the_rewritten_form_is_built_shared_and_means_the_same() -> None:
    small = parse_ltl("^a=bXc")
    core = in_ltl_core(small)
    assert {node.op for node in core.walk()} <= {"ap", "not", "and", "or", "X"}
    assert core.size == 29  # | & a !(b<->Xc) & !a (b<->Xc), each (b<->Xc) of size 11
    for trace in ["a;b;{c}", "!a;&bc;{!c}", "{&a!b}", "a;!b;{!c}"]:
        assert check_ltl(small, trace) == check_ltl(core, trace)
    # Shared operands: building the rewriting of 25 nested xors is linear even though its tree is not.
    with pytest.raises(ValueError, match=r"nodes with <-> and xor rewritten"):
        in_ltl_core(parse_ltl(XOR_CHAIN))


def test_solving_a_long_xor_chain_honours_the_time_out_and_the_work_budget() -> None:
    start = time.perf_counter()
    result = solve_ltl(XOR_CHAIN, timeout=1)
    assert time.perf_counter() - start < 1 + SLACK_S
    assert result.timed_out
    assert solve_ltl(XOR_CHAIN, max_work=5_000).timed_out
    assert solve_ltl("=" * 25 + LETTERS, max_work=5_000).timed_out
    # Small chains are solved, natively, and the witness checks.
    result = solve_ltl("^" * 7 + LETTERS[:8])
    assert result.sat and check_ltl("^" * 7 + LETTERS[:8], result.trace) is Verdict.HOLDS


def test_checking_a_wide_xor_step_is_fast_and_exact() -> None:
    step = "^" * 19 + LETTERS[:20]
    start = time.perf_counter()
    # Some word of the step has a false, so &ab fails; a valid formula holds on every word.
    assert check_ltl("&ab", f"{step};{{1}}", timeout=1) is Verdict.FAILS
    assert check_ltl("|^ab!^ab", f"{step};{{1}}", timeout=1) is Verdict.HOLDS
    assert time.perf_counter() - start < 2 + SLACK_S
    # The truth table of a 3,000-node step over 22 symbols is large: the budget stops it, deterministically.
    big_step = "^" * 2999 + "".join(LETTERS[i % 22] for i in range(3000))
    assert check_ltl("&ab", f"{big_step};{{1}}", max_work=1_000) is Verdict.UNKNOWN
    start = time.perf_counter()
    assert check_ltl("&ab", f"{big_step};{{1}}", timeout=0.2) in (Verdict.UNKNOWN, Verdict.FAILS)
    assert time.perf_counter() - start < 0.2 + SLACK_S


def test_formulas_built_with_shared_subtrees_stay_linear() -> None:
    # ltl_xor shares its operands: 40 levels are a tree of ~4 * 10^12 nodes but ~200 objects.
    formula = Atom("a0")
    for i in range(1, 40):
        formula = ltl_xor(formula, Atom(f"a{i}"))
    assert formula.size > 10**12
    assert nesting_depth(formula) == 3 * 39 + 1  # each level: | & ! around the previous one
    assert len(repr(formula)) < 2100 and repr(formula).endswith("...")
    assert pickle.loads(pickle.dumps(formula)) == formula
    assert len(pickle.dumps(formula)) < 20_000
    assert sum(1 for _ in formula.distinct_nodes()) < 400
    assert logic.symbols_of(formula) == tuple(f"a{i}" for i in range(40))
    assert solve_ltl(formula, max_work=5_000).timed_out
    with pytest.raises(ValueError, match="limit is"):
        format_ltl(formula)


def test_deep_formulas_print_in_infix_without_recursion() -> None:
    deep = parse_ltl("X" * 3000 + "a")
    assert format_formula(deep, "infix") == "X " * 3000 + "a"
    nested = parse_ltl("&" * 2000 + "a" * 2001)
    assert format_formula(nested, "infix") == " & ".join("a" * 2001)  # left-associative: no parentheses
    right_nested = parse_ltl("&a" * 1500 + "a")
    text = format_formula(right_nested, "infix")
    assert text.count("(") == 1499 and text.endswith("a" + ")" * 1499)
    assert format_ltl(deep) == "X" * 3000 + "a"


@pytest.mark.parametrize("operator", ["U", "R", "W", "->", "<->", "&", "|", "xor"])
def test_long_infix_chains_parse_without_recursion(operator: str) -> None:
    chain = f" {operator} ".join(f"a{i}" for i in range(1000))
    formula = parse_ltl(chain, notation="infix")
    assert logic.symbols_of(formula) == tuple(f"a{i}" for i in range(1000))
    # A right-associative chain groups from the right, a left-associative one from the left, as a short one does.
    short = f" {operator} ".join(f"a{i}" for i in range(4))
    right = operator in ("U", "R", "W", "->", "<->")
    grouped = (
        f"a0 {operator} (a1 {operator} (a2 {operator} a3))"
        if right
        else f"((a0 {operator} a1) {operator} a2) {operator} a3"
    )
    assert parse_ltl(short, notation="infix") == parse_ltl(grouped, notation="infix")


def test_deep_trace_steps_check_without_recursion() -> None:
    step = "!" * 4000 + "a"  # an even number of negations: the step is a
    trace = parse_trace(f"{step};{{1}}")
    assert check_ltl("a", trace) is Verdict.HOLDS
    assert check_ltl("!a", trace) is Verdict.FAILS
    assert format_trace(trace).startswith("!" * 4000)


@pytest.mark.parametrize("task_name", ["ltl", "prop"])
def test_a_bad_source_is_the_callers_error_not_an_invalid_answer(task_name: str) -> None:
    judge = get_task(task_name).judge
    answer = "a;{1}" if task_name == "ltl" else "a1"
    with pytest.raises(logic.LogicSyntaxError, match="position 2"):
        judge("&a", answer, None, 10)  # does not parse
    if task_name == "ltl":
        with pytest.raises(ValueError, match=f"at most {MAX_LTL_DEPTH} levels"):
            judge("X" * (MAX_LTL_DEPTH + 5) + "a", answer, None, 10)
    # A bad answer to a good source is an invalid answer.
    assert judge("a", "&&", None, 10).invalid


def test_evaluation_names_the_bad_input() -> None:
    from hf_symbolinv.evaluation import evaluate_answers

    report = evaluate_answers("ltl", ["a", "Xb"], [["a;{1}"], ["{0}"]])
    assert report.correct == 0.5
    with pytest.raises(ValueError, match=r"input 1 \('&a'\): position 2"):
        evaluate_answers("ltl", ["a", "&a"], [["a;{1}"], ["{1}"]])
