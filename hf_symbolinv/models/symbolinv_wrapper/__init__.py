"""A pretrained encoder-decoder (BART, Marian, M2M100, T5, ...) run as a per-stream, renaming-invariant
model (model_type ``symbolinv_wrapper``). Its Hub files import only their siblings."""

from .configuration_symbolinv_wrapper import SymbolInvWrapperConfig
from .modeling_symbolinv_wrapper import SymbolInvWrapperForConditionalGeneration

__all__ = ["SymbolInvWrapperConfig", "SymbolInvWrapperForConditionalGeneration"]
