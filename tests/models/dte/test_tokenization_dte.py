"""The tree tokenizer: round trips, symbols by the rule, Polish formulas, and bad input named with its position."""

from __future__ import annotations

import pytest
import torch

from hf_symbolinv.models.dte import DTEConfig, DTETreeTokenizer


def test_bracketed_round_trip_and_symbols_by_first_appearance():
    tok = DTETreeTokenizer(["S", "NP", "was", "by"], max_depth=3)
    text = "(S (NP dog was) (NP cat (by dog _)))"
    encoded = tok(text)
    assert encoded["symbol_names"] == [["dog", "cat"]]
    labels, symbols = encoded["input_labels"][0], encoded["input_symbols"][0]
    # Breadth-first: root S, NP, NP, dog, was, cat, by, ..., dog under by.
    assert labels[:7].tolist() == [tok.label_ids[x] for x in ("S", "NP", "NP")] + [1, tok.label_ids["was"], 1, 4 + 1]
    assert symbols[:7].tolist() == [-1, -1, -1, 0, -1, 1, -1]
    assert symbols[13].item() == 0  # the second "dog", left child of "by"
    decoded = tok.decode_tree(labels.tolist(), symbols.tolist(), ["dog", "cat"])
    assert tok.format(decoded) == text


def test_polish_formulas():
    tok = DTETreeTokenizer(
        ["&", "|", "!"], max_depth=4, symbol_pattern="[a-z]", input_format="polish", arities={"&": 2, "|": 2, "!": 1}
    )
    tree = tok.parse("& a | b ! c")
    assert tree == ("&", "a", ("|", "b", ("!", "c", None)))
    assert tok.format(tree) == "& a | b ! c"
    with pytest.raises(ValueError, match="trailing token 'b' at position 4"):
        tok.parse("! a b")
    with pytest.raises(ValueError, match="operator lacks an operand"):
        tok.parse("& a")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(S (NP a (NP b (NP c d))) e)", r"deeper than max_depth=2: the node at path '010' .* has depth 3"),
        ("(S a b", r"'\(' at position 0 is never closed"),
        ("(S a b))", r"unexpected '\)' at position 7"),
        ("(S A b)", r"unknown label 'A' at the node at path '0'"),
    ],
)
def test_bad_input_is_named_with_its_position(text, message):
    tok = DTETreeTokenizer(["S", "NP"], max_depth=2)
    with pytest.raises(ValueError, match=message):
        tok([text, "(S a b)"][::-1])


def test_a_target_may_only_copy_the_inputs_symbols():
    tok = DTETreeTokenizer(["f"], max_depth=2)
    with pytest.raises(ValueError, match=r"row 0: target: symbol 'z' at the node at path '1' .* is not in the input"):
        tok("(f a b)", "(f a z)")


def test_save_load_and_a_model_that_disagrees(tmp_path):
    tok = DTETreeTokenizer(["f", "g"], max_depth=3, max_symbols=4)
    tok.save_pretrained(tmp_path)
    loaded = DTETreeTokenizer.from_pretrained(tmp_path)
    assert loaded.to_dict() == tok.to_dict()
    assert torch.equal(loaded("(f a b)")["input_labels"], tok("(f a b)")["input_labels"])
    tok.check_model_config(DTEConfig(vocab_size=4, max_depth=3, max_symbols=4))
    with pytest.raises(ValueError, match="the model's vocab_size=5 but the tokenizer's is 4"):
        tok.check_model_config(DTEConfig(vocab_size=5, max_depth=3))
    (tmp_path / "dte_tokenizer.json").write_text('{"base_labels": ["f"], "max_depht": 3}')
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['max_depht'\]"):
        DTETreeTokenizer.from_pretrained(tmp_path)
