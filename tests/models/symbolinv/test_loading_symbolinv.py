"""Strict loading: a checkpoint whose config, weights and tokenizer disagree does not load.

The family-neutral properties (every config.json field mutated, NaN weights, another architecture's weights,
a truncated file) come from the shared tester; the SIT's own cases (named edits, tokenizers) are here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from testers import StrictLoadingTesterMixin
from transformers import AutoModelForSeq2SeqLM

from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer

TINY = dict(
    d_model=16,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    init_std=0.3,
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, dict, torch.Tensor]:
    folder = tmp_path_factory.mktemp("strict")
    torch.manual_seed(0)
    model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("ltl-best", **TINY)).eval()
    tokenizer = SymbolInvTokenizer.from_preset("ltl")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    inputs = dict(tokenizer(["&aXb", "U!cd"], text_target=["a;b;{1}", "d;{1}"], padding=True, return_tensors="pt"))
    with torch.no_grad():
        logits = model(**inputs).logits
    return folder, inputs, logits


class TestSymbolInvStrictLoading(StrictLoadingTesterMixin):
    """The shared strict-loading properties on a tiny ltl-best checkpoint (its tokenizer saved with it)."""

    auto_class_name = "AutoModelForSeq2SeqLM"
    min_refused_fields = 20
    # Fields whose edit is reported through the field they determine.
    derived_fields = {
        "vocabulary": ("token_arities", "num_base_tokens"),
        "num_base_tokens": ("vocab_size", "token_arities"),
    }

    def make_model(self) -> SymbolInvForConditionalGeneration:
        return SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("ltl-best", **TINY)).eval()

    def make_tokenizer(self) -> SymbolInvTokenizer:
        return SymbolInvTokenizer.from_preset("ltl")

    def make_inputs(self, model) -> dict:
        tokenizer = self.make_tokenizer()
        batch = tokenizer(["&aXb", "U!cd"], text_target=["a;b;{1}", "d;{1}"], padding=True, return_tensors="pt")
        # No labels: the logits are then the first output in return_dict=False form too.
        labels = batch.pop("labels")
        return {**batch, "decoder_input_ids": model.prepare_decoder_input_ids_from_labels(labels)}


@pytest.mark.parametrize(
    "field, value",
    [
        ("stream_attention", "EP-EA-DP-CP"),
        ("stream_aggregation", "complex"),
        ("encoder_layers", 1),
        ("vocab_size", 40),
        ("encoder_position_encoding", "rope"),
        ("decoder_position_encoding", "sinusoidal"),
        ("embedding_scale", True),
        ("loss_type", "adacos"),
    ],
)
def test_named_config_edits_are_refused(saved, field: str, value: object) -> None:
    folder, _, _ = saved
    config_file = folder / "config.json"
    original = config_file.read_text()
    try:
        config_file.write_text(json.dumps({**json.loads(original), field: value}))
        with pytest.raises(ValueError, match=rf"{field} = .*weights saved with"):
            AutoModelForSeq2SeqLM.from_pretrained(folder)
    finally:
        config_file.write_text(original)


def test_a_value_of_the_wrong_type_fails_at_load(saved) -> None:
    folder, _, _ = saved
    config_file = folder / "config.json"
    original = config_file.read_text()
    try:
        config_file.write_text(json.dumps({**json.loads(original), "dropout": "lots"}))
        with pytest.raises(ValueError, match="SymbolInvConfig.dropout: must be float or int, got 'lots'"):
            AutoModelForSeq2SeqLM.from_pretrained(folder)
        config_file.write_text(json.dumps({**json.loads(original), "d_modle": 32}))
        with pytest.raises(ValueError, match="unknown field.*d_modle"):
            AutoModelForSeq2SeqLM.from_pretrained(folder)
    finally:
        config_file.write_text(original)


def test_a_folder_without_tokenizer_config_is_refused_and_mismatches_are_named(saved, tmp_path) -> None:
    from transformers import AutoTokenizer, pipeline

    folder, _, _ = saved
    for name in folder.iterdir():
        if name.name != "tokenizer_config.json":
            (tmp_path / name.name).write_bytes(name.read_bytes())
    with pytest.raises(ValueError, match="has no tokenizer_config.json"):
        AutoTokenizer.from_pretrained(tmp_path)
    SymbolInvTokenizer.from_preset("prop").save_pretrained(tmp_path)  # the wrong task's tokenizer
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"tokenizer \('prop' vocabulary.*does not match the model \('ltl' vocabulary"):
        AutoTokenizer.from_pretrained(tmp_path).check_matches(model.config)
    with pytest.raises(ValueError, match="does not match the model"):
        pipeline("symbolic-generation", model=str(tmp_path), trust_remote_code=True)
    SymbolInvTokenizer.from_preset("ltl").check_matches(model.config)  # the right one passes


def test_float_input_ids_are_refused_by_name(saved) -> None:
    folder, inputs, _ = saved
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    with pytest.raises(ValueError, match="input_ids must hold integer token ids, got dtype torch.float32"):
        model(input_ids=inputs["input_ids"].float(), decoder_input_ids=inputs["input_ids"][:, :2])
