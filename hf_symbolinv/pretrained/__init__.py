"""Trained checkpoints that ship with the package (half-precision safetensors, a few MB each).

``symbolinv solve`` uses them when no model is given, so a new install answers with a trained model
at once. Each folder loads like any saved model of its family (the package registers the classes)::

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from hf_symbolinv.pretrained import shipped_model

    path = shipped_model("prop")
    model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
    tokenizer = AutoTokenizer.from_pretrained(path)

How each was trained and what it scores is in its model card (``README.md``).
"""

from __future__ import annotations

from pathlib import Path

PRETRAINED_DIR = Path(__file__).resolve().parent

#: The shipped checkpoint of each task. LTL has none yet: the GPU run of ``ltl-best`` did not learn the
#: task in the device time it had (see ``benchmarks/results/gpu_training/RESULTS.md``).
SHIPPED: dict[str, str] = {"prop": "prop-best"}


def shipped_model(task: str) -> Path:
    """The folder of the trained checkpoint that ships for ``task``; a ``ValueError`` names the tasks
    that have one."""
    if task not in SHIPPED:
        have = ", ".join(sorted(SHIPPED))
        raise ValueError(f"no trained {task} model ships with the package (shipped: {have}); pass a MODEL folder")
    return PRETRAINED_DIR / SHIPPED[task]


__all__ = ["PRETRAINED_DIR", "SHIPPED", "shipped_model"]
