"""The FOLNet family as the package knows it (see :mod:`hf_symbolinv.models.registry`).

FOLNet presets are sizes: the task gives the vocabulary (its base tokens, symbol slots, the Polish-notation arities
that the invariant variant's parse-tree relations need, the special token ids of the tokenizer it shares with the
SIT). Not a Hub file: the modeling files never import it and ``save_pretrained`` does not copy it.
"""

from __future__ import annotations

from typing import Any

from ..registry import Family, register_family, with_fixed_fields
from .configuration_folnet import PRESETS, FOLNetConfig

FOLNET_INVARIANCE = {
    True: "This model is invariant to renaming by construction: every symbol has the same token embedding (one "
    "shared unary atom), symbols are told apart only by the binary atoms same_symbol(x, y) and their positions, "
    "and output symbols are chosen by pointing at input positions. Renaming the symbols of an input renames the "
    "output the same way (up to float rounding); it runs on symbol names and symbol counts it never saw in "
    "training.",
    False: "This FOLNet has one embedding row per symbol slot: it is **not** invariant to renaming, and it cannot "
    "run symbols beyond the rows it was built with.",
}


def new_config(preset: str, task: str, overrides: dict[str, Any], options: dict[str, Any]) -> FOLNetConfig:
    from ...tasks import get_task
    from ...tasks.vocabulary import EOS_ID, PAD_ID, START_ID, get_vocabulary
    from ..symbolinv.configuration_symbolinv import DEFAULT_MAX_SYMBOLS

    vocabulary = get_vocabulary(get_task(task).vocabulary)
    arities = vocabulary.arity_list()
    fields: dict[str, Any] = dict(
        vocabulary=vocabulary.name,
        num_base_tokens=vocabulary.num_base_tokens,
        # Tree relations need inputs that are whole Polish-notation formulas: tasks without operators have none.
        token_arities=arities if any(arities) else None,
        pad_token_id=PAD_ID,
        bos_token_id=START_ID,  # the tokenizer's; the Trainer would otherwise "align" it with a warning
        eos_token_id=EOS_ID,
        decoder_start_token_id=START_ID,
    )
    # vocab_size is the model's own choice: the base tokens and as many symbol slots as it wants.
    overrides = {"vocab_size": vocabulary.num_base_tokens + DEFAULT_MAX_SYMBOLS, **overrides}
    return FOLNetConfig.from_preset(preset, **with_fixed_fields(task, overrides, fields))


def new_tokenizer(config: Any, task: str) -> Any:
    from ..symbolinv.tokenization_symbolinv import SymbolInvTokenizer

    return SymbolInvTokenizer.from_preset(config.vocabulary, max_symbols=config.num_symbol_slots)


def card(config: Any, task: str, fields: dict[str, Any]) -> str:
    from ...utils.model_card import render_card

    invariant = bool(config.symbol_invariant)
    relations = ["clipped relative distance"]
    if invariant:
        relations.append("same symbol")
    if config.token_arities is not None:
        relations.append("parse-tree relation")
    return render_card(
        "folnet",
        **fields,
        title=f"FOLNet{' (renaming-invariant)' if invariant else ''}: {task}",
        variant="the renaming-invariant relational variant" if invariant else "one embedding per token",
        operators=", ".join(config.operators),
        unary_dim=config.unary_dim,
        heads=config.num_heads,
        head_dim=config.head_dim,
        binary_dim=config.binary_dim,
        layers=f"{config.num_layers}+{config.decoder_layers}",
        ffn=f"{config.ffn_dim} / {config.binary_ffn_dim}",
        max_relative_distance=config.max_relative_distance,
        base_relations=", ".join(relations),
        invariance=FOLNET_INVARIANCE[invariant],
    )


def register_auto() -> None:
    # The encoder, its two heads and the encoder-decoder share one config class.
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForMaskedLM,
        AutoModelForSeq2SeqLM,
        AutoModelForSequenceClassification,
    )

    from .modeling_folnet import (
        FOLNetForConditionalGeneration,
        FOLNetForMaskedLM,
        FOLNetForSequenceClassification,
        FOLNetModel,
    )

    AutoConfig.register(FOLNetConfig.model_type, FOLNetConfig, exist_ok=True)
    FOLNetConfig.register_for_auto_class()
    for auto, model_class in (
        (AutoModel, FOLNetModel),
        (AutoModelForMaskedLM, FOLNetForMaskedLM),
        (AutoModelForSequenceClassification, FOLNetForSequenceClassification),
        (AutoModelForSeq2SeqLM, FOLNetForConditionalGeneration),
    ):
        auto.register(FOLNetConfig, model_class, exist_ok=True)
        model_class.register_for_auto_class(auto.__name__)


FAMILY = Family(
    model_type=FOLNetConfig.model_type,
    name="FOLNet",
    presets=tuple(PRESETS),
    route="seq2seq",
    config_class=FOLNetConfig,
    new_config=new_config,
    new_tokenizer=new_tokenizer,
    card=card,
    register_auto=register_auto,
)
register_family(FAMILY)
