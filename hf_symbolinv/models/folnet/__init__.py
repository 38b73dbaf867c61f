"""The FOLNet family (model_type ``folnet``): neural logic operators forward-chained over layers.

The seven operators of the paper's Table 2 (``operators.py``), the configuration, and the models: the
encoder (``FOLNetModel``), its masked-LM and sequence-classification heads, and the encoder-decoder of
Appendix A.5 (``FOLNetForConditionalGeneration``). The files of this folder are the family's Hub files:
``save_pretrained`` copies them next to the weights, so they import only their siblings.
"""

from .configuration_folnet import PRESETS, FOLNetConfig
from .modeling_folnet import (
    FOLNetForConditionalGeneration,
    FOLNetForMaskedLM,
    FOLNetForSequenceClassification,
    FOLNetModel,
    FOLNetPreTrainedModel,
)
from .operators import OPERATORS, folnet_activation

__all__ = [
    "OPERATORS",
    "PRESETS",
    "FOLNetConfig",
    "FOLNetForConditionalGeneration",
    "FOLNetForMaskedLM",
    "FOLNetForSequenceClassification",
    "FOLNetModel",
    "FOLNetPreTrainedModel",
    "folnet_activation",
]
