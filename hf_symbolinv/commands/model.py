"""The old module of the model subcommands (``train``, ``evaluate``, ``solve``, ``convert``), kept so that code
written against it still imports: each name is the one of the module that now holds it (``commands/train.py``,
``evaluate.py``, ``solve.py``, ``convert.py`` and ``common.py``)."""

from __future__ import annotations

from .common import (
    check_overrides,
    checkpoint_problem,
    checkpoint_writes,
    load_data,
    load_split,
    resume_mismatch,
    save_trained_model,
    stopped_by_time_limit,
)
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
    "checkpoint_problem",
    "checkpoint_writes",
    "load_data",
    "load_split",
    "resume_mismatch",
    "run_convert",
    "run_evaluate",
    "run_solve",
    "run_train",
    "save_trained_model",
    "stopped_by_time_limit",
]
