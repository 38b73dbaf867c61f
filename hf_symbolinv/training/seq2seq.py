"""The ``seq2seq`` route's training with the Hugging Face ``Seq2SeqTrainer``: tokenised datasets, the collator,
semantic metrics, batches grouped by streams and length.

The loss (AdaCos or cross-entropy) is computed inside the model, so ``Seq2SeqTrainer`` needs no
custom loss; the model's ``forward`` takes ``num_items_in_batch``, so gradient accumulation sums
token losses over the accumulated batches and divides once (the Trainer then does not rescale).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer
from transformers.trainer_pt_utils import LengthGroupedSampler

from ..evaluation import evaluate_answers
from ..tasks import get_task
from .checkpoints import CheckpointRecordMixin
from .common import COMPILE_BUCKET, CompiledTrainingMixin, StopOnNonFinite

MODEL_COLUMNS = ("input_ids", "attention_mask", "symbol_mask", "labels")


def encode_pairs(
    tokenizer: Any, sources: list[str], targets: list[str], task: str | None = None, max_length: int | None = None
) -> dict[str, list]:
    """The model's columns (``input_ids``, ``attention_mask``, ``symbol_mask``, ``labels``) of text pairs; with
    ``task``, the labels are the targets as that task teaches them (:attr:`~hf_symbolinv.tasks.Task.teaching_target`:
    a prop assignment in the order its symbols appear)."""
    if task is not None:
        teach = get_task(task).teaching_target
        targets = [teach(source, target) for source, target in zip(sources, targets)]
    encoded = tokenizer(sources, text_target=targets, truncation=max_length is not None, max_length=max_length)
    return {key: encoded[key] for key in MODEL_COLUMNS}


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
    (:func:`encode_pairs`).
    """

    def encode(batch: dict[str, list]) -> dict[str, list]:
        return encode_pairs(tokenizer, batch[input_column], batch[target_column], task, max_length)

    return dataset.map(encode, batched=True, num_proc=num_proc, desc="tokenizing")


class CommutedTrainSet(torch.utils.data.Dataset):
    """A training split whose every draw of a sample is written anew by its task's ``commuted`` (``symbolinv train
    --augment commute``): the formula with operands of commutative operators swapped at random, so that the model
    sees the same solved formulas in forms it has not learnt by heart (see :func:`hf_symbolinv.tasks.commuter`).
    The target is the one the task's datasets would write for the new form (an LTL trace solved anew: the solver's
    search follows the operands' order), taught as the task teaches it (``taught``: a prop assignment is the new
    form's first model, in the order the new form names its symbols).

    Draw ``k`` of sample ``i`` is written by a generator seeded with ``(seed, i, k)``: the same run draws the same
    forms (a data-loading worker counts the draws it serves). Swapping operands changes neither the tokens nor the
    symbols of an input, so the lengths and stream counts of the tokenised split (batch grouping, the curriculum)
    stay those of every form."""

    def __init__(self, split: Any, tokenizer: Any, task: str, taught: bool = True, seed: int = 0) -> None:
        if get_task(task).commuted is None:
            raise ValueError(f"--augment commute: task {task!r} has no commuted form of its inputs")
        self.split = split.select_columns(["input", "target"])
        self.tokenizer = tokenizer
        self.task = task  # by name, so that data-loading workers started afresh (spawn) can unpickle it
        self.taught = taught
        self.seed = seed
        self.draws: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        index = int(index)  # a sampler may hand a numpy or torch integer: the same key and seed either way
        row = self.split[index]
        draw = self.draws.get(index, 0)
        self.draws[index] = draw + 1
        rng = random.Random(f"{self.seed}:{index}:{draw}")
        source, target = get_task(self.task).commuted(row["input"], row["target"], rng)
        encoded = encode_pairs(self.tokenizer, [source], [target], self.task if self.taught else None)
        return {key: values[0] for key, values in encoded.items()}


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


class CurriculumSampler(torch.utils.data.Sampler[int]):
    """Training samples from small to large: the first ``curriculum_samples`` draws come from the smallest samples
    only, a share of the training set that grows with the square root of the draws (competence-based curriculum,
    Platanios et al., 2019: the share at draw ``i`` of ``K`` is ``sqrt(c0^2 + (1 - c0^2) i / K)``, ``c0`` =
    :attr:`START`), drawn with replacement; every later draw is uniform without replacement, as the Trainer's own
    sampler draws. ``sizes``: one per sample (its input length). Each epoch's order is a function of ``seed`` and the
    epoch (which the Trainer sets), so a resumed run draws what the interrupted one would have drawn."""

    #: The share of the training set the curriculum starts from.
    START = 0.1

    def __init__(self, sizes: Sequence[int], curriculum_samples: int, seed: int = 0) -> None:
        if len(sizes) == 0:
            raise ValueError("a curriculum needs at least one training sample")
        generator = torch.Generator().manual_seed(seed)
        ties = torch.rand(len(sizes), generator=generator).tolist()  # equal sizes in random order
        self.by_size = torch.tensor(sorted(range(len(sizes)), key=lambda index: (sizes[index], ties[index])))
        self.curriculum_samples = curriculum_samples
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.by_size)

    def share(self, draw: int) -> float:
        """The share of the training set (smallest first) that draw number ``draw`` (counted over all epochs) may
        come from."""
        if draw >= self.curriculum_samples:
            return 1.0
        return math.sqrt(self.START**2 + (1 - self.START**2) * draw / self.curriculum_samples)

    def __iter__(self) -> Iterator[int]:
        n = len(self.by_size)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        first = self.epoch * n  # the draw number of this epoch's first sample
        shuffled = torch.randperm(n, generator=generator).tolist()
        for position in range(n):
            share = self.share(first + position)
            if share >= 1.0:
                yield shuffled[position]
                continue
            pool = max(1, math.ceil(share * n))
            yield int(self.by_size[torch.randint(pool, (1,), generator=generator)].item())


class SymbolInvTrainer(CheckpointRecordMixin, CompiledTrainingMixin, Seq2SeqTrainer):
    """``Seq2SeqTrainer`` that can group training batches by stream count and length
    (``group_keys``: one :func:`grouping_key` per training sample), so that padded positions and padded
    streams waste little (the batches are otherwise drawn at random, as the Trainer's own length grouping does), or
    draw them by a curriculum (``curriculum_sizes``, one size per sample, and ``curriculum_steps``:
    :class:`CurriculumSampler`). ``compile_backend``: the training step runs compiled with it
    (:class:`CompiledTrainingMixin`). Each checkpoint is recorded with ``checkpoint_options`` (the run's optimisation
    options, checked when it is resumed) and rotated without touching a user's file (:class:`CheckpointRecordMixin`)."""

    def __init__(
        self,
        *args: Any,
        group_keys: Sequence[int] | None = None,
        curriculum_sizes: Sequence[int] | None = None,
        curriculum_steps: int = 0,
        compile_backend: str | None = None,
        checkpoint_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.setup_compiled_training(compile_backend)
        self.setup_checkpoint_records(checkpoint_options)
        self.add_callback(StopOnNonFinite(self.args.output_dir))
        for name, keys in (("group_keys", group_keys), ("curriculum_sizes", curriculum_sizes)):
            if keys is not None and self.train_dataset is not None and len(keys) != len(self.train_dataset):
                raise ValueError(f"{name} has {len(keys)} keys for {len(self.train_dataset)} training samples")
        if group_keys is not None and curriculum_sizes is not None:
            raise ValueError("batches are either grouped by length or drawn by a curriculum, not both")
        self.group_keys = list(group_keys) if group_keys is not None else None
        self.curriculum_sizes = list(curriculum_sizes) if curriculum_sizes is not None else None
        self.curriculum_steps = curriculum_steps

    def _get_train_sampler(self, train_dataset: Any = None) -> Any:
        samples_per_step = self.args.train_batch_size * self.args.gradient_accumulation_steps
        if self.curriculum_sizes is not None:
            return CurriculumSampler(
                self.curriculum_sizes, self.curriculum_steps * samples_per_step, seed=self.args.data_seed or 0
            )
        if self.group_keys is None:
            return super()._get_train_sampler(train_dataset)
        return LengthGroupedSampler(samples_per_step, lengths=self.group_keys)
