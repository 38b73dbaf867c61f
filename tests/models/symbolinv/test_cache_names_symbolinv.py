"""The cache's name on both sides of transformers' renaming of ``past_key_values`` to ``cache`` (5.24)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.modeling_outputs import ModelOutput, Seq2SeqLMOutput

from hf_symbolinv.models.symbolinv.cache_names import (
    CACHE_NAME,
    CACHE_NAMES,
    cache_field,
    cache_keyword,
    given_cache,
    output_cache,
)
from hf_symbolinv.models.symbolinv.modeling_symbolinv import SymbolInvSeq2SeqLMOutput, SymbolInvSeq2SeqOutput
from hf_symbolinv.models.symbolinv_wrapper.modeling_symbolinv_wrapper import SymbolInvWrapperSeq2SeqLMOutput


def test_the_name_is_the_one_of_the_installed_transformers() -> None:
    assert CACHE_NAME in CACHE_NAMES
    assert CACHE_NAME in {field.name for field in dataclasses.fields(Seq2SeqLMOutput)}


@dataclasses.dataclass
@cache_field
class _Output(ModelOutput):
    logits: torch.FloatTensor | None = None
    cache: EncoderDecoderCache | None = None
    hidden: torch.FloatTensor | None = None


@pytest.mark.parametrize("output_class", [_Output, SymbolInvSeq2SeqOutput, SymbolInvSeq2SeqLMOutput])
def test_an_output_declared_with_cache_has_the_installed_name_in_place(output_class: type) -> None:
    names = [field.name for field in dataclasses.fields(output_class)]
    assert CACHE_NAME in names and not (set(CACHE_NAMES) - {CACHE_NAME}) & set(names)
    assert [field.name for field in dataclasses.fields(_Output)] == ["logits", CACHE_NAME, "hidden"]
    assert [field.name for field in dataclasses.fields(SymbolInvWrapperSeq2SeqLMOutput)][2] == CACHE_NAME


def test_an_output_holds_and_gives_back_its_cache() -> None:
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    logits, hidden = torch.zeros(1, 2), torch.ones(1, 2)
    output = _Output(logits=logits, **cache_keyword(cache), hidden=hidden)
    assert output_cache(output) is cache and output[CACHE_NAME] is cache
    assert output.to_tuple()[0] is logits and output.to_tuple()[1] is cache and output.to_tuple()[2] is hidden
    assert output_cache(_Output(logits=logits)) is None


def test_a_class_without_a_cache_field_is_refused() -> None:
    with pytest.raises(TypeError, match="declares no field 'cache'"):

        @dataclasses.dataclass
        @cache_field
        class _NoCache(ModelOutput):
            logits: torch.FloatTensor | None = None


def test_a_forward_takes_the_cache_under_either_name_but_not_two_caches() -> None:
    cache, other = DynamicCache(), DynamicCache()
    assert given_cache(cache, None) is cache
    assert given_cache(None, cache) is cache
    assert given_cache(cache, cache) is cache
    assert given_cache(None, None) is None
    with pytest.raises(ValueError, match="same argument"):
        given_cache(cache, other)
