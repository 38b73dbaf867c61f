"""What the routes share: reading datasets, checking and writing checkpoints, and saving a trained model with its
card. Errors are raised (``ValueError``, ``OSError``); the command line turns them into one line and exit status 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tasks import get_task
from ..utils.model_card import evaluation_table

#: The symbol counts whose renamings an evaluation checks by default (alpha-covariance).
DEFAULT_ALPHA_SYMBOLS = [3, 4, 5]


def check_overrides(config_class: type, overrides: dict[str, Any]) -> str | None:
    """The problem with ``--set`` overrides (an unknown field, a value its declaration does not allow), or None.

    Checked before the config is built because a config stores unknown keyword arguments as attributes, so a typo
    would otherwise be saved and silently ignored; the types come from the fields' declarations, as the config's
    own check reads them.
    """
    import dataclasses
    import difflib

    from ..models.symbolinv.config_fields import field_types, type_name, value_fits

    known = [field.name for field in dataclasses.fields(config_class)]
    declared = field_types(config_class)
    for field, value in overrides.items():
        if field not in known:
            close = difflib.get_close_matches(field, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"--set {field}: {config_class.__name__} has no field {field!r}{hint}"
        if field in declared and not value_fits(declared[field], value):
            return f"--set {field}={value!r}: expected {type_name(declared[field])}"
    return None


#: Config entries that are bookkeeping, not architecture: they may differ between a checkpoint and a resume (a
#: checkpoint's ``_name_or_path`` names its own folder, the resumed run's the folder it started from, wherever the
#: checkout is).
_NOT_ARCHITECTURE = frozenset(
    {
        "_name_or_path",
        "transformers_version",
        "architectures",
        "dtype",
        "output_hidden_states",
        "return_dict",
        "use_cache",
    }
)


#: Config entries a resumed run may change: regularization of the training only (no weight, no shape and no answer
#: of the trained model depends on them), so that a long run can go on without dropout once it shows it does not
#: learn its data by heart. The change is announced.
RESUMABLE_SETTINGS = frozenset({"dropout", "attention_dropout", "activation_dropout", "classifier_dropout"})


def resume_mismatch(config: Any, checkpoint: Path) -> tuple[str | None, list[str]]:
    """Compare the config fields of ``config`` to those ``checkpoint`` was trained with: the refusal naming each
    changed field and both values (None: none), and an announcement for each :data:`RESUMABLE_SETTINGS` change,
    which goes on (as :func:`~hf_symbolinv.training.checkpoints.options_problem` does for the options).

    The Trainer would load the old weights into the new architecture where shapes allow, or fail deep
    inside; naming the fields lets the user choose between the old settings and ``--no-resume``.
    """
    saved_file = checkpoint / "config.json"
    if not saved_file.is_file():
        return None, []
    saved = json.loads(saved_file.read_text(encoding="utf-8"))
    current = json.loads(config.to_json_string(use_diff=False))  # as saved: JSON keys are strings
    refused, applied = [], []
    for key in sorted(saved.keys() & current.keys()):
        if key in _NOT_ARCHITECTURE or saved[key] == current[key]:
            continue
        if key in RESUMABLE_SETTINGS:
            applied.append(
                f"continuing {checkpoint.name} with {key} {saved[key]!r} -> {current[key]!r} (regularization only: "
                "the weights are taken as they are)"
            )
        else:
            refused.append(f"{key}: {saved[key]!r} -> {current[key]!r}")
    if refused:
        changes = ", ".join(refused)
        return f"{checkpoint} was trained with other settings ({changes}); keep them, or pass --no-resume", []
    return None, applied


def with_overrides(origin: str, overrides: dict[str, Any]) -> str:
    """Where a training started, as its card writes it, with the ``--set`` settings changed on a loaded model."""
    if not overrides:
        return origin
    return f"{origin} with " + ", ".join(f"{name}={value}" for name, value in overrides.items())


def given_warmup(args: Any) -> int | float | None:
    """``--warmup-steps`` or ``--warmup-ratio`` (a fraction: ``TrainingArguments`` reads one below 1), or None where
    neither was given (each route has its default)."""
    return args.warmup_steps if args.warmup_steps is not None else args.warmup_ratio


def checkpoint_problem(config: Any, checkpoints: Path, no_resume: bool) -> str | None:
    """Why the last checkpoint in ``checkpoints`` cannot be resumed with ``config`` (see :func:`resume_mismatch`),
    or None (also when there is none, or ``--no-resume``)."""
    from ..training import resume_point

    found = resume_point(checkpoints, announce=False) if not no_resume else None
    if found is None:
        return None
    problem, applied = resume_mismatch(config, found)
    for line in applied:
        print(line, flush=True)
    return problem


def stopped_early(stop: Any, steps: int, checkpoints: Path) -> bool:
    """Whether the run stopped before its last step, by ``--time-limit`` or SIGTERM (a
    :class:`~hf_symbolinv.training.GracefulStop`), with a checkpoint; if so, say how to continue."""
    if stop.stopped_at is None:
        return False
    print(
        f"stopped at step {stop.stopped_at} of {steps} after {stop.reason}; the checkpoint is in {checkpoints}: run "
        "the same command again to continue"
    )
    return True


@dataclass
class TrainedModel:
    """A finished training, with what its saved folder and model card say of it."""

    arguments: Any  # the TrainArguments it was trained with (not imported: routes imports this module)
    output: Path  # the run's folder: the model goes to OUTPUT/model
    model: Any
    tokenizer: Any
    origin: str  # where the training started, as the card writes it: "preset `NAME`" or "`FOLDER`"
    train_size: int  # samples in the train split
    steps: int
    batch: str  # as the card writes it: "64" or "64 x 2" (batch size x gradient accumulation)
    report: dict[str, Any] | None = None  # the held-out evaluation, where there was one
    eval_name: str | None = None  # the split it was made on


def fill_model_card(
    config: Any,
    task: str,
    model_ref: str = "path/to/model",
    preset: str | None = None,
    training_data: str | None = None,
    report: Mapping[str, Any] | None = None,
    split: str = "test",
    parameters: int | None = None,
    extra_limitations: str = "",
) -> str:
    """The model card of a trained model of any family, from its config and (optionally) its evaluation: the fields
    every card has, then the family's own (its ``family.py`` ``card``)."""
    from ..models.registry import get_family

    about = get_task(task)
    fields = dict(
        task=about.name,
        task_description=about.description,
        intended_use=about.intended_use,
        model_ref=model_ref,
        example_input=about.example,
        preset=preset or "custom",
        parameters=f"{parameters:,}" if parameters is not None else "see config",
        training_data=training_data or "Not recorded.",
        evaluation=evaluation_table(report, split),
        extra_limitations=extra_limitations,
    )
    return get_family(config.model_type).card(config, about.name, fields)


def save_trained_model(trained: TrainedModel) -> int:
    """Save a trained model of any family to OUTPUT/model with its tokenizer and a model card, and say so."""
    from ..utils.files import save_model_folder

    arguments, output, model, report = trained.arguments, trained.output, trained.model, trained.report
    card = fill_model_card(
        model.config,
        arguments.task,
        model_ref=str(output / "model"),
        preset=arguments.preset,
        training_data=f"`{arguments.data}` (train split, {trained.train_size:,} samples); "
        + (f"fine-tuned from {trained.origin}; " if arguments.init_from else "")
        + f"{trained.steps} steps of batch {trained.batch}, AdamW lr {arguments.lr}, cosine schedule"
        + (
            "; each sample's formula written anew at every draw, the operands of its commutative operators swapped "
            "at random (`--augment commute`)."
            if arguments.augment == "commute"
            else "."
        ),
        report=report,
        split=trained.eval_name or "test",
        parameters=sum(p.numel() for p in model.parameters()),
    )
    save_model_folder(model, trained.tokenizer, output / "model", card=card)
    steps_run = f", {report['num_steps']} steps" if report and "num_steps" in report else ""
    print(
        f"saved the model to {output / 'model'}"
        + (f"; {trained.eval_name}: correct {100 * report['correct']:.2f}%{steps_run}" if report else "")
    )
    return 0


def read_released_folder(folder: Path) -> Any:
    """The ``DatasetDict`` of a folder in a released data set's own layout, or None for any other folder: a CLUTRR
    folder (its ``*.csv`` files the splits, read in the symbolic form) or a DTM papers' folder (``NAME.json`` or
    ``NAME.jsonl`` files of ``{"source", "target"}`` lines, no built data set beside them)."""
    from ..tasks.clutrr import is_clutrr_folder, load_clutrr

    if is_clutrr_folder(folder):
        return load_clutrr(folder)
    if not list(folder.glob("data/*.parquet")) and not list(folder.glob("*.parquet")):
        try:
            from dataset_builders.dtm import is_dtm_folder, load_dtm
        except ImportError:  # the builders ship beside the package
            return None
        if is_dtm_folder(folder):
            return load_dtm(folder)
    return None


def load_data(path: str, task: str, split: str | None = None, flag: str = "--data") -> Any:
    """The ``DatasetDict`` of a data folder, refused in one line naming ``path`` when it cannot be read or
    does not hold samples of ``task`` (a model folder, another task's data): those would otherwise fail deep
    inside tokenizing, or train and evaluate on garbage without a word. The first rows of ``split`` (default:
    the first split) are judged as answers of ``task``."""
    import datasets

    from ..utils.files import PathProblem, check_input_folder

    folder = check_input_folder(path, flag, "a dataset folder written by `symbolinv data build`")
    try:
        # A folder as a data set is released (CLUTRR's CSV files, the DTM papers' JSON lines) is read by its
        # task's reader; anything else is a folder that `load_dataset` reads.
        dataset = read_released_folder(folder) or datasets.load_dataset(str(folder))
    except PathProblem:
        raise
    except Exception as error:  # datasets raises many kinds (cast, generation, no files): all mean "unreadable"
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PathProblem(f"cannot read a dataset from {flag} {path}: {first}") from error
    for name, split in dataset.items():
        missing = [column for column in ("input", "target") if column not in split.column_names]
        if missing:
            raise PathProblem(
                f"{flag} {path} is not a dataset of inputs and targets: split {name!r} has no "
                f"{' or '.join(missing)} column (columns: {', '.join(split.column_names)})"
            )
    judge = get_task(task).judge
    name = split if split in dataset else next(iter(dataset))
    # A few rows tell the task; judging every row would slow every command.
    for index, row in enumerate(dataset[name].select(range(min(3, len(dataset[name]))))):
        try:
            invalid = judge(row["input"], row["target"], None, 5.0).invalid
            problem = f"its target {row['target']!r} is not a {task} answer"
        except (ValueError, SyntaxError) as error:  # the input does not parse as one of the task's
            invalid, problem = True, str(error)
        if invalid:
            raise PathProblem(f"{flag} {path} does not hold {task} data: split {name!r} row {index}: {problem}")
    return dataset


def load_split(path: str, task: str, split: str, limit: int | None = None) -> Any:
    """The split ``split`` of the data folder ``path`` (its first ``limit`` rows), refused naming the splits there."""
    from ..utils.files import PathProblem

    dataset = load_data(path, task, split)
    if split not in dataset:
        raise PathProblem(f"--data {path} has no split {split!r} (splits: {', '.join(dataset)})")
    rows = dataset[split]
    return rows.select(range(min(limit, len(rows)))) if limit is not None else rows
