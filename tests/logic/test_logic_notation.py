"""Parsing and printing: both notations, traces, propositional styles, assignments, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_symbolinv.logic import (
    FALSE,
    TRUE,
    And,
    Atom,
    Equiv,
    LogicSyntaxError,
    Next,
    Not,
    Or,
    Trace,
    Until,
    Xor,
    format_assignment,
    format_ltl,
    format_prop,
    format_trace,
    parse_assignment,
    parse_ltl,
    parse_prop,
    parse_trace,
)
from hf_symbolinv.utils.symbols import SymbolRule

a, b, c = Atom("a"), Atom("b"), Atom("c")


# --- fixed examples -------------------------------------------------------------------------


def test_polish_and_infix_examples():
    f = parse_ltl("&aXb")
    assert f == And(a, Next(b))
    assert format_ltl(f) == "&aXb"
    assert format_ltl(f, "infix") == "a & X b"
    assert parse_ltl("a & X b", "infix") == f
    assert parse_ltl("a&Xb", "infix") == f  # unsegmented infix, character tokens
    assert parse_ltl("a & Xb", "infix") == f  # Spot-style Xb
    assert parse_ltl("& a X b") == f  # whitespace-separated Polish
    assert format_ltl(parse_ltl("U!a|b0")) == "U!a|b0"
    assert format_ltl(parse_ltl("!(a U (b & c))", "infix"), "infix") == "!(a U (b & c))"


def test_infix_precedence_like_spot():
    # & binds tighter than |, U tighter than &, unary tightest; U is right-associative.
    assert parse_ltl("a | b & c", "infix") == Or(a, And(b, c))
    assert parse_ltl("a & b U c", "infix") == And(a, Until(b, c))
    assert parse_ltl("a U b U c", "infix") == Until(a, Until(b, c))
    assert parse_ltl("X a U b", "infix") == Until(Next(a), b)
    assert parse_ltl("a & b & c", "infix") == And(And(a, b), c)
    assert parse_ltl("a && b || c", "infix") == Or(And(a, b), c)
    assert format_ltl(Until(Until(a, b), c), "infix") == "(a U b) U c"
    assert format_ltl(And(a, And(b, c)), "infix") == "a & (b & c)"
    assert format_ltl(Next(And(a, b)), "infix") == "X(a & b)"
    assert format_ltl(Not(Next(a)), "infix") == "!X a"


def test_polish_doubled_operators_are_two_tokens():
    assert parse_ltl("&&abc") == And(And(a, b), c)
    assert parse_ltl("||abc") == Or(Or(a, b), c)
    assert format_ltl(And(a, And(FALSE, And(c, Not(b))))) == "&a&0&c!b"
    assert parse_ltl("&a&0&c!b") == And(a, And(FALSE, And(c, Not(b))))


def test_derived_operators_are_rewritten():
    assert format_ltl(parse_ltl("F a", "infix")) == "U1a"
    assert format_ltl(parse_ltl("G a", "infix")) == "!U1!a"
    assert format_ltl(parse_ltl("G !a", "infix")) == "!U1a"  # no double negation introduced
    assert format_ltl(parse_ltl("a -> b", "infix")) == "|!ab"
    assert format_ltl(parse_ltl("a R b", "infix")) == "!U!a!b"
    assert format_ltl(parse_ltl("a W b", "infix")) == "|Uab!U1!a"
    assert format_ltl(parse_ltl("a M b", "infix")) == "Ub&ab"
    assert format_ltl(parse_ltl("a <-> b", "infix")) == "|&ab&!a!b"
    assert format_ltl(parse_ltl("a xor b", "infix")) == "|&a!b&!ab"
    # Polish input accepts the same operators.
    assert parse_ltl("Fa") == parse_ltl("F a", "infix")
    assert parse_ltl("GFa") == parse_ltl("G F a", "infix")
    assert parse_ltl("Rab") == parse_ltl("a R b", "infix")
    assert parse_ltl("->ab") == parse_ltl("a -> b", "infix")
    assert parse_ltl("<->ab") == parse_ltl("a <-> b", "infix")
    assert parse_ltl("GFa", "infix") == parse_ltl("G(F(a))", "infix")
    assert parse_ltl("true U false", "infix") == Until(TRUE, FALSE)


def test_traces():
    t = parse_trace("a;&ab;{b}")
    assert t == Trace([a, And(a, b)], [b])
    assert format_trace(t) == "a;&ab;{b}"
    assert format_trace(t, "infix") == "a; a & b; cycle{b}"
    assert parse_trace("a; a & b; cycle{b}", "infix") == t
    assert parse_trace("a;a&b;cycle{b}", "infix") == t
    t2 = parse_trace("a;{b;!b}")
    assert t2.prefix == (a,) and t2.cycle == (b, Not(b))
    assert format_trace(t2, "infix") == "a; cycle{b; !b}"
    assert parse_trace("{1}") == Trace([], [TRUE])
    assert parse_trace("cycle{1}", "infix") == Trace([], [TRUE])
    # Any propositional step is accepted (model predictions may contain them).
    t3 = parse_trace("|ab;!a;{=ab}")
    assert t3.prefix == (Or(a, b), Not(a))
    assert parse_trace("a | b; !a; cycle{a <-> b}", "infix") == t3


def test_propositional_styles():
    f = parse_prop("=a^bc")
    assert f == Equiv(a, Xor(b, c))
    assert format_prop(f) == "=a^bc"
    assert format_prop(f, style="file") == "<-> a xor b c"
    assert parse_prop("<-> a xor b c") == f
    assert parse_prop("<->axorbc") == f  # unsegmented 'xor' is read when the letter reading fails
    assert format_prop(f, "infix") == "a = b ^ c"  # xor binds tighter than <->, as in Spot
    assert format_prop(f, "infix", style="file") == "a <-> b xor c"
    assert parse_prop("a <-> (b xor c)", "infix") == f
    assert format_prop(Xor(Equiv(a, b), c), "infix", style="file") == "(a <-> b) xor c"
    assert parse_prop("a -> b", "infix") == Or(Not(a), b)
    # Letters x, o, r stay letters where that reading works.
    x, o, r = Atom("x"), Atom("o"), Atom("r")
    assert parse_prop("&&xor") == And(And(x, o), r)


def test_assignments():
    assert parse_assignment("a1b0") == {"a": True, "b": False}
    assert format_assignment({"b": False, "a": True}) == "a1b0"
    assert parse_assignment("") == {}
    assert format_assignment({}) == ""
    rule = SymbolRule(pattern=r"p\d+")
    assert parse_assignment("p12 1 p3 0", rule) == {"p12": True, "p3": False}
    assert format_assignment({"p3": False, "p12": True}) == "p12 1 p3 0"


def test_symbol_rules_and_long_names():
    rule = SymbolRule(pattern=r"p\d+")
    f = parse_ltl("&p12Xp3", symbols=rule)
    assert f == And(Atom("p12"), Next(Atom("p3")))
    assert format_ltl(f) == "& p12 X p3"
    assert parse_ltl("& p12 X p3") == f  # whitespace: any non-operator token is a name
    assert format_ltl(f, "infix") == "p12 & X p3"
    assert parse_ltl("p12 & Xp3", "infix") == f
    g = parse_ltl("req_ack U X grant", "infix")
    assert g == Until(Atom("req_ack"), Next(Atom("grant")))
    assert parse_ltl("U req_ack X grant") == g
    names = SymbolRule(names=["req_ack", "grant"])
    assert parse_ltl("Ureq_ackXgrant", symbols=names) == g
    t = parse_trace("p1;{&p1!p22}", symbols=rule)
    assert format_trace(t) == "p1 ; { & p1 ! p22 }"
    assert parse_trace(format_trace(t)) == t
    assert format_trace(t, "infix") == "p1; cycle{p1 & !p22}"
    # A plain list of names works as well.
    assert parse_ltl("Xfoo", symbols=["foo"]) == Next(Atom("foo"))


# --- errors ---------------------------------------------------------------------------------


def test_error_message_names_position_and_expectation():
    with pytest.raises(LogicSyntaxError) as info:
        parse_ltl("&a|")
    assert str(info.value) == "position 3: expected an operand, found end of input in '&a|'"
    assert isinstance(info.value, SyntaxError)
    assert info.value.position == 3


@pytest.mark.parametrize(
    ("parser", "text", "notation", "fragment"),
    [
        (parse_ltl, "ab", "polish", "position 1: expected end of input, found 'b'"),
        (parse_ltl, "", "polish", "position 0: expected an operand, found end of input"),
        (parse_ltl, "&a)", "polish", "position 2: expected an operand, found ')'"),
        (parse_ltl, "(a & b", "infix", "position 6: expected ')' or a binary operator, found end of input"),
        (parse_ltl, "a & & b", "infix", "position 4: expected an operand, found '&'"),
        (parse_ltl, "a b", "infix", "position 2: expected end of input or a binary operator, found 'b'"),
        (parse_ltl, "&a#", "polish", "position 2: expected an operator or a symbol, found '#'"),
        (parse_ltl, "&aB", "polish", "position 2: expected an operator or a symbol, found 'B'"),
        (parse_trace, "a;{b", "polish", "position 4: expected ';' or '}', found end of input"),
        (parse_trace, "a{b}", "polish", "position 1: expected ';', found '{'"),
        (parse_trace, "a;b", "polish", "position 3: expected ';', found end of input"),
        (parse_trace, "{}", "polish", "position 1: expected an operand, found '}'"),
        (parse_trace, "{a}b", "polish", "position 3: expected end of input after the cycle, found 'b'"),
        (parse_trace, "Xa;{1}", "polish", "position 0: expected an operand or a propositional operator"),
        (parse_prop, "&aXb", "polish", "found temporal operator 'X'"),
        (parse_assignment, "a1a0", None, "position 2: expected a symbol not assigned yet, found 'a'"),
        (parse_assignment, "a1b", None, "position 3: expected '0' or '1', found end of input"),
        (parse_assignment, "1a", None, "position 0: expected a symbol, found '1'"),
    ],
)
def test_malformed_inputs(parser, text, notation, fragment):
    with pytest.raises(LogicSyntaxError) as info:
        parser(text) if notation is None else parser(text, notation)
    assert fragment in str(info.value)
    assert repr(text) in str(info.value)


# --- property-based round trips -------------------------------------------------------------

LONG_NAMES = ["p1", "p22", "req_ack", "grant"]


def _ltl_trees(names: list[str]):
    leaves = st.sampled_from([Atom(n) for n in names] + [TRUE, FALSE])
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.builds(Not, kids),
            st.builds(Next, kids),
            st.builds(And, kids, kids),
            st.builds(Or, kids, kids),
            st.builds(Until, kids, kids),
        ),
        max_leaves=12,
    )


def _prop_trees(names: list[str]):
    leaves = st.sampled_from([Atom(n) for n in names] + [TRUE, FALSE])
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.builds(Not, kids),
            st.builds(And, kids, kids),
            st.builds(Or, kids, kids),
            st.builds(Equiv, kids, kids),
            st.builds(Xor, kids, kids),
        ),
        max_leaves=12,
    )


def _step_trees(names: list[str]):
    leaves = st.sampled_from([Atom(n) for n in names] + [TRUE, FALSE])
    return st.recursive(
        leaves,
        lambda kids: st.one_of(st.builds(Not, kids), st.builds(And, kids, kids), st.builds(Or, kids, kids)),
        max_leaves=4,
    )


def _traces(names: list[str]):
    steps = _step_trees(names)
    return st.builds(Trace, st.lists(steps, max_size=3), st.lists(steps, min_size=1, max_size=3))


@settings(max_examples=150, deadline=None)
@given(_ltl_trees(["a", "b", "c"]), st.sampled_from(["polish", "infix"]))
def test_ltl_round_trip_letters(f, notation):
    text = format_ltl(f, notation)
    assert parse_ltl(text, notation) == f
    if notation == "polish":
        assert len(text) == f.size  # one character per token


@settings(max_examples=150, deadline=None)
@given(_ltl_trees(LONG_NAMES), st.sampled_from(["polish", "infix"]))
def test_ltl_round_trip_long_names(f, notation):
    rule = SymbolRule(names=LONG_NAMES)
    text = format_ltl(f, notation)
    assert parse_ltl(text, notation, symbols=rule) == f
    if " " in text:  # whitespace-separated tokens: any non-operator word is a name, no rule needed
        assert parse_ltl(text, notation) == f
    if notation == "polish":
        assert parse_ltl(text.replace(" ", ""), notation, symbols=rule) == f  # greedy names


@settings(max_examples=150, deadline=None)
@given(
    _prop_trees(["a", "b", "c", "x", "o", "r"]),
    st.sampled_from(["polish", "infix"]),
    st.sampled_from(["model", "file"]),
)
def test_prop_round_trip(f, notation, style):
    assert parse_prop(format_prop(f, notation, style), notation) == f


@settings(max_examples=150, deadline=None)
@given(st.one_of(_traces(["a", "b"]), _traces(LONG_NAMES)), st.sampled_from(["polish", "infix"]))
def test_trace_round_trip(t, notation):
    text = format_trace(t, notation)
    assert parse_trace(text, notation, symbols=LONG_NAMES) == t


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "p1", "req_ack"]), st.booleans()))
def test_assignment_round_trip(assignment):
    text = format_assignment(assignment)
    assert parse_assignment(text, ["p1", "req_ack"]) == assignment
    assert list(parse_assignment(text, ["p1", "req_ack"])) == sorted(assignment)


def test_formulas_with_the_names_people_write_print_and_read_back() -> None:
    # Names other than single lowercase letters (`Q`, `x'`, `a.b`, `α`, `_`) need whitespace to be read as one
    # name: both printers add it where the text would otherwise be read letter by letter.
    import random

    from hf_symbolinv.logic import format_formula
    from hf_symbolinv.logic.formula import FALSE, TRUE, And, Atom, Equiv, Next, Not, Or, Until, Xor

    rng = random.Random(0)
    names = ["a", "b", "p1", "x'", "Q", "_", "ab", "a.b", "req_2", "A", "α"]

    def draw(depth: int, temporal: bool):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice([Atom(rng.choice(names)), TRUE, FALSE])
        op = rng.choice(["not", "and", "or", "equiv", "xor"] + (["X", "U"] if temporal else []))
        if op == "not":
            return Not(draw(depth - 1, temporal))
        if op == "X":
            return Next(draw(depth - 1, temporal))
        binary = {"and": And, "or": Or, "equiv": Equiv, "xor": Xor, "U": Until}[op]
        return binary(draw(depth - 1, temporal), draw(depth - 1, temporal))

    for _ in range(3000):
        temporal = rng.random() < 0.5
        formula = draw(4, temporal)
        parse = parse_ltl if temporal else parse_prop
        for notation in ("infix", "polish"):
            text = format_formula(formula, notation)
            assert parse(text, notation=notation) == formula, (notation, text)
