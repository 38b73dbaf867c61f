"""The Differentiable Tree Experts family (model_type ``dte``): the Differentiable Tree Machine, the
Differentiable Tree Experts and their terminating variant as one model (``DTEForTreeTransduction``), its
configuration, the differentiable tree interpreter and the tree tokenizer. The files of this folder are the
family's Hub files: they import only their siblings."""

from .bracketed import format_bracketed, parse_bracketed
from .configuration_dte import CONTROLLERS, TERMINATIONS, DTEConfig
from .modeling_dte import DTEForTreeTransduction, DTEOutput, DTEPreTrainedModel
from .tokenization_dte import DTETreeTokenizer
from .tree_interpreter import Tree, TreeInterpreter, num_roles_for_depth

__all__ = [
    "CONTROLLERS",
    "TERMINATIONS",
    "DTEConfig",
    "DTEForTreeTransduction",
    "DTEOutput",
    "DTEPreTrainedModel",
    "DTETreeTokenizer",
    "Tree",
    "TreeInterpreter",
    "format_bracketed",
    "num_roles_for_depth",
    "parse_bracketed",
]
