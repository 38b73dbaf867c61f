"""FOLNetConfig: presets, validation naming the bad field, save/load of the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_symbolinv.models.folnet import PRESETS, FOLNetConfig


def test_base_preset_matches_the_paper() -> None:
    config = FOLNetConfig.from_preset("folnet-base")
    assert (config.num_layers, config.unary_dim, config.binary_dim) == (12, 768, 64)
    assert (config.ffn_dim, config.binary_ffn_dim, config.num_heads, config.head_dim) == (3072, 256, 12, 64)
    assert (config.max_relative_distance, config.vocab_size) == (64, 32768)


def test_large_preset_matches_the_paper() -> None:
    config = FOLNetConfig.from_preset("folnet-large")
    assert (config.num_layers, config.unary_dim, config.num_heads) == (24, 1024, 16)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds(name: str) -> None:
    assert FOLNetConfig.from_preset(name).model_type == "folnet"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"operators": ["join", "foo"]}, "FOLNetConfig.operators: unknown operator 'foo'"),
        ({"operators": []}, "FOLNetConfig.operators: empty"),
        ({"operators": ["join", "join", "assoc"]}, "FOLNetConfig.operators: duplicated"),
        ({"operators": ["assoc", "trans"]}, "FOLNetConfig.operators: .* no unary atom"),
        ({"operators": ["join", "bool"]}, "FOLNetConfig.operators: .* no binary atom"),
        ({"num_heads": 0}, "FOLNetConfig.num_heads"),
        ({"head_dim": "64"}, "FOLNetConfig.head_dim"),
        ({"dropout": 1.5}, "FOLNetConfig.dropout"),
    ],
)
def test_bad_fields_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FOLNetConfig.from_preset("folnet-tiny", **kwargs)


def test_unknown_preset() -> None:
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        FOLNetConfig.from_preset("nope")


def test_dual_branch_transformer_ablation_is_valid() -> None:
    assert FOLNetConfig.from_preset("folnet-tiny", operators=["join", "assoc"]).operators == ["join", "assoc"]


def test_round_trip(tmp_path: Path) -> None:
    config = FOLNetConfig.from_preset("folnet-tiny", operators=["join", "mu", "assoc", "prod"])
    config.save_pretrained(tmp_path)
    loaded = FOLNetConfig.from_pretrained(tmp_path)
    assert loaded.to_dict() == config.to_dict()


def test_autoconfig_loads_it(tmp_path: Path) -> None:
    from transformers import AutoConfig

    import hf_symbolinv.models  # noqa: F401  (registers every family with the Auto classes)

    FOLNetConfig.from_preset("folnet-tiny").save_pretrained(tmp_path)
    assert isinstance(AutoConfig.from_pretrained(tmp_path), FOLNetConfig)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"decoder_layers": 0}, "decoder_layers"),
        ({"activated_operators": ["bool"]}, "activated_operators"),
        ({"activated_operators": ["nope"]}, "activated_operators"),
        ({"eos_token_id": -1}, "eos_token_id"),
        ({"decoder_start_token_id": 10**6}, "decoder_start_token_id"),
        ({"hidden_act": "tanh"}, "hidden_act"),
        ({"classifier_dropout": 1.5}, "classifier_dropout"),
    ],
)
def test_model_fields_are_validated(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"FOLNetConfig.{field}"):
        FOLNetConfig(**kwargs)


def test_generation_fields_have_defaults() -> None:
    config = FOLNetConfig(num_layers=3)
    assert config.decoder_layers == 3 and config.decoder_start_token_id == config.pad_token_id == 0
    assert config.use_cache and config.tie_word_embeddings and not config.is_decoder
    assert FOLNetConfig(decoder_layers=1, decoder_start_token_id=2).decoder_start_token_id == 2
