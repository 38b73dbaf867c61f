"""The ``tree`` route's training with the Hugging Face ``Trainer``: models that hold trees (tasks ``tree``, ``nnf``).

These models are not sequence-to-sequence models: a batch is two trees per sample, encoded by the family's
tokenizer as fixed-size position arrays, and the loss is computed inside the model. So the plain ``Trainer``
runs them, with a collator that tokenizes the text pairs of a batch (the dataset stays text: no tokenized copy
to store, and the tokenizer's errors name the row). Checkpoints resume as in ``symbolinv train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import Trainer, TrainingArguments

from ..utils.progress import show_progress
from .checkpoints import CheckpointRecordMixin, prepare_checkpoints
from .common import CompiledTrainingMixin, GracefulStop, StopOnNonFinite, recipe_arguments


class TreeDataCollator:
    """Tokenizes a batch of ``input``/``target`` rows into the model's arrays (``symbol_names`` dropped)."""

    def __init__(self, tokenizer: Any, input_column: str = "input", target_column: str = "target") -> None:
        self.tokenizer = tokenizer
        self.input_column = input_column
        self.target_column = target_column

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.tokenizer(
            [feature[self.input_column] for feature in features], [feature[self.target_column] for feature in features]
        )
        batch.pop("symbol_names")
        return batch


class TreeTrainer(CheckpointRecordMixin, CompiledTrainingMixin, Trainer):
    """The ``Trainer``, with the training step compiled when asked (:class:`CompiledTrainingMixin`; a tree batch's
    arrays have the same shape for every batch of a model, so one graph serves a whole run), and checkpoints recorded
    with ``checkpoint_options`` (:class:`CheckpointRecordMixin`)."""

    def __init__(
        self,
        *args: Any,
        compile_backend: str | None = None,
        checkpoint_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.setup_compiled_training(compile_backend)
        self.setup_checkpoint_records(checkpoint_options)


def check_tree_rows(
    tokenizer: Any, dataset: Any, name: str, input_column: str = "input", target_column: str = "target"
) -> None:
    """Raise ``ValueError`` naming the split and row of the first pair the tokenizer refuses (a tree deeper than
    the model's ``max_depth``, an unknown label, a target symbol the input lacks, too many symbols): found
    before training starts, not as a batch's row in the middle of it."""
    for row, (source, target) in enumerate(zip(dataset[input_column], dataset[target_column])):
        try:
            names = tokenizer.encode_tree(tokenizer.parse(source), what="input")[2]
            tokenizer.encode_tree(tokenizer.parse(target), symbols=names, what="target")
        except ValueError as error:
            raise ValueError(f"{name} split row {row}: {error}") from None


def train_tree_model(
    model: Any,
    tokenizer: Any,
    train_dataset: Any,
    output_dir: str | Path,
    *,
    steps: int,
    batch_size: int = 16,
    learning_rate: float | None = None,
    seed: int = 0,
    save_steps: int | None = None,
    time_limit_minutes: float | None = None,
    resume: bool = True,
    progress: bool = True,
    compile_backend: str | None = None,
    options: dict[str, Any] | None = None,
    warmup: int | float | None = None,
) -> GracefulStop:
    """Train ``model`` for ``steps`` optimizer steps of the training recipe (:data:`~hf_symbolinv.training.RECIPE`)
    on the text pairs of ``train_dataset`` (``warmup``: steps, or a fraction of them below 1; default the recipe's
    5%); checkpoints go to ``output_dir`` and a rerun resumes from the last
    sound one (:func:`~hf_symbolinv.training.checkpoints.prepare_checkpoints`: refused if ``options``, recorded with
    each checkpoint, changed). Returns the graceful-stop callback (its ``stopped_at`` and ``reason`` are set when the
    time limit or SIGTERM stopped the run)."""
    import torch

    output_dir = Path(output_dir)
    save_steps = save_steps or max(1, steps // 4)
    arguments = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        **recipe_arguments(learning_rate=learning_rate, warmup_steps=warmup),
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=2,
        logging_steps=max(1, min(50, steps // 10)),
        eval_strategy="no",
        report_to=[],
        seed=seed,
        data_seed=seed,
        # The collator reads the text columns, which the Trainer would otherwise drop as unknown to forward().
        remove_unused_columns=False,
        disable_tqdm=not show_progress(progress),  # off a terminal, the log a line per step
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    stop = GracefulStop(time_limit_minutes * 60 if time_limit_minutes is not None else None)
    trainer = TreeTrainer(
        model=model,
        compile_backend=compile_backend,
        checkpoint_options=options,
        args=arguments,
        train_dataset=train_dataset,
        data_collator=TreeDataCollator(tokenizer),
        callbacks=[StopOnNonFinite(str(output_dir)), stop],
    )
    start = prepare_checkpoints(output_dir, options or {}, resume)
    try:
        trainer.train(resume_from_checkpoint=str(start) if start is not None else None)
    finally:
        stop.release()
    return stop


__all__ = ["TreeDataCollator", "TreeTrainer", "check_tree_rows", "train_tree_model"]
