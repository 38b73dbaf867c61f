"""The model families. Importing this package imports every built-in family and registers it (its ``family.py``,
see :mod:`.registry`): with the CLI, training and evaluation, and with the Auto classes and the pipeline registry;
``save_pretrained`` then also writes ``auto_map`` and copies the family's files next to the weights, so a saved
folder loads with ``trust_remote_code=True`` where this package is not installed."""

from __future__ import annotations

import importlib

from .dte import DTEConfig, DTEForTreeTransduction
from .folnet import (
    FOLNetConfig,
    FOLNetForConditionalGeneration,
    FOLNetForMaskedLM,
    FOLNetForSequenceClassification,
    FOLNetModel,
)
from .registry import families, get_family, register_family
from .symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvModel, SymbolInvTokenizer
from .symbolinv_wrapper import SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration

#: The built-in families, each a folder with its ``family.py``: adding a family is one more name here.
BUILT_IN_FAMILIES = ("symbolinv", "symbolinv_wrapper", "folnet", "dte")
for _name in BUILT_IN_FAMILIES:
    importlib.import_module(f".{_name}.family", __name__)  # registers the family

__all__ = [
    "BUILT_IN_FAMILIES",
    "DTEConfig",
    "DTEForTreeTransduction",
    "FOLNetConfig",
    "FOLNetForConditionalGeneration",
    "FOLNetForMaskedLM",
    "FOLNetForSequenceClassification",
    "FOLNetModel",
    "SymbolInvConfig",
    "SymbolInvForConditionalGeneration",
    "SymbolInvModel",
    "SymbolInvTokenizer",
    "SymbolInvWrapperConfig",
    "SymbolInvWrapperForConditionalGeneration",
    "families",
    "get_family",
    "register_family",
]
