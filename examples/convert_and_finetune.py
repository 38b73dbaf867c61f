"""Retrofit a fixed-embedding checkpoint into a Symbol-Invariant Transformer and fine-tune it (paper §5.8).

The recipe:

1. ``symbolinv convert SRC OUT/converted --actual a --placeholder b``: the SIT takes every tensor of
   the vanilla model; its *actual* row is the vanilla row of ``a``, its *placeholder* row the row of
   ``b`` (base rows are matched by token string). No parameter is added.
2. ``symbolinv train --init-from OUT/converted --epochs 1``: fine-tune with the Hugging Face
   ``Seq2SeqTrainer`` and the same optimiser settings as training from scratch (AdamW, lr 1e-3,
   weight decay 0.1, β2 0.95, cosine schedule with 5% warm-up, gradient clipping at 1.0). The paper
   fine-tunes for 1 and for 5 epochs of its training set (Table 4); it does not state a separate
   fine-tuning learning rate, so the training one is the default here.

The fine-tuned model lands in ``OUT/finetuned/model`` and loads with
``AutoModelForSeq2SeqLM.from_pretrained``. Example (after ``symbolinv data build prop-35 --out data/prop-35``
and training a vanilla model with ``symbolinv train --task prop --preset prop --embedding-type fixed
--set num_symbol_embeddings=5 --data data/prop-35 --output runs/vanilla``)::

    python examples/convert_and_finetune.py runs/vanilla/model --data data/prop-35 --task prop --out runs/converted

For a standard Hugging Face encoder-decoder (BART, Marian, ...) step 1 wraps the checkpoint as a
per-stream model instead; fine-tune that with your usual ``Seq2SeqTrainer`` script.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_symbolinv.models.symbolinv.conversion import convert_checkpoint
from hf_symbolinv.routes import TrainArguments, train


def convert_and_finetune(
    source: str | Path,
    output: str | Path,
    data: str | Path,
    task: str,
    actual: str = "a",
    placeholder: str = "b",
    epochs: float = 1.0,
    learning_rate: float = 1e-3,
    batch_size: int = 64,
    max_train_samples: int | None = None,
    **train_options: Any,
) -> Path:
    """Convert ``source`` into ``output/converted``, fine-tune it into ``output/finetuned``; returns the
    fine-tuned model's folder. Rerunning after an interruption resumes the fine-tuning. ``train_options``: more
    :class:`~hf_symbolinv.routes.TrainArguments` fields (``eval_samples=16``, ``seed=1``)."""
    output = Path(output)
    converted = output / "converted"
    if not (converted / "config.json").exists():
        convert_checkpoint(source, converted, actual=actual, placeholder=placeholder)
    arguments = TrainArguments(
        task=task,
        init_from=converted,
        data=data,
        output=output / "finetuned",
        epochs=epochs,
        lr=learning_rate,
        batch_size=batch_size,
        max_train_samples=max_train_samples,
        **train_options,
    )
    train(arguments)
    return output / "finetuned" / "model"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a fixed-embedding symbolinv checkpoint (folder or Hub id)")
    parser.add_argument("--data", required=True, help="dataset folder with a train split")
    parser.add_argument("--task", required=True, choices=["ltl", "prop", "copy"])
    parser.add_argument("--out", required=True, help="folder for converted/ and finetuned/")
    parser.add_argument("--actual", default="a")
    parser.add_argument("--placeholder", default="b")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-train-samples", type=int, default=None)
    args = parser.parse_args(argv)
    folder = convert_and_finetune(
        args.source,
        args.out,
        args.data,
        args.task,
        args.actual,
        args.placeholder,
        args.epochs,
        args.lr,
        args.batch_size,
        args.max_train_samples,
    )
    print(f"fine-tuned model: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
