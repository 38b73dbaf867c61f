"""Converting fixed-embedding checkpoints of the family into SITs (paper §5.8), and fine-tuning them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.commands import main
from hf_symbolinv.models.symbolinv.conversion import convert_checkpoint, convert_family_model

NUM_BASE = 10  # the propositional vocabulary
TINY = dict(
    d_model=16,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    dropout=0.0,
    init_std=0.3,
)


def vanilla(rows: int = 5, **overrides) -> SymbolInvForConditionalGeneration:
    """A fixed-embedding prop model with rows for ``rows`` symbols (a-e), in the SIT's layout."""
    torch.manual_seed(0)
    config = SymbolInvConfig.from_preset(
        "prop", **{**TINY, "embedding_type": "fixed", "num_symbol_embeddings": rows, **overrides}
    )
    return SymbolInvForConditionalGeneration(config).eval()


@pytest.fixture(scope="module")
def converted() -> tuple:
    source, tokenizer = vanilla(), SymbolInvTokenizer.from_preset("prop")
    model, new_tokenizer, report = convert_family_model(source, tokenizer, actual="a", placeholder="b")
    return source, model.eval(), new_tokenizer, report


def test_every_tensor_is_kept_but_the_other_symbols_rows(converted) -> None:
    source, model, _, report = converted
    old, new = source.state_dict(), model.state_dict()
    assert set(old) == set(new)
    for name, tensor in old.items():
        if name != "model.shared.weight":
            assert torch.equal(new[name], tensor), name
    old_rows, new_rows = old["model.shared.weight"], new["model.shared.weight"]
    assert torch.equal(new_rows[:NUM_BASE], old_rows[:NUM_BASE])  # base rows
    assert torch.equal(new_rows[NUM_BASE], old_rows[NUM_BASE + 0])  # actual <- a
    assert torch.equal(new_rows[NUM_BASE + 1], old_rows[NUM_BASE + 1])  # placeholder <- b
    assert model.config.embedding_type == "streams" and model.config.stream_attention == "EP-DP-CP"
    before, after = (sum(p.numel() for p in m.parameters()) for m in (source, model))
    assert before - after == 3 * 16  # the rows of c, d and e; nothing added
    assert report.dropped_symbols == ["c", "d", "e"]
    assert "actual row      <- row of 'a'" in report.summary()


def test_rows_are_matched_by_token_name_not_position() -> None:
    source, tokenizer = vanilla(), SymbolInvTokenizer.from_preset("prop")
    model, _, report = convert_family_model(source, tokenizer, actual="d", placeholder="a")
    rows = model.state_dict()["model.shared.weight"]
    old = source.state_dict()["model.shared.weight"]
    assert torch.equal(rows[NUM_BASE], old[NUM_BASE + 3]) and torch.equal(rows[NUM_BASE + 1], old[NUM_BASE])
    assert (report.actual_source_id, report.placeholder_source_id) == (NUM_BASE + 3, NUM_BASE)


@pytest.mark.parametrize("formula, answer", [("|c!c", "c1"), ("&d|d!d", "d1"), ("!e", "e0")])
def test_one_symbol_input_gives_the_vanilla_logits_of_the_input_renamed_to_the_actual_symbol(
    converted, formula: str, answer: str
) -> None:
    source, model, tokenizer, _ = converted
    symbol = formula.strip("|&!")[0]
    renamed_formula, renamed_answer = formula.replace(symbol, "a"), answer.replace(symbol, "a")
    batch = tokenizer(formula, text_target=answer, return_tensors="pt")
    renamed = tokenizer(renamed_formula, text_target=renamed_answer, return_tensors="pt")
    slot = NUM_BASE + ord(symbol) - ord("a")
    with torch.no_grad():
        sit = model(**batch).logits
        fixed = source(**renamed).logits
    emitted = [1, *range(3, NUM_BASE)]  # base tokens but <pad> and <start>, which are never emitted
    torch.testing.assert_close(sit[..., emitted], fixed[..., emitted])
    torch.testing.assert_close(sit[..., slot], fixed[..., NUM_BASE])  # the symbol's logit is the actual row's
    assert torch.isinf(sit[..., NUM_BASE:]).sum() == sit[..., NUM_BASE:].numel() - sit.shape[1]


def test_converted_model_is_invariant_and_runs_more_symbols_than_the_vanilla_had(converted) -> None:
    source, model, tokenizer, _ = converted
    formulas = ["&a|b!c", "|&cd!a", "&&ab&cd"]
    renaming = str.maketrans("abcd", "qxmb")
    batch = tokenizer(formulas, padding=True, return_tensors="pt")
    renamed = tokenizer([f.translate(renaming) for f in formulas], padding=True, return_tensors="pt")
    with torch.no_grad():
        original = model.generate(**batch, max_new_tokens=6)
        again = model.generate(**renamed, max_new_tokens=6)
    for row in range(len(formulas)):
        first = tokenizer.decode(original[row], skip_special_tokens=True)
        second = tokenizer.decode(again[row], skip_special_tokens=True)
        assert second == first.translate(renaming)
    eight = tokenizer("&&&ab&cd&&ef&gh", return_tensors="pt")  # 8 symbols; the vanilla model had rows for 5
    with torch.no_grad():
        assert model.generate(**eight, max_new_tokens=4).shape[0] == 1
    with pytest.raises(ValueError, match="rows for 5 symbols"):
        source(**eight, decoder_input_ids=torch.tensor([[2]]))


@pytest.mark.parametrize(
    "actual, placeholder, message",
    [
        ("zz", "b", "'zz' is not in the checkpoint's vocabulary"),
        ("a", "&", "'&' is a base token"),
        ("a", "a", "both 'a'"),
        ("h", "a", "'h' has no learned row in this checkpoint"),
    ],
)
def test_bad_symbol_choices_give_clear_errors(actual: str, placeholder: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        convert_family_model(vanilla(), SymbolInvTokenizer.from_preset("prop"), actual, placeholder)


def test_models_without_symbol_rows_are_refused() -> None:
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    sit = vanilla(embedding_type="streams")
    with pytest.raises(ValueError, match="already a stream model"):
        convert_family_model(sit, tokenizer)
    with pytest.raises(ValueError, match="embedding_type='random'"):
        convert_family_model(vanilla(embedding_type="random"), tokenizer)


def test_a_checkpoint_that_is_not_an_encoder_decoder_is_refused(tmp_path: Path, capsys) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=20, n_positions=16)).save_pretrained(
        tmp_path / "gpt2"
    )
    with pytest.raises(ValueError, match="'gpt2' checkpoint, which is not an encoder-decoder"):
        convert_checkpoint(tmp_path / "gpt2", tmp_path / "out", log=None)
    assert main(["convert", str(tmp_path / "gpt2"), str(tmp_path / "out")]) == 2
    assert "not an encoder-decoder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["convert", str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert "cannot read a model config" in capsys.readouterr().err


def test_cli_converts_a_saved_checkpoint_that_then_loads_with_the_auto_classes(tmp_path: Path, capsys) -> None:
    source, tokenizer = vanilla(), SymbolInvTokenizer.from_preset("prop")
    source.save_pretrained(tmp_path / "vanilla")
    tokenizer.save_pretrained(tmp_path / "vanilla")
    assert (
        main(
            [
                "convert",
                str(tmp_path / "vanilla"),
                str(tmp_path / "sit"),
                "--actual",
                "a",
                "--placeholder",
                "b",
                "--symbols",
                r"[a-z]\w*",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "placeholder row <- row of 'b'" in printed and "dropped rows: 3 other symbols (c, d, e)" in printed
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "sit").eval()
    loaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path / "sit")
    assert isinstance(model, SymbolInvForConditionalGeneration) and model.config.embedding_type == "streams"
    assert "symbolinv convert" in (tmp_path / "sit" / "README.md").read_text()
    in_memory, _, _ = convert_family_model(source, tokenizer)
    batch = loaded_tokenizer("&req|grant!p12", return_tensors="pt")  # names the vanilla tokenizer did not accept
    with torch.no_grad():
        torch.testing.assert_close(
            model(**batch, decoder_input_ids=torch.tensor([[2, 10]])).logits,
            in_memory.eval()(**batch, decoder_input_ids=torch.tensor([[2, 10]])).logits,
        )
    assert (
        main(["convert", str(tmp_path / "vanilla"), str(tmp_path / "bad"), "--actual", "a", "--placeholder", "a"]) == 2
    )


@pytest.mark.slow
def test_fine_tuning_a_converted_model_for_one_epoch(prop_data: Path, tmp_path: Path, capsys) -> None:
    source = vanilla(
        rows=3, d_model=32, encoder_attention_heads=4, decoder_attention_heads=4, dropout=0.0, loss_type="cross_entropy"
    )
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    source.save_pretrained(tmp_path / "vanilla")
    tokenizer.save_pretrained(tmp_path / "vanilla")
    assert main(["convert", str(tmp_path / "vanilla"), str(tmp_path / "sit")]) == 0
    start = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "sit").state_dict()
    assert (
        main(
            [
                "train",
                "--task",
                "prop",
                "--init-from",
                str(tmp_path / "sit"),
                "--data",
                str(prop_data),
                "--output",
                str(tmp_path / "tuned"),
                "--epochs",
                "1",
                "--batch-size",
                "50",
                "--eval-samples",
                "4",
                "--lr",
                "1e-3",
            ]
        )
        == 0
    )
    assert "1 epoch(s) of 200 samples = 4 steps of batch 50 x 1" in capsys.readouterr().out
    tuned = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "tuned" / "model")
    assert tuned.config.embedding_type == "streams" and tuned.config.d_model == 32
    changed = [name for name, tensor in tuned.state_dict().items() if not torch.equal(tensor, start[name])]
    assert "model.shared.weight" in changed and len(changed) > len(start) // 2
    assert "fine-tuned from" in (tmp_path / "tuned" / "model" / "README.md").read_text()
    assert (
        main(
            [
                "train",
                "--task",
                "prop",
                "--init-from",
                str(tmp_path / "sit"),
                "--data",
                str(prop_data),
                "--output",
                str(tmp_path / "bad"),
                "--set",
                "d_model=8",
            ]
        )
        == 2
    )
