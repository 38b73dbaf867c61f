"""The FOLNet family (model_type ``folnet``): neural logic operators forward-chained over layers.

So far: the seven operators of the paper's Table 2 and the configuration; the models are to come.
"""

from .configuration_folnet import PRESETS, FOLNetConfig, register
from .operators import OPERATORS, folnet_activation

__all__ = ["OPERATORS", "PRESETS", "FOLNetConfig", "folnet_activation", "register"]
