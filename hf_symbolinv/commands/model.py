"""The old module of the model subcommands (``train``, ``evaluate``, ``solve``, ``convert``), kept so that code
written against it still imports: its commands' parser and handler pairs, and the helpers the commands share, are
the ones of the modules that now hold them (``commands/train.py``, ``evaluate.py``, ``solve.py``, ``convert.py``,
``common.py``)."""

from __future__ import annotations

from ..routes.common import check_overrides, load_data, load_split
from .convert import add_convert_parser, run_convert
from .evaluate import DEFAULT_ALPHA_SYMBOLS, add_evaluate_parser, run_evaluate
from .solve import add_solve_parser, run_solve
from .train import add_train_parser, run_train

__all__ = [
    "DEFAULT_ALPHA_SYMBOLS",
    "add_convert_parser",
    "add_evaluate_parser",
    "add_solve_parser",
    "add_train_parser",
    "check_overrides",
    "load_data",
    "load_split",
    "run_convert",
    "run_evaluate",
    "run_solve",
    "run_train",
]
