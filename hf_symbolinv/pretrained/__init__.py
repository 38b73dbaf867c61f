"""Trained checkpoints that ship with the package (half-precision safetensors, a few MB each).

``symbolinv solve`` uses them when no model is given, so a new install answers with a trained model
at once. Each folder holds weights, config, tokenizer files, generation config and card, and no code: whoever has
the folder has the package, whose classes load it::

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from hf_symbolinv.pretrained import shipped_model

    path = shipped_model("prop-small")  # or a task: shipped_model("ltl")
    model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
    tokenizer = AutoTokenizer.from_pretrained(path)

:func:`export_model` (``symbolinv export NAME DIR``) writes one as a self-contained Hub folder, its family's code
beside the weights, which loads with ``trust_remote_code=True`` where the package is not installed (and which
``push_to_hub`` or ``hf upload`` publishes as it is).

How each was trained and what it scores is in its model card (``README.md``).
"""

from __future__ import annotations

import os
from pathlib import Path

PRETRAINED_DIR = Path(__file__).resolve().parent

#: The shipped checkpoints by name, each with its task.
SHIPPED: dict[str, str] = {"prop-small": "prop", "ltl-small": "ltl", "prop-best": "prop", "ltl-best": "ltl"}
#: The checkpoint a task's inputs get by default (``symbolinv solve`` may choose another, see :func:`model_for`).
#: LTL: ``ltl-best`` (trained on formulas of up to 35 nodes) answers small formulas as well as ``ltl-small`` on 1-3
#: symbols and better on 4-8 (95.0% against 95.4% correct on 1-3, 97.7% against 93.3% on 4-8; the cards have them).
DEFAULT_FOR_TASK: dict[str, str] = {"prop": "prop-small", "ltl": "ltl-best"}
#: The largest formulas ``prop-small`` was trained on; larger ones go to ``prop-best``, trained on formulas of up
#: to 35 nodes (not measured against ``prop-small`` there: see ``model_for``).
SMALL_MODEL_MAX_SIZE = 20


def shipped_model(name: str) -> Path:
    """The folder of the shipped checkpoint ``name`` (``prop-small``, ``ltl-small``, ``prop-best``, ``ltl-best``), or
    of the default checkpoint of a task (``prop``, ``ltl``); a ``ValueError`` names what ships."""
    name = DEFAULT_FOR_TASK.get(name, name)
    if name not in SHIPPED:
        have = ", ".join([*sorted(SHIPPED), *sorted(DEFAULT_FOR_TASK)])
        raise ValueError(f"no trained model {name!r} ships with the package (shipped: {have}); pass a MODEL folder")
    return PRETRAINED_DIR / name


def model_for(task: str, size: int) -> Path:
    """The shipped checkpoint that answers an input of ``task`` with ``size`` nodes best: the task's default, except
    for propositional formulas larger than the small model's training formulas, which go to ``prop-best``."""
    if task == "prop" and size > SMALL_MODEL_MAX_SIZE:
        return shipped_model("prop-best")
    return shipped_model(task)


def export_model(name: str, destination: str | os.PathLike[str]) -> Path:
    """Write the shipped checkpoint ``name`` (or a task's default) into ``destination`` as a self-contained Hub
    folder: its weights (as stored), config, tokenizer, generation config and card, with its family's code and the
    config's ``auto_map`` (as ``save_pretrained`` writes any model of the package). A destination that holds files
    the package did not write is refused. Returns the folder written."""
    from ..models.folders import load_folder
    from ..utils.files import check_model_destination, save_model_folder

    folder = shipped_model(name)
    destination = Path(destination)
    check_model_destination(destination)
    model, tokenizer = load_folder(folder, dtype="auto")  # the stored float16, not a float32 copy twice the size
    save_model_folder(model, tokenizer, destination, card=(folder / "README.md").read_text(encoding="utf-8"))
    return destination


__all__ = ["DEFAULT_FOR_TASK", "PRETRAINED_DIR", "SHIPPED", "export_model", "model_for", "shipped_model"]
