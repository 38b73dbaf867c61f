"""Every family's config is checked by one mechanism, from its fields' declarations (``config_fields.py``)."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from hf_symbolinv.models import DTEConfig, FOLNetConfig, SymbolInvConfig, SymbolInvWrapperConfig
from hf_symbolinv.models.symbolinv.config_fields import DTYPE_NAMES, architecture_fields, field_types, required_fields

CONFIGS = (SymbolInvConfig, FOLNetConfig, DTEConfig, SymbolInvWrapperConfig)
#: A value of no declared type but ``dict`` and ``Any``.
NOT_A_FIELD_VALUE = {"not": "a value"}


def _accepts_dict(kind: object) -> bool:
    return kind is typing.Any or dict in {typing.get_origin(arg) or arg for arg in (kind, *typing.get_args(kind))}


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_every_declared_field_refuses_a_value_of_another_type_naming_it(config_class: type) -> None:
    declared = field_types(config_class)
    assert len(declared) >= 6  # the family's own fields, read from the class
    for field, kind in declared.items():
        if _accepts_dict(kind):
            continue
        with pytest.raises(ValueError, match=rf"^{config_class.__name__}\.{field}: "):
            config_class(**{field: NOT_A_FIELD_VALUE})


@pytest.mark.parametrize(
    ("config_class", "field", "value"),
    [
        (SymbolInvConfig, "embedding_type", "stream"),
        (SymbolInvConfig, "decoder_position_encoding", "tree"),
        (FOLNetConfig, "hidden_act", "tanh"),
        (DTEConfig, "controller", "gru"),
        (SymbolInvWrapperConfig, "stream_scores", "probs"),
    ],
)
def test_a_value_outside_a_declared_choice_is_refused_listing_the_choices(
    config_class: type, field: str, value: str
) -> None:
    allowed = [arg for arg in typing.get_args(field_types(config_class)[field]) if isinstance(arg, str)]
    with pytest.raises(ValueError, match=rf"{config_class.__name__}\.{field}: unknown value '{value}'") as error:
        config_class(**{field: value})
    assert all(repr(choice) in str(error.value) for choice in allowed)


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_a_flag_is_not_a_number_nor_a_number_a_flag(config_class: type) -> None:
    for field, kind in field_types(config_class).items():
        if kind is bool:
            with pytest.raises(ValueError, match=rf"{field}: must be bool"):
                config_class(**{field: 1})


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_an_unknown_dtype_name_is_refused_naming_the_field(config_class: type) -> None:
    assert {"float32", "float16"} <= DTYPE_NAMES
    with pytest.raises(ValueError, match=rf"{config_class.__name__}\.dtype: unknown dtype 'float17'"):
        config_class(dtype="float17")


def test_the_architecture_fields_are_those_declared_as_such() -> None:
    for config_class in (SymbolInvConfig, FOLNetConfig, DTEConfig):
        marked = {f.name for f in dataclasses.fields(config_class) if f.metadata.get("architecture")}
        assert set(architecture_fields(config_class)) == marked
        assert "d_model" in marked or "num_heads" in marked
        assert "dropout" not in marked  # training settings do not change what the weights compute
        assert set(config_class().architecture_fields) >= marked
    assert set(required_fields(SymbolInvConfig)) <= set(architecture_fields(SymbolInvConfig))


def test_a_checkpoint_config_without_a_required_field_or_with_an_unknown_one_is_refused(tmp_path) -> None:
    written = SymbolInvConfig.from_preset("prop-small").to_dict()
    for field in required_fields(SymbolInvConfig):
        lacking = {key: value for key, value in written.items() if key != field}
        with pytest.raises(ValueError, match=f"lacks the field.*{field}"):
            SymbolInvConfig.from_dict(lacking)
    for config_class in CONFIGS:
        fields = {**config_class().to_dict(), "d_modle": 3}
        (tmp_path / "config.json").write_text(json.dumps(fields, default=str), encoding="utf-8")
        with pytest.raises(ValueError, match="unknown field.*d_modle"):
            config_class.from_pretrained(tmp_path)


def test_stream_attention_is_parsed_once_per_value() -> None:
    from hf_symbolinv.models.symbolinv import configuration_symbolinv

    config = SymbolInvConfig.from_preset("prop-small")
    assert config.attention_codes is config.attention_codes  # the same tuple: not parsed again at each access
    assert config.attention_codes == ("EP", "DP", "EA", "DA", "CP")
    assert configuration_symbolinv._PARSED_ATTENTION["EP-DP-EA-DA-CP"] is config.attention_codes
    with pytest.raises(ValueError, match="SymbolInvConfig.stream_attention: unknown code 'XP'"):
        SymbolInvConfig(stream_attention="EP-XP-CP")
