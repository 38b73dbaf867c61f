"""Training with the Hugging Face Trainer: tokenised datasets, the family's collator, semantic metrics.

The loss (AdaCos or cross-entropy) is computed inside the model, so ``Seq2SeqTrainer`` needs no
custom loss; the model's ``forward`` takes ``num_items_in_batch``, so gradient accumulation sums
token losses over the accumulated batches and divides once (the Trainer then does not rescale).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, TrainerCallback
from transformers.trainer_pt_utils import LengthGroupedSampler

from ..evaluation import evaluate_answers
from ..tasks import get_task

MODEL_COLUMNS = ("input_ids", "attention_mask", "symbol_mask", "labels")

#: The training recipe of the reference implementation, in ``TrainingArguments`` terms: AdamW (lr 1e-3,
#: betas (0.9, 0.95), weight decay 0.1), a cosine schedule with 5% warm-up, gradient clipping at 1.0. Every
#: training entry point (``symbolinv train``, the demo, the Accelerate example, the benchmarks) takes it
#: from here.
RECIPE: dict[str, Any] = {
    "learning_rate": 1e-3,
    "adam_beta1": 0.9,
    "adam_beta2": 0.95,
    "weight_decay": 0.1,
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.05,  # a fraction of max_steps
    "max_grad_norm": 1.0,
}


#: ``symbolinv train``'s warm-up for the seq2seq families: the reference code's 1,000 steps (a run shorter than 5,000
#: steps warms up over its first fifth), the recipe the shipped ``*-small`` models were trained with. The tree family
#: keeps :data:`RECIPE`'s 5%.
REFERENCE_WARMUP_STEPS = 1000


def default_warmup_steps(max_steps: int) -> int:
    """The warm-up of a ``max_steps`` run of ``symbolinv train``: :data:`REFERENCE_WARMUP_STEPS`, or a fifth of a
    shorter run."""
    return max(1, min(REFERENCE_WARMUP_STEPS, max_steps // 5))


def recipe_arguments(**overrides: Any) -> dict[str, Any]:
    """``TrainingArguments`` keyword arguments of the recipe, with ``overrides`` (e.g. ``learning_rate``)."""
    unknown = sorted(set(overrides) - set(RECIPE))
    if unknown:
        raise ValueError(f"not a field of the training recipe: {', '.join(unknown)} (fields: {', '.join(RECIPE)})")
    return {**RECIPE, **{key: value for key, value in overrides.items() if value is not None}}


def tokenize_dataset(
    dataset: Any,
    tokenizer: Any,
    input_column: str = "input",
    target_column: str = "target",
    max_length: int | None = None,
    num_proc: int | None = None,
    task: str | None = None,
) -> Any:
    """Add ``input_ids``, ``attention_mask``, ``symbol_mask`` and ``labels`` to a dataset of text pairs.

    The other columns are kept (evaluation reads them); the Trainer drops the ones the model's
    ``forward`` does not take. With ``task``, the labels are the targets as that task teaches them
    (:attr:`~hf_symbolinv.tasks.Task.teaching_target`: a prop assignment in the order its symbols appear).
    """
    teach = get_task(task).teaching_target if task is not None else None

    def encode(batch: dict[str, list]) -> dict[str, list]:
        targets = batch[target_column]
        if teach is not None:
            targets = [teach(source, target) for source, target in zip(batch[input_column], targets)]
        encoded = tokenizer(
            batch[input_column],
            text_target=targets,
            truncation=max_length is not None,
            max_length=max_length,
        )
        return {key: encoded[key] for key in MODEL_COLUMNS}

    return dataset.map(encode, batched=True, num_proc=num_proc, desc="tokenizing")


class SymbolInvDataCollator(DataCollatorForSeq2Seq):
    """Pads a batch of the family's features: ``input_ids``, ``attention_mask`` and ``symbol_mask``
    with the tokenizer (masks stay aligned), ``labels`` with -100, and builds ``decoder_input_ids``
    from the labels. The streams themselves are built inside the model from the ids."""

    def __init__(self, tokenizer: Any, model: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("label_pad_token_id", -100)
        super().__init__(tokenizer, model=model, **kwargs)

    def __call__(self, features: list[dict[str, Any]], return_tensors: str | None = None) -> dict[str, Any]:
        kept = [{key: value for key, value in feature.items() if key in MODEL_COLUMNS} for feature in features]
        return super().__call__(kept, return_tensors=return_tensors)


def semantic_metrics(
    task: str, tokenizer: Any, sources: Sequence[str] | None = None, references: Sequence[str] | None = None
) -> Callable[[Any], dict[str, float]]:
    """``compute_metrics`` for ``Seq2SeqTrainer(predict_with_generate=True)``: decodes the generated
    answers and judges them with the task's checker (LTL traces, assignments, copies).

    The inputs come from ``sources`` (the evaluation set's ``input`` column, in order) or, when
    ``None``, from the decoded ``inputs`` (``TrainingArguments(include_for_metrics=["inputs"])``).
    """

    def decode_rows(rows: np.ndarray) -> list[str]:
        rows = np.where(rows < 0, tokenizer.pad_token_id, rows)
        return tokenizer.batch_decode(rows.tolist(), skip_special_tokens=True)

    def compute(prediction: Any) -> dict[str, float]:
        predictions = prediction.predictions
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        answers = decode_rows(np.asarray(predictions))
        if sources is not None:
            inputs = list(sources)[: len(answers)]
        elif prediction.inputs is not None:
            inputs = decode_rows(np.asarray(prediction.inputs))
        else:
            raise ValueError(
                "semantic_metrics needs the evaluation inputs: pass sources=... or set "
                "include_for_metrics=['inputs'] in the training arguments"
            )
        refs = (
            list(references)[: len(answers)]
            if references is not None
            else decode_rows(np.asarray(prediction.label_ids))
        )
        report = evaluate_answers(task, inputs, [[a] for a in answers], refs)
        metrics = {"correct": report.correct, "exact": report.exact, "invalid": report.invalid}
        if report.mean_edit_distance is not None:
            metrics["edit_distance"] = report.mean_edit_distance
        return metrics

    return compute


#: ``grouping_key`` weighs a stream like this many tokens, so that the sort puts the stream count first.
_STREAM_WEIGHT = 1 << 16


def grouping_key(input_ids: Sequence[int], symbol_mask: Sequence[int]) -> int:
    """The sort key of one sample for length-grouped batches: its number of streams (distinct symbols)
    first, then its length. A batch pads both to its largest sample, and the streams multiply the
    cost of every position, so samples are grouped by both."""
    streams = len({token for token, is_symbol in zip(input_ids, symbol_mask) if is_symbol})
    return streams * _STREAM_WEIGHT + len(input_ids)


class TimeLimit(TrainerCallback):
    """Stops training after ``seconds`` of wall-clock time, at the end of a step, and saves a checkpoint
    there, so that the same command resumes it: long runs fit machines that are lent for a while."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.stopped_at: int | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.start = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if time.monotonic() - self.start >= self.seconds and state.global_step < state.max_steps:
            control.should_training_stop = True
            control.should_save = True
            self.stopped_at = state.global_step


def resume_point(checkpoints: str | os.PathLike, announce: bool = True) -> Path | None:
    """The newest complete checkpoint in ``checkpoints`` (None: none, start afresh). The Trainer writes
    ``trainer_state.json`` last, so a checkpoint without a readable one was cut short (a kill during the write) and
    is passed over, with a note naming it."""
    folder = Path(checkpoints)
    found = sorted(folder.glob("checkpoint-*"), key=_checkpoint_step) if folder.is_dir() else []
    skipped = []
    for checkpoint in reversed(found):
        try:
            json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            skipped.append(checkpoint.name)
            continue
        if skipped and announce:
            print(f"resuming from {checkpoint}: {', '.join(skipped)} is incomplete (cut short while saved)")
        return checkpoint
    if skipped and announce:
        print(f"starting afresh: {', '.join(skipped)} in {folder} is incomplete (cut short while saved)")
    return None


def _checkpoint_step(checkpoint: Path) -> int:
    step = checkpoint.name.rpartition("-")[2]
    return int(step) if step.isdigit() else -1


class TrainingDiverged(ValueError):
    """The loss, the gradient norm or a weight became NaN or infinite: the run stops and saves no model."""


class StopOnNonFinite(TrainerCallback):
    """Stops a run at the first logged step whose loss or gradient norm is NaN or infinite, or whose weights are
    (checked at every log: the Trainer's own logging replaces a NaN loss by the window's mean). Raising leaves the
    Trainer before it saves a model; the checkpoints saved so far stay for diagnosis."""

    def __init__(self, checkpoints: str | None = None) -> None:
        self.checkpoints = checkpoints

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        logs = logs or {}
        bad = [f"{key} {logs[key]}" for key in ("loss", "grad_norm") if key in logs and not math.isfinite(logs[key])]
        model = kwargs.get("model")
        if not bad and model is not None:
            weights = model.named_parameters()
            bad = [f"weight {name}" for name, value in weights if not bool(value.detach().isfinite().all())][:1]
        if bad:
            kept = f"; the checkpoints in {self.checkpoints} are kept for diagnosis" if self.checkpoints else ""
            raise TrainingDiverged(
                f"training diverged at step {state.global_step} ({', '.join(bad)} is not finite): no model was "
                f"saved{kept}; try a lower --lr"
            )


class SymbolInvTrainer(Seq2SeqTrainer):
    """``Seq2SeqTrainer`` that can group training batches by stream count and length
    (``group_keys``: one :func:`grouping_key` per training sample), so that padded positions and padded
    streams waste little; the batches are otherwise drawn at random, as the Trainer's own length grouping does."""

    def __init__(self, *args: Any, group_keys: Sequence[int] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_callback(StopOnNonFinite(self.args.output_dir))
        if group_keys is not None and self.train_dataset is not None and len(group_keys) != len(self.train_dataset):
            raise ValueError(f"group_keys has {len(group_keys)} keys for {len(self.train_dataset)} training samples")
        self.group_keys = list(group_keys) if group_keys is not None else None

    def _get_train_sampler(self, train_dataset: Any = None) -> Any:
        if self.group_keys is None:
            return super()._get_train_sampler(train_dataset)
        return LengthGroupedSampler(
            self.args.train_batch_size * self.args.gradient_accumulation_steps, lengths=self.group_keys
        )
