"""Reading formulas as a user types them (``hf_symbolinv.logic.reading``, the reader of ``symbolinv solve`` and
the web page): Spot's reading of words in LTL infix, names in propositional formulas, messages in the user's words,
the user's operators printed back, and limits on what the model and the solver will actually process."""

from __future__ import annotations

import random

import pytest

from hf_symbolinv.logic import (
    And,
    Atom,
    LogicSyntaxError,
    Or,
    format_formula,
    globally,
    parse_ltl,
    parse_prop,
    random_ltl_formula,
)
from hf_symbolinv.logic.formula import Next, Until, eventually
from hf_symbolinv.logic.notation import format_as_written, parse_as_written
from hf_symbolinv.logic.reading import MAX_FORMULA_NODES, InputError, answer_forms, read_formula
from hf_symbolinv.logic.spot_backend import spot_available

needs_spot = pytest.mark.skipif(not spot_available(), reason="Spot is not installed (it is not on PyPI)")


# --- Spot's reading of words in LTL infix ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Spot's lexer: a name cannot begin with F, G or X followed by a letter (that letter is the operator) ...
        ("Grant & x", And(globally(Atom("rant")), Atom("x"))),
        ("Xray | a", Or(Next(Atom("ray")), Atom("a"))),
        ("Fire & b", And(eventually(Atom("ire")), Atom("b"))),
        ("GFa", globally(eventually(Atom("a")))),
        ("G F req -> F Grant", parse_ltl("-> G F req F G rant")),
        # ... but F, G or X followed by a digit begins a name; U R W M right after an operand are operators.
        ("X1 & F0_b", And(Atom("X1"), Atom("F0_b"))),
        ("G0 U a", Until(Atom("G0"), Atom("a"))),
        ("a Ub", Until(Atom("a"), Atom("b"))),
        ("Req & Mode", And(Atom("Req"), Atom("Mode"))),
        # true and false in any case, as Spot reads them.
        ("TRUE | b", parse_ltl("| 1 b")),
    ],
)
def test_ltl_infix_reads_words_as_spot_does(text: str, expected) -> None:
    assert parse_ltl(text, "infix") == expected


def test_polish_and_propositional_formulas_read_operator_letters_words_as_names() -> None:
    # Polish words are whole (an operator is a word of its own); a propositional formula has no temporal operators.
    assert parse_ltl("& Grant Xray") == And(Atom("Grant"), Atom("Xray"))
    assert parse_prop("Grant & Xray | Fire", "infix") == Or(And(Atom("Grant"), Atom("Xray")), Atom("Fire"))
    assert parse_prop("& Grant Xray") == And(Atom("Grant"), Atom("Xray"))
    # The reader: no temporal operator, so propositional, with the names as written.
    read = read_formula("Grant & x")
    assert read.task == "prop" and read.names == ("Grant", "x")
    # As LTL, Spot's reading, and a note that says so.
    read = read_formula("G F req -> F Grant")
    assert read.task == "ltl" and "rant" in read.names and "Grant" not in read.names
    assert any("'Grant' is read as 'G rant'" in note for note in read.notes)
    assert read_formula("GFa").notes == ()  # the usual spelling of G F a is no surprise


@needs_spot
def test_the_reader_agrees_with_spot_on_generated_formulas() -> None:
    import spot

    rng = random.Random(7)
    # Names that begin with operator letters, digits after them, lowercase and uppercase.
    names = ["Grant", "Xray", "Fire", "X1", "F0", "G2b", "req", "Mode", "Until", "Wait", "ack", "_p"]
    for _ in range(300):
        formula = random_ltl_formula(rng, (1, 15), rng.sample(names, 4))
        text = format_as_written(formula, "infix")
        ours = parse_ltl(text, "infix")
        assert spot.formula(text) == spot.formula(format_formula(ours, "infix", "file")), text


# --- messages in the user's words --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "position", "character"),
    [("& % a", 2, "%"), ("% a b", 0, "%"), ("a & b$c", 5, "$"), ("& 12 a", 2, "1")],
)
def test_a_character_that_is_no_operator_and_no_name_is_named_with_its_position(
    text: str, position: int, character: str
) -> None:
    for parse in (parse_prop, parse_ltl):
        with pytest.raises(LogicSyntaxError) as caught:
            parse(text, "polish")
        assert caught.value.position == position and repr(character) in caught.value.found
    with pytest.raises(InputError) as caught:
        read_formula(text)
    message = str(caught.value)
    assert f"position {position}" in message and repr(character) in message
    assert "SymbolRule" not in message and "pattern" not in message  # never an internal repr


def test_an_operator_letter_where_a_name_is_wanted_is_said_to_be_an_operator() -> None:
    with pytest.raises(InputError) as caught:
        read_formula("& X Y")
    assert "'X' at position 2 is the LTL operator next, not a name" in str(caught.value)
    with pytest.raises(InputError) as caught:
        read_formula("| a G")
    assert "'G' at position 4 is the LTL operator globally" in str(caught.value)


# --- the user's operators printed back ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "notation", "infix", "polish"),
    [
        ("X G ^ F a <-> b c", "polish", "X G(F a xor (b <-> c))", "X G xor F a <-> b c"),
        ("(a U b) & (c R d)", "infix", "a U b & c R d", "& U a b R c d"),
        ("G (req -> F grant)", "infix", "G(req -> F grant)", "G -> req F grant"),
        ("a W (b M c)", "infix", "a W (b M c)", "W a M b c"),
    ],
)
def test_printing_back_keeps_the_users_operators(text: str, notation: str, infix: str, polish: str) -> None:
    written = parse_as_written(text, notation)
    assert format_as_written(written, "infix") == infix
    assert format_as_written(written, "polish") == polish
    # Both read back as the formula typed.
    assert parse_ltl(infix, "infix") == parse_ltl(polish) == parse_ltl(text, notation)
    read = read_formula(text)
    assert read.infix == infix and read.polish_spaced == polish
    assert " U " not in read.infix or " U " in infix  # no rewrite into U forms for the user


def test_user_operators_print_back_on_random_formulas() -> None:
    rng = random.Random(3)
    for _ in range(200):
        formula = random_ltl_formula(rng, (1, 25), ["a", "b", "Grant", "x1"])
        text = format_formula(formula, "infix", "file")
        written = parse_as_written(text, "infix")
        assert parse_ltl(format_as_written(written, "infix"), "infix") == formula
        assert parse_ltl(format_as_written(written, "polish")) == formula


# --- limits on what will actually be processed -------------------------------------------------------------------
def test_a_formula_whose_rewrite_blows_up_is_refused_naming_its_rewritten_size() -> None:
    chain = "X " + " ".join(["<->"] * 9) + " " + " ".join(f"p{i}" for i in range(10))  # X <-> p0 <-> p1 ... p9
    chain = "X " + "".join(f"<-> p{i} " for i in range(9)) + "p9"
    read_size = parse_ltl(chain).size
    assert read_size == 20
    with pytest.raises(InputError) as caught:
        read_formula(chain)
    message = str(caught.value)
    assert "20 nodes" in message and "rewritten into ! & |" in message and f"at most {MAX_FORMULA_NODES}" in message
    rewritten = int(message.split(" and ", 1)[1].split(" with", 1)[0].replace(",", ""))
    assert rewritten > MAX_FORMULA_NODES
    # As a propositional formula <-> is a node of its own: 20 nodes are read.
    assert read_formula(chain[2:], "prop").model_size == 19


# --- answers in one format whatever the names ---------------------------------------------------------------------
def test_answers_have_one_format_whatever_the_names() -> None:
    assert answer_forms("a1b0c0", "prop") == ("a = true, b = false, c = false", "a 1 b 0 c 0")
    assert answer_forms("Rain 1 Snow 0", "prop") == ("Rain = true, Snow = false", "Rain 1 Snow 0")
    assert answer_forms("1;b;{1}", "ltl") == ("1; b; cycle{1}", "1 ; b ; { 1 }")
    assert answer_forms("grant ; { 1 }", "ltl") == ("grant; cycle{1}", "grant ; { 1 }")
    # A name that LTL infix would read otherwise is quoted, as Spot writes it.
    assert answer_forms("Grant ; { ! Xray }", "ltl") == ('"Grant"; cycle{!"Xray"}', "Grant ; { ! Xray }")
    assert answer_forms("a;{", "ltl") is None  # an invalid answer is shown as written
