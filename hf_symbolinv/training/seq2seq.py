"""The ``seq2seq`` route's training with the Hugging Face ``Seq2SeqTrainer``: tokenised datasets, the collator,
semantic metrics, batches grouped by streams and length.

The loss (AdaCos or cross-entropy) is computed inside the model, so ``Seq2SeqTrainer`` needs no
custom loss; the model's ``forward`` takes ``num_items_in_batch``, so gradient accumulation sums
token losses over the accumulated batches and divides once (the Trainer then does not rescale).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer
from transformers.trainer_pt_utils import LengthGroupedSampler

from ..evaluation import evaluate_answers
from ..tasks import get_task
from .common import COMPILE_BUCKET, CompiledTrainingMixin, StopOnNonFinite

MODEL_COLUMNS = ("input_ids", "attention_mask", "symbol_mask", "labels")


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
    from the labels. The streams themselves are built inside the model from the ids.

    ``bucketed=True`` (a compiled model's batches): positions padded to a multiple of :data:`COMPILE_BUCKET`, and,
    for a model with ``stream_inputs``, the batch's streams (``stream_slots`` of the SIT), whose width (the batch's
    largest symbol count) the model cannot read from the ids without a data-dependent shape."""

    def __init__(self, tokenizer: Any, model: Any = None, bucketed: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("label_pad_token_id", -100)
        if bucketed:
            kwargs["pad_to_multiple_of"] = COMPILE_BUCKET
        super().__init__(tokenizer, model=model, **kwargs)
        self.stream_inputs = getattr(model, "stream_inputs", None) if bucketed else None

    def __call__(self, features: list[dict[str, Any]], return_tensors: str | None = None) -> dict[str, Any]:
        kept = [{key: value for key, value in feature.items() if key in MODEL_COLUMNS} for feature in features]
        batch = super().__call__(kept, return_tensors=return_tensors)
        if self.stream_inputs is not None:
            batch.update(self.stream_inputs(batch["input_ids"], batch["attention_mask"]))
        return batch


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


class SymbolInvTrainer(CompiledTrainingMixin, Seq2SeqTrainer):
    """``Seq2SeqTrainer`` that can group training batches by stream count and length
    (``group_keys``: one :func:`grouping_key` per training sample), so that padded positions and padded
    streams waste little; the batches are otherwise drawn at random, as the Trainer's own length grouping does.
    ``compile_backend``: the training step runs compiled with it (:class:`CompiledTrainingMixin`)."""

    def __init__(
        self, *args: Any, group_keys: Sequence[int] | None = None, compile_backend: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.setup_compiled_training(compile_backend)
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
