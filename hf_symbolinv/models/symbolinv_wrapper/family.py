"""The wrapper family (a pretrained encoder-decoder with symbol streams) as the package knows it (see
:mod:`hf_symbolinv.models.registry`). It is made by ``symbolinv convert``-style wrapping in Python, not from a
preset, and reads text with the wrapped model's own tokenizer: it has no task vocabulary, so the CLI's train,
evaluate and solve refuse it (in :func:`hf_symbolinv.models.folders.load_folder`). Not a Hub file."""

from __future__ import annotations

from typing import Any

from ..registry import Family, register_family
from .configuration_symbolinv_wrapper import SymbolInvWrapperConfig


def _no_preset(preset: str, task: str, overrides: dict[str, Any], options: dict[str, Any]) -> Any:
    raise ValueError("the wrapper family has no presets: wrap a pretrained model in Python")


def _no_tokenizer(config: Any, task: str) -> Any:
    raise ValueError("a wrapped model reads text with the wrapped model's own tokenizer")


def _no_card(config: Any, task: str, fields: dict[str, Any]) -> str:
    raise ValueError("a wrapped model has no task: it gets no task model card")


def register_auto() -> None:
    # The wrapper's tokenizer is the wrapped model's own.
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    from .modeling_symbolinv_wrapper import SymbolInvWrapperForConditionalGeneration

    AutoConfig.register(SymbolInvWrapperConfig.model_type, SymbolInvWrapperConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration, exist_ok=True)
    SymbolInvWrapperConfig.register_for_auto_class()
    SymbolInvWrapperForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")


FAMILY = Family(
    model_type=SymbolInvWrapperConfig.model_type,
    name="Symbol-invariant wrapper",
    presets=(),
    route="seq2seq",
    config_class=SymbolInvWrapperConfig,
    new_config=_no_preset,
    new_tokenizer=_no_tokenizer,
    card=_no_card,
    register_auto=register_auto,
)
register_family(FAMILY)
