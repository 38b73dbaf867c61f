"""Strict loading: a checkpoint whose config, weights and tokenizer disagree does not load.

Every config.json field is mutated one at a time against a saved tiny checkpoint: each mutation either
loads to identical logits or fails with an error naming the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
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


def mutations(value: object) -> list[object]:
    """Values of the same kind as ``value`` but different, and one of the wrong kind."""
    if isinstance(value, bool):
        return [not value, "yes"]
    if isinstance(value, int):
        return [value + 1, max(value - 1, 0) if value else 2, "lots"]
    if isinstance(value, float):
        return [value * 2 + 0.125, "lots"]
    if isinstance(value, str):
        return [value + "x", "EP-EA-DP-CP" if "-" in value else "rope"]
    if isinstance(value, list):
        return [value[:-1], [*value, 1]] if value else [[1]]
    if isinstance(value, dict):
        return [{**value, "unexpected": 1}]
    if value is None:
        return [3]
    return []


def config_fields(folder: Path) -> list[tuple[str, object]]:
    data = json.loads((folder / "config.json").read_text())
    # model_type names the family: another value is another model, which AutoConfig resolves (or refuses) itself.
    data.pop("model_type")
    return [(field, mutated) for field, value in sorted(data.items()) for mutated in mutations(value)]


def test_every_config_field_mutated_loads_identically_or_fails_naming_the_field(saved) -> None:
    folder, inputs, expected = saved
    config_file = folder / "config.json"
    original = config_file.read_text()
    outcomes = {"identical": [], "refused": []}
    try:
        for field, mutated in config_fields(folder):
            data = json.loads(original)
            data[field] = mutated
            config_file.write_text(json.dumps(data))
            try:
                model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
            except (ValueError, TypeError, KeyError) as error:
                message = str(error)
                # A derived field (vocabulary -> token_arities, ...) may be named instead of the edited one.
                assert field in message or any(f in message for f in DERIVED.get(field, ())), (field, message)
                outcomes["refused"].append(field)
                continue
            with torch.no_grad():
                outputs = model(**inputs)
            logits = outputs.logits if hasattr(outputs, "logits") else outputs[1]  # return_dict=False: (loss, logits)
            assert torch.equal(logits, expected), f"{field}={mutated!r} loaded and changed the logits"
            outcomes["identical"].append(field)
    finally:
        config_file.write_text(original)
    assert len(outcomes["refused"]) >= 20 and outcomes["identical"], outcomes


#: Fields whose edit is reported through the field they determine.
DERIVED = {"vocabulary": ("token_arities", "num_base_tokens"), "num_base_tokens": ("vocab_size", "token_arities")}


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
        ("loss_type", "cross_entropy"),
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


def test_weights_with_nan_are_reported(saved, tmp_path) -> None:
    folder, _, _ = saved
    for name in folder.iterdir():
        (tmp_path / name.name).write_bytes(name.read_bytes())
    tensors = load_file(tmp_path / "model.safetensors")
    name = next(key for key, value in tensors.items() if value.dim() == 2)
    tensors[name][0, 0] = math.nan
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), framework="pt") as handle:
        metadata = handle.metadata()
    save_file(tensors, tmp_path / "model.safetensors", metadata=metadata)
    with pytest.raises(ValueError, match=f"NaN or infinite values in {name}"):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)


def test_weights_of_another_architecture_are_refused_naming_the_tensors(saved, tmp_path) -> None:
    folder, _, _ = saved
    other = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("ltl-best", **{**TINY, "encoder_layers": 1}))
    other.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    with pytest.raises(
        ValueError, match=r"encoder_layers = 2 \(weights saved with 1\).*missing weights: model\.encoder"
    ):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)


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


def test_a_truncated_weights_file_is_named(saved, tmp_path) -> None:
    folder, _, _ = saved
    for name in folder.iterdir():
        (tmp_path / name.name).write_bytes(name.read_bytes())
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match=f"cannot read the weights {weights}"):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)


def test_float_input_ids_are_refused_by_name(saved) -> None:
    folder, inputs, _ = saved
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    with pytest.raises(ValueError, match="input_ids must hold integer token ids, got dtype torch.float32"):
        model(input_ids=inputs["input_ids"].float(), decoder_input_ids=inputs["input_ids"][:, :2])
