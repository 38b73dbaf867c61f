"""Bracketed trees: round trip, and unbalanced brackets are named with their position."""

import pytest

from hf_symbolinv.models.dte.bracketed import format_bracketed, parse_bracketed


@pytest.mark.parametrize("text", ["a", "(f a b)", "(f a (g b c))", "(f _ (g b _))"])
def test_round_trip(text):
    assert format_bracketed(parse_bracketed(text)) == text


def test_structure():
    assert parse_bracketed("(f a (g b c))") == ("f", "a", ("g", "b", "c"))
    assert parse_bracketed("(f _ a)") == ("f", None, "a")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(f a (g b c)", r"unbalanced bracket: '\(' at position 0 is never closed"),
        ("(f a b))", r"unbalanced bracket: unexpected '\)' at position 7"),
        (")", r"unbalanced bracket: unexpected '\)' at position 0"),
        ("(f a)", r"node 'f' at position 0 has 1 children"),
        ("(f a b) c", r"trailing token 'c' at position 8"),
        ("", "empty tree string"),
    ],
)
def test_bad_input_names_problem_and_position(text, message):
    with pytest.raises(ValueError, match=message):
        parse_bracketed(text)


def test_unary_nodes_and_deep_nesting():
    assert parse_bracketed("( S ( NP dog ) )", unary=True) == ("S", ("NP", "dog", None), None)
    with pytest.raises(ValueError, match="node 'S' at position 0 has 1 children; binary trees need 2"):
        parse_bracketed("(S a)")
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_bracketed("(f a " * 5000 + "b" + ")" * 5000)
