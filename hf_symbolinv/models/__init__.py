"""The model families. Importing this package imports every family and registers it with the Auto
classes and the pipeline registry; ``save_pretrained`` then also writes ``auto_map`` and copies the
family's files next to the weights, so a saved folder loads with ``trust_remote_code=True`` where this
package is not installed."""

from __future__ import annotations

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
)

from . import dte, folnet, symbolinv, symbolinv_wrapper
from .dte import DTEConfig, DTEForTreeTransduction
from .dte.pipeline_dte import register_pipeline as register_tree_pipeline
from .folnet import (
    FOLNetConfig,
    FOLNetForConditionalGeneration,
    FOLNetForMaskedLM,
    FOLNetForSequenceClassification,
    FOLNetModel,
)
from .symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvModel, SymbolInvTokenizer
from .symbolinv.pipeline_symbolinv import register_pipeline
from .symbolinv_wrapper import SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration

FAMILIES = {"symbolinv": symbolinv, "symbolinv_wrapper": symbolinv_wrapper, "folnet": folnet, "dte": dte}


def _register() -> None:
    AutoConfig.register(SymbolInvConfig.model_type, SymbolInvConfig, exist_ok=True)
    AutoModel.register(SymbolInvConfig, SymbolInvModel, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvConfig, SymbolInvForConditionalGeneration, exist_ok=True)
    AutoTokenizer.register(SymbolInvConfig, slow_tokenizer_class=SymbolInvTokenizer, exist_ok=True)
    SymbolInvConfig.register_for_auto_class()
    SymbolInvModel.register_for_auto_class("AutoModel")
    SymbolInvForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
    SymbolInvTokenizer.register_for_auto_class("AutoTokenizer")
    register_pipeline()
    # The wrapper's tokenizer is the wrapped model's own.
    AutoConfig.register(SymbolInvWrapperConfig.model_type, SymbolInvWrapperConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration, exist_ok=True)
    SymbolInvWrapperConfig.register_for_auto_class()
    SymbolInvWrapperForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
    # FOLNet: the encoder, its two heads and the encoder-decoder share one config class.
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
    # DTE: trees in, trees out; no task-specific Auto class fits, so the transducer is the family's AutoModel.
    AutoConfig.register(DTEConfig.model_type, DTEConfig, exist_ok=True)
    DTEConfig.register_for_auto_class()
    AutoModel.register(DTEConfig, DTEForTreeTransduction, exist_ok=True)
    DTEForTreeTransduction.register_for_auto_class("AutoModel")
    register_tree_pipeline()


_register()
