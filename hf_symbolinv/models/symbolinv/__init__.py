"""The Symbol-Invariant Transformer family (model_type ``symbolinv``).

The files of this folder are the family's Hub files: ``save_pretrained`` copies the ones the model,
tokenizer and pipeline import next to the weights, so they import only their siblings.
"""

from .configuration_symbolinv import PRESETS, SymbolInvConfig
from .modeling_symbolinv import (
    SymbolInvEncoder,
    SymbolInvForConditionalGeneration,
    SymbolInvModel,
    SymbolInvPreTrainedModel,
)
from .pipeline_symbolinv import PIPELINE_TASK, SymbolicGenerationPipeline
from .symbols import SymbolRule
from .tokenization_symbolinv import SymbolInvTokenizer
from .vocabulary import VOCABULARIES, get_vocabulary

__all__ = [
    "PIPELINE_TASK",
    "PRESETS",
    "VOCABULARIES",
    "SymbolInvConfig",
    "SymbolInvEncoder",
    "SymbolInvForConditionalGeneration",
    "SymbolInvModel",
    "SymbolInvPreTrainedModel",
    "SymbolInvTokenizer",
    "SymbolRule",
    "SymbolicGenerationPipeline",
    "get_vocabulary",
]
