"""Tests for SymbolInvTokenizer (hf_symbolinv/tokenization_symbolinv.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import DataCollatorForSeq2Seq

from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
from hf_symbolinv.utils.symbols import SymbolRule

LTL_N, PROP_N, COPY_N = 13, 10, 3
REPO = str(Path(__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def ltl() -> SymbolInvTokenizer:
    return SymbolInvTokenizer.from_preset("ltl")


@pytest.fixture(scope="module")
def prop() -> SymbolInvTokenizer:
    return SymbolInvTokenizer.from_preset("prop")


# --------------------------------------------------------------------------------------------------
# Vocabulary and ids
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "n_base"), [("ltl", LTL_N), ("prop", PROP_N), ("copy", COPY_N)])
def test_preset_sizes_and_special_ids(preset: str, n_base: int) -> None:
    tok = SymbolInvTokenizer.from_preset(preset, max_symbols=40)
    assert tok.num_base_tokens == n_base
    assert tok.vocab_size == len(tok) == len(tok.get_vocab()) == n_base + 40
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id) == (0, 1, 2)
    assert (tok.pad_token, tok.eos_token, tok.bos_token) == ("<pad>", "<eos>", "<start>")
    assert sorted(tok.get_vocab().values()) == list(range(n_base + 40))


def test_get_vocab_slot_names_and_conversions(ltl: SymbolInvTokenizer) -> None:
    vocab = ltl.get_vocab()
    assert vocab["&"] == 6 and vocab["X"] == 12
    assert vocab["a"] == LTL_N and vocab["z"] == LTL_N + 25 and vocab["<sym26>"] == LTL_N + 26
    assert "<sym0>" not in vocab and "<sym64>" not in vocab
    tokens = list(vocab)
    assert ltl.convert_tokens_to_ids(tokens) == list(vocab.values())
    assert ltl.convert_ids_to_tokens(list(vocab.values())) == tokens
    with pytest.raises(ValueError, match="per example"):
        ltl.convert_tokens_to_ids("p1")


def test_exact_ids_and_symbol_mask(ltl: SymbolInvTokenizer) -> None:
    enc = ltl("&aXb")
    assert enc["input_ids"] == [6, 13, 12, 14, 1]  # EOS appended, no BOS
    assert enc["attention_mask"] == [1] * 5
    assert enc["symbol_mask"] == [0, 1, 0, 1, 0]
    assert ltl.encode("&aXb") == [6, 13, 12, 14, 1]
    # Whitespace-separated input gives the same tokens.
    assert ltl("& a X b")["input_ids"] == [6, 13, 12, 14, 1]


def test_trace_tokenization(ltl: SymbolInvTokenizer) -> None:
    assert ltl.tokenize("a;&ab;{b}") == ["a", ";", "&", "a", "b", ";", "{", "b", "}"]
    enc = ltl("a;&ab;{b}")
    assert enc["input_ids"] == [13, 8, 6, 13, 14, 8, 9, 14, 10, 1]
    assert enc["symbol_mask"] == [1, 0, 0, 1, 1, 0, 0, 1, 0, 0]
    assert ltl.decode(enc["input_ids"], skip_special_tokens=True) == "a;&ab;{b}"


def test_prop_assignment_target(prop: SymbolInvTokenizer) -> None:
    enc = prop("&ab", text_target="a1b0")
    assert enc["input_ids"] == [6, 10, 11, 1]
    assert enc["labels"] == [10, 4, 11, 3, 1]
    assert prop.decode(enc["labels"], skip_special_tokens=True) == "a1b0"


def test_copy_preset_every_character_is_a_symbol() -> None:
    tok = SymbolInvTokenizer.from_preset("copy")
    assert tok.rule == SymbolRule(pattern=r"\S")
    enc = tok("aBa!", return_symbol_names=True)
    # `a` keeps its letter slot 0; other characters take the lowest free slots by first appearance.
    assert enc["input_ids"] == [COPY_N + 0, COPY_N + 1, COPY_N + 0, COPY_N + 2, 1]
    assert enc["symbol_mask"] == [1, 1, 1, 1, 0]
    assert enc["symbol_names"] == {0: "a", 1: "B", 2: "!"}
    assert tok.decode(enc["input_ids"], skip_special_tokens=True, symbol_names=enc["symbol_names"]) == "aBa!"


def test_greedy_lexing_prefers_longest_and_base_on_ties() -> None:
    # A symbol regex that also matches base tokens: base tokens win ties and are never symbols.
    tok = SymbolInvTokenizer.from_preset("ltl", symbols=r"[a-zA-Z]")
    assert tok("Xa")["input_ids"] == [12, LTL_N, 1]
    assert tok("Xa")["symbol_mask"] == [0, 1, 0]
    # Longest match: `p12` is one symbol, not `p` followed by base tokens `1`, `2`...
    names = SymbolInvTokenizer.from_preset("prop", symbols=r"p\d+")
    assert names.tokenize("&p12p1") == ["&", "p12", "p1"]
    assert names.tokenize("&p1<eos>") == ["&", "p1", "<eos>"]


# --------------------------------------------------------------------------------------------------
# Named symbols and slots
# --------------------------------------------------------------------------------------------------


def test_regex_names_slots_by_first_appearance_and_decode_back() -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"p\d+")
    enc = tok(["& p7 | p3 p7", "! p3"], return_symbol_names=True, padding=True)
    assert enc["input_ids"][0] == [6, PROP_N + 0, 7, PROP_N + 1, PROP_N + 0, 1]
    assert enc["input_ids"][1] == [5, PROP_N + 0, 1, 0, 0, 0]  # slots are per example
    assert enc["symbol_names"] == [{0: "p7", 1: "p3"}, {0: "p3"}]
    decoded = tok.batch_decode(enc["input_ids"], skip_special_tokens=True, symbol_names=enc["symbol_names"])
    assert decoded == ["& p7 | p3 p7", "! p3"]
    # Without names, slots decode to their vocabulary names, space-separated: this tokenizer's rule (p7, p3) does
    # not read `a` and `b` one character at a time.
    assert tok.decode(enc["input_ids"][0], skip_special_tokens=True) == "& a | b a"
    assert SymbolInvTokenizer.from_preset("prop").decode(enc["input_ids"][0], skip_special_tokens=True) == "&a|ba"


def test_decoded_text_reads_back_under_the_tokenizers_own_rule() -> None:
    # Identifiers take digits: `Q1` would read back as one name, so the answer `Q` `1` is written `Q 1`.
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"[A-Za-z_][A-Za-z0-9_.']*")
    enc = tok(["| P Q"], return_symbol_names=True)
    answer = [PROP_N + 1, tok.convert_tokens_to_ids("1")]
    text = tok.decode(answer, symbol_names=enc["symbol_names"][0])
    assert text == "Q 1" and tok.tokenize(text) == ["Q", "1"]


def test_names_from_a_set(prop: SymbolInvTokenizer) -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols={"req_ack", "grant"})
    enc = tok("&grant|req_ack!grant", return_symbol_names=True)  # unsegmented, longest names first
    assert enc["input_ids"] == [6, PROP_N, 7, PROP_N + 1, 5, PROP_N, 1]
    assert enc["symbol_names"] == {0: "grant", 1: "req_ack"}
    text = tok.decode(enc["input_ids"], skip_special_tokens=True, symbol_names=enc["symbol_names"])
    assert text == "& grant | req_ack ! grant"
    assert tok(text)["input_ids"] == enc["input_ids"]  # the spaced form lexes back identically


def test_letters_keep_fixed_slots_names_take_lowest_free() -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols=SymbolRule(pattern="[a-z]", names=["p1", "q"]))
    enc = tok("& p1 & c a", return_symbol_names=True)
    # a -> 0 and c -> 2 are fixed by name; p1 takes the lowest free slot, 1.
    assert enc["input_ids"] == [6, PROP_N + 1, 6, PROP_N + 2, PROP_N + 0, 1]
    assert enc["symbol_names"] == {0: "a", 1: "p1", 2: "c"}


def test_text_and_target_share_slots() -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"p\d+")
    enc = tok(["& p5 p2", "p9"], text_target=["p2 1 p5 0 p8 1", "p9 0"], return_symbol_names=True)
    assert enc["input_ids"][0] == [6, PROP_N + 0, PROP_N + 1, 1]
    # p2 and p5 reuse the input's slots; p8 (target only) takes the next free slot.
    assert enc["labels"][0] == [PROP_N + 1, 4, PROP_N + 0, 3, PROP_N + 2, 4, 1]
    assert enc["symbol_names"][0] == {0: "p5", 1: "p2", 2: "p8"}
    assert enc["labels"][1] == [PROP_N, 3, 1]
    # Encoding the input alone gives the same ids.
    assert tok("& p5 p2")["input_ids"] == enc["input_ids"][0]
    labels = tok.batch_decode(enc["labels"], skip_special_tokens=True, symbol_names=enc["symbol_names"])
    assert labels == ["p2 1 p5 0 p8 1", "p9 0"]


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


def test_unknown_token_error_names_token_position_and_input(ltl: SymbolInvTokenizer) -> None:
    with pytest.raises(ValueError, match=r"unknown token 'Q' at position 3 in '&aXQ'") as err:
        ltl("&aXQ")
    assert "'ltl' vocabulary" in str(err.value) and "SymbolRule(pattern='[a-z]'" in str(err.value)
    with pytest.raises(ValueError, match=r"unknown token 'foo' at position 4 in '& a foo'"):
        ltl("& a foo")
    with pytest.raises(ValueError, match=r"unknown token '='"):
        ltl(["&ab", "=ab"])  # `=` is a prop operator, not an LTL one


@pytest.mark.parametrize("text", ["", "  \t"])
def test_empty_input_error(ltl: SymbolInvTokenizer, text: str) -> None:
    with pytest.raises(ValueError, match="empty input"):
        ltl(text)
    with pytest.raises(ValueError, match="empty input"):
        ltl(["&ab", text])


def test_too_many_symbols_error() -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"p\d+", max_symbols=2)
    with pytest.raises(ValueError, match=r"3 distinct symbols .* max_symbols=2"):
        tok("& p1 & p2 p3")
    # Target names count too, since the pair shares slots.
    with pytest.raises(ValueError, match=r"3 distinct symbols"):
        tok("& p1 p2", text_target="p3 1")
    assert tok("& p1 & p2 p1")["input_ids"] == [6, PROP_N, 6, PROP_N + 1, PROP_N, 1]


def test_fixed_letter_slot_beyond_max_symbols() -> None:
    tok = SymbolInvTokenizer.from_preset("prop", max_symbols=3)
    assert tok("&ac")["input_ids"] == [6, PROP_N, PROP_N + 2, 1]
    with pytest.raises(ValueError, match=r"'z' has the fixed slot 25 but max_symbols=3"):
        tok("&az")


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="unknown vocabulary"):
        SymbolInvTokenizer.from_preset("nope")
    with pytest.raises(ValueError, match="max_symbols"):
        SymbolInvTokenizer.from_preset("ltl", max_symbols=0)
    with pytest.raises(ValueError, match="nothing could be a symbol"):
        SymbolInvTokenizer.from_preset("ltl", symbols=[])


# --------------------------------------------------------------------------------------------------
# Padding, truncation, tensors, collation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["right", "left"])
def test_padding_keeps_symbol_mask_aligned(side: str) -> None:
    tok = SymbolInvTokenizer.from_preset("ltl", padding_side=side)
    enc = tok(["&aXb", "a", "a;&ab;{b}"], padding=True, return_tensors="pt")
    ids, mask, sym = enc["input_ids"], enc["attention_mask"], enc["symbol_mask"]
    assert ids.shape == mask.shape == sym.shape == (3, 10)
    assert torch.equal(sym, ((ids >= LTL_N) & (mask == 1)).long())
    assert torch.equal(mask, (ids != 0).long())
    short = [6, 13, 12, 14, 1]
    expected = short + [0] * 5 if side == "right" else [0] * 5 + short
    assert ids[0].tolist() == expected
    assert sym[0].tolist() == [int(i >= LTL_N) for i in expected]


def test_padding_side_argument_and_max_length_truncation(ltl: SymbolInvTokenizer) -> None:
    enc = ltl(["&aXb", "ab"], padding="max_length", max_length=7, padding_side="left")
    assert enc["input_ids"] == [[0, 0, 6, 13, 12, 14, 1], [0, 0, 0, 0, 13, 14, 1]]
    assert enc["symbol_mask"] == [[0, 0, 0, 1, 0, 1, 0], [0, 0, 0, 0, 1, 1, 0]]
    enc = ltl(["&aXb", "ab;c;{d}"], truncation=True, max_length=4)
    assert enc["input_ids"] == [[6, 13, 12, 1], [13, 14, 8, 1]]  # EOS is kept
    assert enc["symbol_mask"] == [[0, 1, 0, 0], [1, 1, 0, 0]]


def test_return_tensors_and_symbol_names_survive(ltl: SymbolInvTokenizer) -> None:
    enc = ltl("&aXb", text_target="a;{b}", return_tensors="pt", return_symbol_names=True)
    assert enc["input_ids"].tolist() == [[6, 13, 12, 14, 1]]
    assert enc["symbol_mask"].tolist() == [[0, 1, 0, 1, 0]]
    assert enc["labels"].tolist() == [[13, 8, 9, 14, 10, 1]]
    assert enc["symbol_names"] == {0: "a", 1: "b"}
    enc = ltl(["&ab", "c"], return_tensors="pt", padding=True, return_symbol_names=True)
    assert enc["symbol_names"] == [{0: "a", 1: "b"}, {2: "c"}]
    assert ltl.batch_decode(enc["input_ids"], skip_special_tokens=True, symbol_names=enc["symbol_names"]) == [
        "&ab",
        "c",
    ]


def test_tokenizer_pad_on_features(ltl: SymbolInvTokenizer) -> None:
    features = [dict(ltl(s, return_symbol_names=True)) for s in ["&aXb", "!c"]]
    batch = ltl.pad(features, return_tensors="pt")
    assert batch["input_ids"].tolist() == [[6, 13, 12, 14, 1], [5, 15, 1, 0, 0]]
    assert batch["symbol_mask"].tolist() == [[0, 1, 0, 1, 0], [0, 1, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert batch["symbol_names"] == [{0: "a", 1: "b"}, {2: "c"}]
    # symbol_mask is derived from the ids when a feature lacks it.
    assert ltl.pad({"input_ids": [[6, 13, 1], [13, 1]]})["symbol_mask"] == [[0, 1, 0], [1, 0, 0]]


@pytest.mark.parametrize("side", ["right", "left"])
def test_data_collator_for_seq2seq(side: str) -> None:
    tok = SymbolInvTokenizer.from_preset("ltl", padding_side=side)
    pairs = [("&aXb", "a;{b}"), ("Ua!c", "a;b;c;{b}"), ("c", "{c}")]
    features = [dict(tok(src, text_target=tgt)) for src, tgt in pairs]
    batch = DataCollatorForSeq2Seq(tok)(features)
    ids, mask, sym, labels = (batch[k] for k in ("input_ids", "attention_mask", "symbol_mask", "labels"))
    assert ids.shape == mask.shape == sym.shape == (3, 5)
    assert labels.shape == (3, 10)
    for row, feature in enumerate(features):
        n, m = len(feature["input_ids"]), len(feature["labels"])
        kept = slice(0, n) if side == "right" else slice(5 - n, 5)
        assert ids[row, kept].tolist() == feature["input_ids"]
        assert sym[row, kept].tolist() == feature["symbol_mask"]
        assert int(mask[row].sum()) == n and int(sym[row].sum()) == sum(feature["symbol_mask"])
        kept_labels = slice(0, m) if side == "right" else slice(10 - m, 10)
        assert labels[row, kept_labels].tolist() == feature["labels"]
        assert int((labels[row] == -100).sum()) == 10 - m
    # Label rows with -100 decode without crashing.
    assert tok.batch_decode(labels, skip_special_tokens=True) == ["a;{b}", "a;b;c;{b}", "{c}"]


# --------------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------------


def test_decode_special_tokens_and_ignore_index(ltl: SymbolInvTokenizer) -> None:
    ids = [6, 13, 14, 1, 0, -100]
    assert ltl.decode(ids, skip_special_tokens=True) == "&ab"
    assert ltl.decode(ids) == "& a b <eos> <pad>"  # -100 is always dropped
    assert ltl.decode(torch.tensor(ids), skip_special_tokens=True) == "&ab"
    assert ltl.decode([LTL_N + 30, 6, LTL_N]) == "<sym30> & a"
    # A name mapping covers its slots; other slots fall back to their vocabulary names.
    assert ltl.decode([LTL_N + 30, LTL_N], symbol_names={30: "req"}) == "req a"
    assert ltl.decode([LTL_N + 30], symbol_names={"30": "req"}) == "req"  # JSON-style keys
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ltl.decode([ltl.vocab_size])


alphabet = st.sampled_from(["!", "&", "|", "X", "U", "0", "1", ";", "{", "}", "a", "b", "c", "x", "z"])


@settings(max_examples=60, deadline=None)
@given(st.lists(alphabet, min_size=1, max_size=20))
def test_roundtrip_single_character_tokens(tokens: list[str]) -> None:
    tok = SymbolInvTokenizer.from_preset("ltl")
    text = "".join(tokens)
    enc = tok(text)
    assert enc["symbol_mask"] == [int(t.islower()) for t in tokens] + [0]
    assert tok.decode(enc["input_ids"], skip_special_tokens=True) == text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(["!", "&", "|", "="]), st.integers(0, 99).map(lambda i: f"v{i}")),
        min_size=1,
    )
)
def test_roundtrip_names(tokens: list[str]) -> None:
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"v\d+")
    text = " ".join(tokens)
    enc = tok(text, return_symbol_names=True)
    names = list(dict.fromkeys(t for t in tokens if t.startswith("v")))
    assert enc["symbol_names"] == dict(enumerate(names))
    decoded = tok.decode(enc["input_ids"], skip_special_tokens=True, symbol_names=enc["symbol_names"])
    # Spaces only where some token is longer than one character.
    assert decoded == ("" if all(len(t) == 1 for t in tokens) else " ").join(tokens)
    assert tok(decoded)["input_ids"] == enc["input_ids"]


# --------------------------------------------------------------------------------------------------
# Serialization
# --------------------------------------------------------------------------------------------------


def test_save_and_from_pretrained_roundtrip(tmp_path: Path) -> None:
    rule = SymbolRule(pattern=r"p\d+", names=["req_ack"])
    tok = SymbolInvTokenizer.from_preset("prop", symbols=rule, max_symbols=12)
    tok.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["vocabulary"] == "prop" and config["max_symbols"] == 12
    assert config["symbol_rule"] == rule.to_dict()
    loaded = SymbolInvTokenizer.from_pretrained(tmp_path)
    assert loaded.rule == rule and loaded.max_symbols == 12 and loaded.task_vocabulary.name == "prop"
    assert loaded.get_vocab() == tok.get_vocab()
    text = "& p3 | req_ack p3"
    assert loaded(text, return_symbol_names=True) == tok(text, return_symbol_names=True)
    assert (loaded.pad_token_id, loaded.eos_token_id, loaded.bos_token_id) == (0, 1, 2)


def test_copy_default_rule_roundtrip(tmp_path: Path) -> None:
    tok = SymbolInvTokenizer.from_preset("copy", max_symbols=8)
    tok.save_pretrained(tmp_path)
    loaded = SymbolInvTokenizer.from_pretrained(tmp_path)
    assert loaded.rule == SymbolRule(pattern=r"\S") and loaded.vocab_size == COPY_N + 8
    assert loaded("bXb")["input_ids"] == tok("bXb")["input_ids"] == [COPY_N + 1, COPY_N + 0, COPY_N + 1, 1]


@pytest.mark.slow
def test_auto_tokenizer_remote_code_without_repo_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # register_for_auto_class sets a class attribute; monkeypatch restores it for the other tests.
    monkeypatch.setattr(SymbolInvTokenizer, "_auto_class", None)
    SymbolInvTokenizer.register_for_auto_class("AutoTokenizer")
    folder = tmp_path / "symtok"
    tok = SymbolInvTokenizer.from_preset("prop", symbols=r"p\d+", max_symbols=16)
    tok.save_pretrained(folder)
    # save_pretrained copies the module and its relative imports flat next to the config.
    for name in ("tokenization_symbolinv.py", "symbols.py", "vocabulary.py"):
        assert (folder / name).is_file()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["auto_map"]["AutoTokenizer"][0] == "tokenization_symbolinv.SymbolInvTokenizer"

    script = textwrap.dedent(
        f"""
        import importlib.abc, json, sys

        class Block(importlib.abc.MetaPathFinder):  # the repo package must not be needed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "hf_symbolinv":
                    raise ImportError("hf_symbolinv must not be imported")

        sys.meta_path.insert(0, Block())
        assert not any("{REPO}" == p.rstrip("/") for p in sys.path), sys.path
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained({str(folder)!r}, trust_remote_code=True)
        enc = tok("& p4 p2", return_symbol_names=True)
        print(json.dumps([type(tok).__name__, type(tok).__module__, enc["input_ids"], tok.vocab_size]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1")
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    name, module, ids, vocab_size = json.loads(result.stdout.strip().splitlines()[-1])
    assert name == "SymbolInvTokenizer" and not module.startswith("hf_symbolinv")
    assert ids == [6, PROP_N, PROP_N + 1, 1] and vocab_size == PROP_N + 16
