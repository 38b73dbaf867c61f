"""Trained checkpoints that ship with the package (half-precision safetensors, a few MB each).

``symbolinv solve`` uses them when no model is given, so a new install answers with a trained model
at once. Each folder is a saved model of its family, its code included (kept equal to the package's by
``python -m hf_symbolinv.utils.check_copies``), so it also loads with ``trust_remote_code=True`` where the package is
not installed::

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from hf_symbolinv.pretrained import shipped_model

    path = shipped_model("prop-small")  # or a task: shipped_model("ltl")
    model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
    tokenizer = AutoTokenizer.from_pretrained(path)

How each was trained and what it scores is in its model card (``README.md``).
"""

from __future__ import annotations

from pathlib import Path

PRETRAINED_DIR = Path(__file__).resolve().parent

#: The shipped checkpoints by name, each with its task.
SHIPPED: dict[str, str] = {
    "prop-small": "prop",
    "ltl-small": "ltl",
    "prop-best": "prop",
    "ltl-best": "ltl",
    "clutrr": "clutrr",
}
#: The shipped tree models (the tree route: ``pipeline("tree-transduction")``), by name, each with its task.
SHIPPED_TREES: dict[str, str] = {"active-logical": "tree"}
#: The checkpoint a task's inputs get by default (``symbolinv solve`` may choose another, see :func:`model_for`).
#: LTL: ``ltl-best`` (trained on formulas of up to 35 nodes) answers small formulas as well as ``ltl-small`` on 1-3
#: symbols and better on 4-8 (95.0% against 95.4% correct on 1-3, 97.7% against 93.3% on 4-8; the cards have them).
DEFAULT_FOR_TASK: dict[str, str] = {"prop": "prop-small", "ltl": "ltl-best"}
#: The largest formulas ``prop-small`` was trained on; larger ones go to ``prop-best``, trained on formulas of up
#: to 35 nodes (not measured against ``prop-small`` there: see ``model_for``).
SMALL_MODEL_MAX_SIZE = 20


def shipped_model(name: str) -> Path:
    """The folder of the shipped checkpoint ``name`` (``prop-small``, ``ltl-small``, ``prop-best``, ``ltl-best``,
    ``clutrr``, ``active-logical``), or of the default checkpoint of a task (``prop``, ``ltl``); a ``ValueError`` names
    what ships."""
    name = DEFAULT_FOR_TASK.get(name, name)
    if name not in SHIPPED and name not in SHIPPED_TREES:
        have = ", ".join([*sorted(SHIPPED), *sorted(SHIPPED_TREES), *sorted(DEFAULT_FOR_TASK)])
        raise ValueError(f"no trained model {name!r} ships with the package (shipped: {have}); pass a MODEL folder")
    return PRETRAINED_DIR / name


def model_for(task: str, size: int) -> Path:
    """The shipped checkpoint that answers an input of ``task`` with ``size`` nodes best: the task's default, except
    for propositional formulas larger than the small model's training formulas, which go to ``prop-best``."""
    if task == "prop" and size > SMALL_MODEL_MAX_SIZE:
        return shipped_model("prop-best")
    return shipped_model(task)


__all__ = ["DEFAULT_FOR_TASK", "PRETRAINED_DIR", "SHIPPED", "SHIPPED_TREES", "model_for", "shipped_model"]
