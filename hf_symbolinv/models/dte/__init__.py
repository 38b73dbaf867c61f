"""The Differentiable Tree Experts family (model_type ``dte``): so far its configuration, bracketed
trees and the differentiable tree interpreter."""

from .bracketed import format_bracketed, parse_bracketed
from .configuration_dte import CONTROLLERS, TERMINATIONS, DTEConfig
from .tree_interpreter import Tree, TreeInterpreter, num_roles_for_depth

__all__ = [
    "CONTROLLERS",
    "TERMINATIONS",
    "DTEConfig",
    "Tree",
    "TreeInterpreter",
    "format_bracketed",
    "num_roles_for_depth",
    "parse_bracketed",
]
