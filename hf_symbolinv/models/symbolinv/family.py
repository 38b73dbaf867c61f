"""The Symbol-Invariant Transformer family as the package knows it (see :mod:`hf_symbolinv.models.registry`).

Not a Hub file: the modeling files never import it and ``save_pretrained`` does not copy it.
"""

from __future__ import annotations

from typing import Any

from ..registry import Family, register_family
from .configuration_symbolinv import PRESETS, SymbolInvConfig

#: What each embedding type is called in the card.
EMBEDDING_DESCRIPTIONS = {
    "streams": "one stream per symbol",
    "fixed": "fixed-embedding baseline",
    "alpha_renaming": "alpha-renaming baseline",
    "random": "random-embedding baseline",
}

INVARIANCE = {
    "streams": "This model is invariant to renaming by construction: renaming the symbols of an input renames "
    "the output the same way (up to float rounding), and it runs on symbol names and symbol counts "
    "it never saw in training. Each symbol has its own stream with shared weights, and the streams "
    "are combined only by commutative means.",
    "fixed": "This is a fixed-embedding baseline: it is **not** invariant to renaming, and it cannot run inputs "
    "with symbols beyond the rows it was built with.",
    "alpha_renaming": "This baseline was trained with random renamings of its fixed symbol rows: it is encouraged, "
    "not guaranteed, to be invariant, and it cannot run symbols beyond its rows.",
    "random": "This baseline uses random dual-part symbol embeddings (resampled in training): it generalises to "
    "new symbols in part, but is not guaranteed invariant; its answers depend on the random draw.",
}


def new_config(preset: str, task: str, overrides: dict[str, Any], options: dict[str, Any]) -> SymbolInvConfig:
    """A SIT preset is for one vocabulary; ``--embedding-type`` turns it into a baseline (per-stream attention only:
    the aggregated attention needs streams)."""
    from ...tasks import get_task

    overrides = dict(overrides)
    embedding_type = options.get("embedding_type")
    if embedding_type is not None:
        overrides["embedding_type"] = embedding_type
        if embedding_type != "streams":
            codes = SymbolInvConfig.from_preset(preset).attention_codes
            overrides.setdefault("stream_attention", "-".join(c for c in codes if c.endswith("P")))
    config = SymbolInvConfig.from_preset(preset, **overrides)
    if config.vocabulary != get_task(task).vocabulary:
        raise ValueError(f"preset `{preset}` is for the {config.vocabulary!r} vocabulary, not task {task!r}")
    return config


def new_tokenizer(config: Any, task: str) -> Any:
    from .tokenization_symbolinv import SymbolInvTokenizer

    return SymbolInvTokenizer.from_preset(config.vocabulary, max_symbols=config.num_symbol_slots)


def card(config: Any, task: str, fields: dict[str, Any]) -> str:
    from ...utils.model_card import render_card

    embedding_description = EMBEDDING_DESCRIPTIONS[config.embedding_type]
    aggregated = any(code.endswith("A") for code in config.attention_codes)
    return render_card(
        "template",
        **fields,
        title=f"Symbol-Invariant Transformer: {task}"
        if config.embedding_type == "streams"
        else f"{embedding_description.capitalize()}: {task}",
        embedding_description=embedding_description,
        embedding_type=config.embedding_type,
        stream_attention=config.stream_attention,
        stream_aggregation=(
            f"complex multiset pooling ({config.num_aggregation_states} states)"
            if config.stream_aggregation == "complex"
            else "mean"
        )
        if aggregated
        else "none (no aggregated attention)",
        d_model=config.d_model,
        layers=f"{config.encoder_layers}+{config.decoder_layers}",
        heads=config.encoder_attention_heads,
        ffn=config.encoder_ffn_dim,
        position_encodings=f"{config.encoder_position_encoding}, {config.decoder_position_encoding}",
        loss=config.loss_type,
        invariance=INVARIANCE[config.embedding_type],
    )


def register_auto() -> None:
    from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

    from .modeling_symbolinv import SymbolInvForConditionalGeneration, SymbolInvModel
    from .pipeline_symbolinv import register_pipeline
    from .tokenization_symbolinv import SymbolInvTokenizer

    AutoConfig.register(SymbolInvConfig.model_type, SymbolInvConfig, exist_ok=True)
    AutoModel.register(SymbolInvConfig, SymbolInvModel, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvConfig, SymbolInvForConditionalGeneration, exist_ok=True)
    AutoTokenizer.register(SymbolInvConfig, slow_tokenizer_class=SymbolInvTokenizer, exist_ok=True)
    SymbolInvConfig.register_for_auto_class()
    SymbolInvModel.register_for_auto_class("AutoModel")
    SymbolInvForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
    SymbolInvTokenizer.register_for_auto_class("AutoTokenizer")
    register_pipeline()


FAMILY = Family(
    model_type=SymbolInvConfig.model_type,
    name="Symbol-Invariant Transformer",
    presets=tuple(PRESETS),
    route="seq2seq",
    config_class=SymbolInvConfig,
    new_config=new_config,
    new_tokenizer=new_tokenizer,
    card=card,
    register_auto=register_auto,
    options=("embedding_type",),
    # Regularization of the training only: a fine-tuning or a long run continued from a saved model may drop it.
    fine_tune_fields=("dropout", "attention_dropout", "activation_dropout"),
)
register_family(FAMILY)
