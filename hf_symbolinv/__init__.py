"""hf_symbolinv: the Symbol-Invariant Transformer as a Hugging Face model family.

Importing the package registers ``symbolinv`` with ``AutoConfig``, ``AutoModel``,
``AutoModelForSeq2SeqLM`` and ``AutoTokenizer``. The logic engine (``hf_symbolinv.logic``) is plain
Python: its modules import no torch.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "SymbolInvConfig": "configuration_symbolinv",
    "PRESETS": "configuration_symbolinv",
    "SymbolInvModel": "modeling_symbolinv",
    "SymbolInvForConditionalGeneration": "modeling_symbolinv",
    "SymbolInvPreTrainedModel": "modeling_symbolinv",
    "SymbolInvTokenizer": "tokenization_symbolinv",
    "SymbolInvWrapperConfig": "configuration_symbolinv_wrapper",
    "SymbolInvWrapperForConditionalGeneration": "modeling_symbolinv_wrapper",
    "SymbolicGenerationPipeline": "pipeline_symbolinv",
    "SymbolRule": "symbols",
    "VOCABULARIES": "vocabulary",
}
_registered = False


def register() -> None:
    """Register the family with the Auto classes and the pipeline registry (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

    from .configuration_symbolinv import SymbolInvConfig
    from .configuration_symbolinv_wrapper import SymbolInvWrapperConfig
    from .modeling_symbolinv import SymbolInvForConditionalGeneration, SymbolInvModel
    from .modeling_symbolinv_wrapper import SymbolInvWrapperForConditionalGeneration
    from .pipeline_symbolinv import register_pipeline
    from .tokenization_symbolinv import SymbolInvTokenizer

    AutoConfig.register(SymbolInvConfig.model_type, SymbolInvConfig, exist_ok=True)
    AutoModel.register(SymbolInvConfig, SymbolInvModel, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvConfig, SymbolInvForConditionalGeneration, exist_ok=True)
    AutoTokenizer.register(SymbolInvConfig, slow_tokenizer_class=SymbolInvTokenizer, exist_ok=True)
    # The wrapper around a pretrained seq2seq checkpoint (its tokenizer is the wrapped model's own).
    AutoConfig.register(SymbolInvWrapperConfig.model_type, SymbolInvWrapperConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration, exist_ok=True)
    # save_pretrained then copies the model files next to the weights and writes auto_map, so the
    # folder loads with trust_remote_code=True where this package is not installed.
    SymbolInvConfig.register_for_auto_class()
    SymbolInvModel.register_for_auto_class("AutoModel")
    SymbolInvForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
    SymbolInvTokenizer.register_for_auto_class("AutoTokenizer")
    SymbolInvWrapperConfig.register_for_auto_class()
    SymbolInvWrapperForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
    register_pipeline()
    _registered = True


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Data-generation worker processes only need the logic engine: they skip the registration, and so
# never import torch (see dataset_builders.common.spawn_pool).
if os.environ.get("HF_SYMBOLINV_LIGHT_IMPORT") != "1":
    register()
