"""Evaluation, by route: judging answers with the task's checker, generating answers, alpha-covariance, reports and
heatmaps (``seq2seq.py``), the tree models' answers (``tree.py``), answering one input (``solve.py``), and the
model-free metrics (``metrics.py``: alpha-covariance over renamings, edit distance).

The names of ``seq2seq.py`` are re-exported lazily: it imports torch, and ``metrics`` (used by the copy
task, which the light CLI path reaches) must stay importable without it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..utils.metrics import alpha_covariance, alpha_covariance_by_renaming, edit_distance

_LAZY = (
    "EvaluationReport",
    "alpha_covariance_of",
    "evaluate_answers",
    "evaluate_model",
    "generate_answers",
    "input_size",
    "judge",
    "model_predictor",
    "plot_heatmap",
    "save_heatmap",
    "slot_renamings",
)

__all__ = ["alpha_covariance", "alpha_covariance_by_renaming", "edit_distance", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(".seq2seq", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
