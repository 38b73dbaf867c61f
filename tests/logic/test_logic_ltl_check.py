"""Exact LTL trace checking against an independent brute-force oracle, plus hand-written cases."""

from __future__ import annotations

import itertools
import random

import pytest
from logic_oracle import all_words_satisfy, eval_prop, valuations

from hf_symbolinv.logic import (
    LogicSyntaxError,
    Trace,
    Verdict,
    check_ltl,
    format_ltl,
    format_trace,
    parse_ltl,
    parse_trace,
    random_ltl_formula,
    random_prop_formula,
    solve_ltl,
)

STEP_PRIORITIES = {"true": 1, "false": 0.2, "not": 1, "and": 1, "or": 1}


def _random_trace(rng: random.Random, names: list[str]) -> Trace:
    def step():
        return random_prop_formula(rng, rng.randint(1, 4), names, priorities=STEP_PRIORITIES)

    return Trace([step() for _ in range(rng.randint(0, 2))], [step() for _ in range(rng.randint(1, 2))])


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_oracle_on_random_pairs(seed):
    """Thousands of (formula, lasso) pairs: <= 3 symbols, size <= 12, short lassos whose steps are
    arbitrary propositional formulas (sometimes over a symbol absent from the formula)."""
    rng = random.Random(1000 + seed)
    verdicts = {True: 0, False: 0}
    for _ in range(800):
        names = ["a", "b", "c"][: rng.randint(1, 3)]
        f = random_ltl_formula(rng, rng.randint(1, 12), names)
        extra = ["d"] if rng.random() < 0.1 else []
        t = _random_trace(rng, names + extra)
        expected = all_words_satisfy(f, t)
        verdicts[expected] += 1
        got = check_ltl(f, t)
        assert got is (Verdict.HOLDS if expected else Verdict.FAILS), (format_ltl(f), format_trace(t))
    assert min(verdicts.values()) > 200  # both verdicts well represented


def test_agrees_with_oracle_on_solver_traces_and_mutations():
    """Near-miss traces: solver outputs (which hold) with one step weakened or changed."""
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        names = ["a", "b", "c"][: rng.randint(1, 3)]
        f = random_ltl_formula(rng, rng.randint(3, 12), names)
        result = solve_ltl(f)
        if not result.sat:
            continue
        t = result.trace
        steps = list(t.steps)
        k = rng.randrange(len(steps))
        steps[k] = random_prop_formula(rng, rng.randint(1, 3), names, priorities=STEP_PRIORITIES)
        mutated = Trace(steps[: len(t.prefix)], steps[len(t.prefix) :])
        for trace in (t, mutated):
            expected = all_words_satisfy(f, trace)
            assert bool(check_ltl(f, trace)) == expected, (format_ltl(f), format_trace(trace))
            checked += 1
    assert checked > 400


def _periodic_instantiation_holds(f_text: str, t_text: str) -> bool:
    """The naive (wrong) check: instantiate each step with one valuation, repeat the cycle, and
    require every such periodic word to satisfy the formula."""
    f, t = parse_ltl(f_text, "infix"), parse_trace(t_text, "infix")
    names = sorted({n for s in t.steps for n in _names(s)} | _names(f))
    options = [[v for v in valuations(names) if eval_prop(step, v)] for step in t.steps]
    for choice in itertools.product(*options):
        word = Trace([_cube(v) for v in choice[: len(t.prefix)]], [_cube(v) for v in choice[len(t.prefix) :]])
        if not all_words_satisfy(f, word):
            return False
    return True


def _names(f) -> set[str]:
    return {node.name for node in f.walk() if node.op == "ap"}


def _cube(valuation: dict[str, bool]):
    from hf_symbolinv.logic import TRUE, Atom, Not, conjunction

    if not valuation:
        return TRUE
    return conjunction(Atom(n) if v else Not(Atom(n)) for n, v in sorted(valuation.items()))


@pytest.mark.parametrize(
    ("formula", "trace"),
    [
        ("G(a <-> X a)", "cycle{1}"),  # a may change value at any step
        ("G a | G !a", "cycle{1}"),
        ("G a | G b", "cycle{a | b}"),  # alternate a-only and b-only letters
        ("F G a | F G !a", "cycle{1}"),  # a word where a flips forever
        ("G(a -> X a) | G(a -> X !a)", "b; cycle{1}"),  # a = 1, 1, 0, ... violates both
        ("X G(a <-> b) | X G(a xor b)", "c; cycle{a | b}"),
        ("G(a <-> X X a)", "cycle{1; 1}"),
        ("F G (a <-> X X a)", "cycle{1; 1}"),  # period-2 words satisfy it, others need not
    ],
)
def test_non_periodic_words_matter(formula, trace):
    """Periodic instantiation says these hold; some non-periodic word violates each of them."""
    assert _periodic_instantiation_holds(formula, trace)
    assert not all_words_satisfy(parse_ltl(formula, "infix"), parse_trace(trace, "infix"))
    assert check_ltl(formula, trace, notation="infix") is Verdict.FAILS


@pytest.mark.parametrize(
    ("formula", "trace", "expected"),
    [
        ("a & X b", "a; b; cycle{1}", True),
        ("a & X b", "a; cycle{1}", False),
        ("a U b", "a; a; cycle{b}", True),
        ("a U b", "a; cycle{a}", False),
        ("G F a | F G !a", "cycle{1}", True),  # valid: holds on every word
        ("G(a <-> X !a)", "cycle{a; !a}", True),
        ("G(a <-> X !a)", "a; cycle{!a; a}", True),
        ("G(a <-> X !a)", "cycle{a; 1}", False),
        ("G a", "cycle{a & c}", True),  # c does not occur in the formula
        ("G a", "cycle{a | c}", False),
        ("G(a | b)", "cycle{a <-> !b}", True),  # any propositional step
        ("X X a", "1; 1; a; cycle{0 | 1}", True),
        ("a", "a & !a; cycle{1}", True),  # no word at all: inclusion holds vacuously (as in Spot)
        ("a", "1; cycle{c & !c}", True),
        ("0", "cycle{1}", False),
        ("1", "cycle{1}", True),
    ],
)
def test_hand_written_cases(formula, trace, expected):
    verdict = check_ltl(formula, trace, notation="infix")
    assert verdict is (Verdict.HOLDS if expected else Verdict.FAILS)
    assert all_words_satisfy(parse_ltl(formula, "infix"), parse_trace(trace, "infix")) == expected


def test_polish_strings_objects_and_truthiness():
    assert check_ltl("&aXb", "a;b;{1}")
    assert not check_ltl("&aXb", "a;{1}")
    assert check_ltl(parse_ltl("&aXb"), parse_trace("a;b;{1}")) is Verdict.HOLDS
    assert bool(Verdict.UNKNOWN) is False
    assert check_ltl("U p1 p2", "p1 ; { p2 }") is Verdict.HOLDS  # whitespace: long names
    assert check_ltl("Up1p2", "p1;{p2}", symbols=["p1", "p2"]) is Verdict.HOLDS


def test_malformed_input_raises():
    with pytest.raises(LogicSyntaxError):
        check_ltl("&a|", "{1}")
    with pytest.raises(LogicSyntaxError):
        check_ltl("a", "a;{b")
    with pytest.raises(ValueError):
        check_ltl("a", "{a}", backend="nonsense")


@pytest.mark.parametrize("text", ["X" * 2000 + "a", "!" * 400 + "Ga", "U" * 400 + "a" * 401])
def test_formulas_nested_beyond_the_engine_limit_get_a_clear_error(text: str) -> None:
    from hf_symbolinv.logic.ltl_core import MAX_LTL_DEPTH

    formula = parse_ltl(text)
    for run in (lambda: check_ltl(formula, parse_trace("{a}")), lambda: solve_ltl(formula)):
        with pytest.raises(ValueError, match=f"accepts at most {MAX_LTL_DEPTH} levels"):
            run()


def test_formulas_at_the_engine_limit_are_checked() -> None:
    from hf_symbolinv.logic.ltl_core import MAX_LTL_DEPTH

    formula = parse_ltl("X" * (MAX_LTL_DEPTH - 1) + "a")
    assert check_ltl(formula, parse_trace("{a}"))
    assert not check_ltl(formula, parse_trace("{!a}"))


def test_deep_formulas_compare_and_pickle() -> None:
    import pickle

    deep = parse_ltl("X" * 5000 + "a")
    assert deep == parse_ltl("X" * 5000 + "a") and deep != parse_ltl("X" * 5000 + "b")
    assert deep != parse_ltl("X" * 4999 + "a")
    copy = pickle.loads(pickle.dumps(deep))
    assert copy == deep and hash(copy) == hash(deep)
    trace = parse_trace("a;&a!b;{|ab;1}")
    assert pickle.loads(pickle.dumps(trace)) == trace


def test_infix_parentheses_parse_up_to_the_limit_and_fail_clearly_beyond() -> None:
    from hf_symbolinv.logic.notation import MAX_INFIX_NESTING

    nested = "(" * MAX_INFIX_NESTING + "a U b" + ")" * MAX_INFIX_NESTING
    assert parse_ltl(nested, notation="infix") == parse_ltl("Uab")
    deeper = "(" * (MAX_INFIX_NESTING + 1) + "a" + ")" * (MAX_INFIX_NESTING + 1)
    with pytest.raises(LogicSyntaxError, match=f"position {MAX_INFIX_NESTING}: expected at most"):
        parse_ltl(deeper, notation="infix")
