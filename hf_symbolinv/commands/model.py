"""``symbolinv train``, ``evaluate``, ``solve`` and ``convert``: the model subcommands.

Same pattern as ``cli.py``: ``add_<name>_parser`` declares the arguments, ``run_<name>`` does the
work and returns an exit status; heavy imports happen inside the handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..files import resolve_model_folder
from ..tasks import get_task, task_for_vocabulary, task_names
from .arguments import fraction, non_negative_int, positive_float, positive_int

_Subparsers = Any


def _field_value(pair: str) -> tuple[str, Any]:
    field, _, raw = pair.partition("=")
    if not field or not raw:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {pair!r}")
    try:
        return field, json.loads(raw)
    except json.JSONDecodeError:
        return field, raw


def check_overrides(config_class: type, overrides: dict[str, Any]) -> str | None:
    """The problem with ``--set`` overrides (an unknown field, a value of the wrong type), or None.

    Checked against the config's signature because a config stores unknown keyword arguments as attributes,
    so a typo would otherwise be saved and silently ignored.
    """
    import difflib
    import inspect

    parameters = inspect.signature(config_class.__init__).parameters
    known = [
        name for name, p in parameters.items() if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    for field, value in overrides.items():
        if field not in known:
            close = difflib.get_close_matches(field, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"--set {field}: {config_class.__name__} has no field {field!r}{hint}"
        default = parameters[field].default
        if isinstance(default, bool):
            wrong = not isinstance(value, bool)
        elif isinstance(default, int):
            wrong = isinstance(value, bool) or not isinstance(value, int)
        elif isinstance(default, float):
            wrong = isinstance(value, bool) or not isinstance(value, (int, float))
        elif isinstance(default, str):
            wrong = not isinstance(value, str)
        else:
            wrong = False
        if wrong:
            return f"--set {field}={value!r}: expected {type(default).__name__} (default {default!r})"
    return None


#: ``evaluate --alpha-symbols``: the symbol counts at which alpha-covariance is measured unless told otherwise.
DEFAULT_ALPHA_SYMBOLS = [3, 4, 5]

#: Config entries that are bookkeeping, not architecture: they may differ between a checkpoint and a resume.
_NOT_ARCHITECTURE = frozenset(
    {"transformers_version", "architectures", "dtype", "output_hidden_states", "return_dict", "use_cache"}
)


def resume_mismatch(config: Any, checkpoint: Path) -> str | None:
    """Which config fields of ``config`` differ from those ``checkpoint`` was trained with, or None.

    The Trainer would load the old weights into the new architecture where shapes allow, or fail deep
    inside; naming the fields lets the user choose between the old settings and ``--no-resume``.
    """
    saved_file = checkpoint / "config.json"
    if not saved_file.is_file():
        return None
    saved = json.loads(saved_file.read_text(encoding="utf-8"))
    current = json.loads(config.to_json_string(use_diff=False))  # as saved: JSON keys are strings
    differ = sorted(
        key for key in saved.keys() & current.keys() if key not in _NOT_ARCHITECTURE and saved[key] != current[key]
    )
    if not differ:
        return None
    changes = ", ".join(f"{key}: {saved[key]!r} -> {current[key]!r}" for key in differ)
    return f"{checkpoint} was trained with other settings ({changes}); keep them, or pass --no-resume"


# ---------------------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------------------
def add_train_parser(subparsers: _Subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model of the family with the Hugging Face Trainer",
        description="Train a model of any family (SIT and baselines, FOLNet, DTE) on a dataset built by `symbolinv "
        "data build`: the loss inside the model, semantic accuracy (checker) at evaluation, checkpoints that "
        "resume. The final model (with tokenizer and model card) goes to OUTPUT/model. Tree tasks (tree, nnf) take "
        "the DTE presets (dtm-small, dte-small, dte-sparse-small, tdte-small, ...).",
    )
    parser.add_argument("--task", choices=task_names(), required=True)
    start = parser.add_mutually_exclusive_group(required=True)
    start.add_argument("--preset", help="a new model with these settings, e.g. prop-best, ltl-best, prop-vanilla")
    start.add_argument(
        "--init-from", metavar="MODEL", help="fine-tune a saved model (e.g. the output of `symbolinv convert`) instead"
    )
    parser.add_argument(
        "--data", required=True, metavar="DIR", help="dataset folder with train (and validation) splits"
    )
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument(
        "--embedding-type",
        choices=["streams", "fixed", "alpha_renaming", "random"],
        help="override the preset's embedding (baselines; aggregated attention is dropped for them)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        type=_field_value,
        nargs="*",
        action="extend",  # a second --set adds to the first rather than silently replacing it
        default=[],
        metavar="FIELD=VALUE",
        help="override config fields, e.g. d_model=32 encoder_layers=2 (repeatable)",
    )
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=positive_int, default=None, help="optimizer steps (default 1000)")
    length.add_argument(
        "--epochs",
        type=positive_float,
        default=None,
        help="passes over the train split instead of --steps (the fine-tuning recipe uses 1)",
    )
    parser.add_argument(
        "--max-train-samples",
        type=positive_int,
        default=None,
        metavar="N",
        help="train on the first N samples of the train split only",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--grad-accum", type=positive_int, default=1)
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    warmup = parser.add_mutually_exclusive_group()
    warmup.add_argument(
        "--warmup-steps",
        type=positive_int,
        default=None,
        help="learning-rate warm-up in steps (default: 1000, the reference code's, or a fifth of a shorter run)",
    )
    warmup.add_argument("--warmup-ratio", type=fraction, default=None, help="warm-up as a fraction of the steps")
    parser.add_argument("--eval-steps", type=positive_int, default=None, help="default: steps / 4")
    parser.add_argument(
        "--eval-samples", type=positive_int, default=256, help="validation samples judged at each evaluation"
    )
    parser.add_argument("--beam", type=positive_int, default=1, help="beams for the evaluations during training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-resume", action="store_true", help="start afresh even if OUTPUT has checkpoints")
    fast = parser.add_argument_group("speed (for GPUs)")
    fast.add_argument(
        "--bf16", action="store_true", help="bf16 mixed precision (autocast; the weights and the optimizer stay fp32)"
    )
    fast.add_argument(
        "--group-by-length",
        action="store_true",
        help="draw batches of samples with similar stream counts and lengths, so that padding wastes little",
    )
    fast.add_argument(
        "--workers",
        type=non_negative_int,
        default=0,
        help="data-loading and tokenizing processes (default 0: in the main process)",
    )
    fast.add_argument(
        "--eval-batch-size", type=positive_int, default=None, help="evaluation batch size (default: --batch-size)"
    )
    fast.add_argument(
        "--time-limit",
        type=positive_float,
        default=None,
        metavar="MINUTES",
        help="stop after this many minutes with a checkpoint; the same command then continues the run",
    )
    parser.set_defaults(handler=run_train)


def run_train(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainingArguments, set_seed

    from ..files import PathProblem, check_model_destination, check_output_folder
    from ..models.dte import DTEConfig
    from ..models.symbolinv.configuration_symbolinv import SymbolInvConfig
    from ..models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
    from ..presets import new_model_config, preset_config_class
    from ..training import (
        SymbolInvDataCollator,
        SymbolInvTrainer,
        TimeLimit,
        grouping_key,
        recipe_arguments,
        resume_point,
        semantic_metrics,
        tokenize_dataset,
    )
    from .trees import is_tree_model_folder, run_train_trees

    output = Path(args.output)
    data = Path(args.data).resolve()
    if output.resolve() == data or data in output.resolve().parents:
        raise PathProblem(f"--output {output} is inside the dataset folder --data {args.data}; choose another --output")
    # Before any work: a destination refused after training would waste the whole run.
    check_output_folder(output, "--output")
    check_output_folder(output / "checkpoints", "--output")
    check_model_destination(output / "model", "--output")
    set_seed(args.seed)
    if args.init_from is not None:
        if args.overrides or args.embedding_type is not None:
            print(
                "error: --set and --embedding-type build a new model; they cannot change one loaded with --init-from",
                file=sys.stderr,
            )
            return 2

        folder = resolve_model_folder(args.init_from, "--init-from")
        if folder.resolve() == (output / "model").resolve():
            # The save would replace the model this run starts from, which it did not create.
            raise PathProblem(
                f"--output {output} would replace the --init-from model {folder}; choose another --output"
            )
        if is_tree_model_folder(folder):
            return run_train_trees(args, output, init_folder=folder)
        from ..models.folders import check_tokenizer, load_folder

        model, tokenizer = load_folder(folder)
        config = model.config
        check_tokenizer(tokenizer, model)
        origin = f"`{args.init_from}`"
    else:
        overrides = dict(args.overrides)
        try:
            config_class = preset_config_class(args.preset)
        except ValueError as error:
            print(f"error: --preset: {error}", file=sys.stderr)
            return 2
        if args.embedding_type is not None:
            if config_class is not SymbolInvConfig:
                print(f"error: --embedding-type is for SIT presets, not `{args.preset}`", file=sys.stderr)
                return 2
            overrides["embedding_type"] = args.embedding_type
            if args.embedding_type != "streams":
                codes = SymbolInvConfig.from_preset(args.preset).attention_codes
                overrides.setdefault("stream_attention", "-".join(c for c in codes if c.endswith("P")))
        problem = check_overrides(config_class, overrides)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        try:
            config = new_model_config(args.preset, args.task, **overrides)
        except (ValueError, TypeError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        if isinstance(config, DTEConfig):
            return run_train_trees(args, output, config=config)
        tokenizer = SymbolInvTokenizer.from_preset(config.vocabulary, max_symbols=config.num_symbol_slots)
        model = None
        origin = f"preset `{args.preset}`"
    if get_task(args.task).vocabulary != config.vocabulary:
        print(f"error: {origin} is for the {config.vocabulary!r} vocabulary, not task {args.task!r}", file=sys.stderr)
        return 2
    dataset = load_data(args.data, args.task, "train")
    if "train" not in dataset:
        print(f"error: {args.data} has no train split (splits: {', '.join(dataset)})", file=sys.stderr)
        return 2
    eval_name = next((name for name in ("validation", "val", "test") if name in dataset), None)
    train_split = dataset["train"]
    if args.max_train_samples is not None:
        train_split = train_split.select(range(min(args.max_train_samples, len(train_split))))
    num_proc = args.workers if args.workers > 1 else None
    train = tokenize_dataset(train_split, tokenizer, num_proc=num_proc, task=args.task)
    evaluation = None
    if eval_name is not None:
        held_out = dataset[eval_name].select(range(min(args.eval_samples, len(dataset[eval_name]))))
        evaluation = tokenize_dataset(held_out, tokenizer, task=args.task)
    if model is None:
        model = AutoModelForSeq2SeqLM.from_config(config)
    steps = args.steps or 1000
    if args.epochs is not None:
        steps = max(1, math.ceil(args.epochs * len(train) / (args.batch_size * args.grad_accum)))
        print(
            f"{args.epochs:g} epoch(s) of {len(train):,} samples = {steps} steps of batch "
            f"{args.batch_size} x {args.grad_accum}"
        )
    eval_steps = args.eval_steps or max(1, steps // 4)
    training_args = Seq2SeqTrainingArguments(
        output_dir=str(output / "checkpoints"),
        max_steps=steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size or args.batch_size,
        bf16=args.bf16,
        use_cpu=args.bf16 and not torch.cuda.is_available(),  # bf16 autocast also runs on CPUs
        dataloader_num_workers=args.workers,
        dataloader_persistent_workers=args.workers > 0,
        gradient_accumulation_steps=args.grad_accum,
        **recipe_arguments(learning_rate=args.lr, warmup_steps=_warmup(args, steps)),
        eval_strategy="steps" if evaluation is not None else "no",
        eval_steps=eval_steps,
        save_strategy="steps",
        save_steps=eval_steps,
        save_total_limit=2,
        logging_steps=max(1, eval_steps // 5),
        predict_with_generate=True,
        generation_num_beams=args.beam,
        generation_max_length=128,
        report_to=[],
        seed=args.seed,
        data_seed=args.seed,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    time_limit = TimeLimit(args.time_limit * 60) if args.time_limit is not None else None
    trainer = SymbolInvTrainer(
        model=model,
        args=training_args,
        train_dataset=train,
        eval_dataset=evaluation,
        processing_class=tokenizer,
        data_collator=SymbolInvDataCollator(tokenizer, model=model),
        compute_metrics=semantic_metrics(args.task, tokenizer, held_out["input"], held_out["target"])
        if evaluation is not None
        else None,
        callbacks=[time_limit] if time_limit is not None else None,
        group_keys=[grouping_key(ids, mask) for ids, mask in zip(train["input_ids"], train["symbol_mask"])]
        if args.group_by_length
        else None,
    )
    problem = checkpoint_problem(config, output / "checkpoints", args.no_resume)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    start = resume_point(output / "checkpoints") if not args.no_resume else None
    with checkpoint_writes(output / "checkpoints"):
        trainer.train(resume_from_checkpoint=str(start) if start is not None else None)
    if stopped_by_time_limit(time_limit, steps, args.time_limit, output / "checkpoints"):
        return 0
    metrics = trainer.evaluate() if evaluation is not None else {}
    report = None
    if "eval_correct" in metrics:
        report = {
            "count": len(evaluation),
            "correct": metrics["eval_correct"],
            "exact": metrics["eval_exact"],
            "invalid": metrics["eval_invalid"],
            "unknown": 0.0,
        }
        if "eval_edit_distance" in metrics:
            report["mean_edit_distance"] = metrics["eval_edit_distance"]
    batch = f"{args.batch_size} x {args.grad_accum}"
    return save_trained_model(args, output, model, tokenizer, origin, len(train), steps, batch, report, eval_name)


@contextlib.contextmanager
def checkpoint_writes(checkpoints: Path) -> Iterator[None]:
    """Turn torch's failure to write a checkpoint (a full disk gives ``[enforce fail at inline_container.cc]``,
    deep inside torch) into an error naming the folder; the checkpoint cut short is passed over on resume."""
    try:
        yield
    except RuntimeError as error:
        text = str(error)
        if "inline_container" not in text and "PytorchStreamWriter" not in text and "write" not in text.lower():
            raise
        reason = text.strip().splitlines()[0] if text.strip() else "write failed"
        raise OSError(
            errno.EIO,
            f"could not write a checkpoint ({reason}; is the disk full?); the last complete one is kept",
            str(checkpoints),
        ) from None


def _warmup(args: argparse.Namespace, steps: int) -> int | float:
    """``--warmup-steps``, ``--warmup-ratio`` (a fraction: ``TrainingArguments`` reads one below 1), or the default."""
    from ..training import default_warmup_steps

    if args.warmup_steps is not None:
        return args.warmup_steps
    if args.warmup_ratio is not None:
        return args.warmup_ratio
    return default_warmup_steps(steps)


def checkpoint_problem(config: Any, checkpoints: Path, no_resume: bool) -> str | None:
    """Why the last checkpoint in ``checkpoints`` cannot be resumed with ``config`` (see :func:`resume_mismatch`),
    or None (also when there is none, or ``--no-resume``)."""
    from ..training import resume_point

    found = resume_point(checkpoints, announce=False) if not no_resume else None
    return resume_mismatch(config, found) if found is not None else None


def stopped_by_time_limit(time_limit: Any, steps: int, minutes: float | None, checkpoints: Path) -> bool:
    """Whether ``--time-limit`` stopped the training (and say how to continue)."""
    if time_limit is None or time_limit.stopped_at is None:
        return False
    print(
        f"stopped at step {time_limit.stopped_at} of {steps} after the time limit ({minutes:g} min); "
        f"the checkpoint is in {checkpoints}: run the same command again to continue"
    )
    return True


def save_trained_model(
    args: argparse.Namespace,
    output: Path,
    model: Any,
    tokenizer: Any,
    origin: str,
    train_size: int,
    steps: int,
    batch: str,
    report: dict[str, Any] | None,
    eval_name: str | None,
) -> int:
    """Save a trained model of any family to OUTPUT/model with its tokenizer and a model card, and say so."""
    from ..files import save_model_folder
    from ..model_card import fill_model_card

    card = fill_model_card(
        model.config,
        args.task,
        model_ref=str(output / "model"),
        preset=args.preset,
        training_data=f"`{args.data}` (train split, {train_size:,} samples); "
        + (f"fine-tuned from {origin}; " if args.init_from else "")
        + f"{steps} steps of batch {batch}, AdamW lr {args.lr}, cosine schedule.",
        report=report,
        split=eval_name or "test",
        parameters=sum(p.numel() for p in model.parameters()),
    )
    save_model_folder(model, tokenizer, output / "model", card=card)
    steps_run = f", {report['num_steps']} steps" if report and "num_steps" in report else ""
    print(
        f"saved the model to {output / 'model'}"
        + (f"; {eval_name}: correct {100 * report['correct']:.2f}%{steps_run}" if report else "")
    )
    return 0


# ---------------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------------
def add_evaluate_parser(subparsers: _Subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a model as the papers do",
        description="Correct (checker), exact, invalid, unknown, top-N, alpha-covariance per symbol count, a heatmap "
        "over (symbols x size) as JSON and PNG, and mean edit distance for the copy task.",
    )
    parser.add_argument("model", metavar="MODEL", help="a saved model folder (or a training OUTPUT with model/)")
    parser.add_argument("--data", required=True, metavar="DIR")
    parser.add_argument("--split", default="test")
    parser.add_argument("--beam", type=positive_int, default=3)
    parser.add_argument("--top-n", type=positive_int, default=1)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--limit", type=positive_int, default=None, help="evaluate the first N samples only")
    parser.add_argument(
        "--alpha-symbols",
        type=positive_int,
        nargs="*",
        default=DEFAULT_ALPHA_SYMBOLS,
        help="symbol counts for alpha-covariance (default 3 4 5; none: no alpha-covariance)",
    )
    parser.add_argument(
        "--alpha-pool", type=positive_int, default=5, help="rename into the first K symbols (default 5)"
    )
    parser.add_argument("--max-perm", type=positive_int, default=120, help="renamed variants per input (default 120)")
    parser.add_argument("--alpha-samples", type=positive_int, default=100, help="inputs per symbol count (default 100)")
    parser.add_argument(
        "--draws",
        type=positive_int,
        default=10,
        help="random-embedding models: evaluate the median-loss draw of this many (default 10)",
    )
    parser.add_argument("--report", default=None, metavar="FILE", help="JSON report (default: MODEL/eval-SPLIT.json)")
    parser.add_argument("--heatmap", default=None, metavar="PNG", help="default: MODEL/heatmap-SPLIT.png")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(handler=run_evaluate)


def load_data(path: str, task: str, split: str | None = None, flag: str = "--data") -> Any:
    """The ``DatasetDict`` of a data folder, refused in one line naming ``path`` when it cannot be read or
    does not hold samples of ``task`` (a model folder, another task's data): those would otherwise fail deep
    inside tokenizing, or train and evaluate on garbage without a word. The first rows of ``split`` (default:
    the first split) are judged as answers of ``task``."""
    import datasets

    from ..files import PathProblem, check_input_folder

    folder = check_input_folder(path, flag, "a dataset folder written by `symbolinv data build`")
    try:
        dataset = datasets.load_dataset(str(folder))
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
    from ..files import PathProblem

    dataset = load_data(path, task, split)
    if split not in dataset:
        raise PathProblem(f"--data {path} has no split {split!r} (splits: {', '.join(dataset)})")
    rows = dataset[split]
    return rows.select(range(min(limit, len(rows)))) if limit is not None else rows


def median_loss_draw(
    model: Any, tokenizer: Any, sources: list[str], targets: list[str], draws: int, seed: int
) -> float:
    """Random-embedding models: keep the draw of β whose loss on the data is the median of ``draws``."""
    import torch

    from ..training import SymbolInvDataCollator

    collator = SymbolInvDataCollator(tokenizer, model=model)
    features = [tokenizer(s, text_target=t) for s, t in zip(sources[:256], targets[:256])]
    batch = collator(features)
    losses = []
    for draw in range(draws):
        generator = torch.Generator().manual_seed(seed * 1000 + draw)
        model.resample_random_embeddings(generator)
        with torch.no_grad():
            losses.append((model(**batch).loss.item(), draw))
    median_loss, chosen = sorted(losses)[(len(losses) - 1) // 2]
    model.resample_random_embeddings(torch.Generator().manual_seed(seed * 1000 + chosen))
    return median_loss


def run_evaluate(args: argparse.Namespace) -> int:
    from ..evaluation import evaluate_model, save_heatmap
    from ..files import check_output_file, record_written, write_text_atomic
    from .trees import is_tree_model_folder, run_evaluate_trees

    folder = resolve_model_folder(args.model)
    report_path = Path(args.report) if args.report else folder / f"eval-{args.split}.json"
    heatmap_path = Path(args.heatmap) if args.heatmap else folder / f"heatmap-{args.split}.png"
    # Before the evaluation, and all of them: a report written and then a heatmap refused leaves half a result.
    check_output_file(report_path, "--report")
    check_output_file(report_path.with_name(report_path.stem + "-heatmap.json"), "--report")
    check_output_file(heatmap_path, "--heatmap")
    if is_tree_model_folder(folder):
        ignored = [
            flag
            for flag, given in (
                ("--heatmap", args.heatmap is not None),
                ("--beam", args.beam != 3),
                ("--top-n", args.top_n != 1),
                ("--alpha-symbols", args.alpha_symbols != DEFAULT_ALPHA_SYMBOLS),
                ("--alpha-pool", args.alpha_pool != 5),
                ("--max-perm", args.max_perm != 120),
                ("--alpha-samples", args.alpha_samples != 100),
                ("--draws", args.draws != 10),
            )
            if given
        ]
        if ignored:  # a tree model runs its own steps: none of these would change what it does
            raise ValueError(f"{', '.join(ignored)} do(es) not apply to a tree model ({folder}); leave it out")
        return run_evaluate_trees(args, folder, report_path)
    from ..models.folders import load_model

    model, tokenizer, folder = load_model(args.model)
    capacity = getattr(tokenizer, "max_symbols", None)
    if args.alpha_symbols and max(args.alpha_symbols) > args.alpha_pool:
        raise ValueError(
            f"--alpha-symbols {max(args.alpha_symbols)} is more than --alpha-pool {args.alpha_pool}, the symbols "
            "inputs are renamed into"
        )
    if capacity is not None and args.alpha_pool > capacity:
        raise ValueError(
            f"--alpha-pool {args.alpha_pool} is more than the {capacity} symbols the model's tokenizer has"
        )
    task = task_for_vocabulary(model.config.vocabulary).name
    split = load_split(args.data, task, args.split, args.limit)
    sources, targets = list(split["input"]), list(split["target"])
    if getattr(model.config, "embedding_type", None) == "random":
        loss = median_loss_draw(model, tokenizer, sources, targets, args.draws, args.seed)
        print(f"random embeddings: using the median-loss draw of {args.draws} (loss {loss:.4f})")
    columns = split.column_names
    report = evaluate_model(
        model,
        tokenizer,
        task,
        sources,
        targets,
        num_symbols=list(split["num_symbols"]) if "num_symbols" in columns else None,
        sizes=list(split["size"]) if "size" in columns else None,
        num_beams=args.beam,
        top_n=args.top_n,
        batch_size=args.batch_size,
        alpha_symbol_counts=args.alpha_symbols,
        alpha_pool=args.alpha_pool,
        max_perm=args.max_perm,
        alpha_samples=args.alpha_samples,
        seed=args.seed,
    )
    print("\n".join(report.summary_lines()))
    write_text_atomic(report_path, json.dumps(report.to_dict(), indent=1, default=str))
    save_heatmap(report, report_path.with_name(report_path.stem + "-heatmap.json"), heatmap_path)
    record_written(report_path, report_path.with_name(report_path.stem + "-heatmap.json"), heatmap_path)
    print(f"report: {report_path}\nheatmap: {heatmap_path}")
    return 0


# ---------------------------------------------------------------------------------------------------
# solve
# ---------------------------------------------------------------------------------------------------
def add_solve_parser(subparsers: _Subparsers) -> None:
    parser = subparsers.add_parser(
        "solve",
        help="ask a model for an answer and check it",
        description="Print the model's answers to one or more inputs (any symbol names), the checker's verdict "
        "and, for LTL, the trace in readable infix.",
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="[MODEL] INPUT",
        help="a saved model folder (default: a trained model that ships with the package, chosen by each input: "
        "prop-small, prop-best for formulas of more than 20 nodes, ltl-best for LTL), then one or more inputs, "
        "e.g. '& a | b ! c' '& req X grant' (Polish notation; each model is loaded once)",
    )
    parser.add_argument(
        "--task",
        choices=("prop", "ltl"),
        default=None,
        help="without MODEL: answer as this task (a formula without temporal operators is propositional unless "
        "--task ltl)",
    )
    parser.add_argument("--beam", type=positive_int, default=3)
    parser.add_argument("--top-n", type=positive_int, default=1)
    parser.add_argument("--symbols", default=None, metavar="REGEX", help="which names are symbols")
    parser.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    from ..evaluation.solve import Solver
    from .trees import is_tree_model_folder, run_solve_trees

    folder, texts = _solve_arguments(args.inputs)
    if folder is not None and args.task is not None:
        raise ValueError("--task chooses among the shipped models: it cannot be given with a MODEL")
    solver = Solver(folder)  # each model is loaded once, whatever the number of inputs
    status = 0
    for text in texts:
        if len(texts) > 1:
            print(f"input: {text}")
        if folder is not None and is_tree_model_folder(folder):
            status = max(status, run_solve_trees(folder, text))
            continue
        try:
            source = solver.model_folder(text, args.task, args.symbols)
        except ValueError as error:
            if len(texts) == 1:
                raise
            print(f"error: {error} (quote an INPUT with spaces)", file=sys.stderr)
            status = 2
            continue
        try:
            solution = solver.solve(text, beam=args.beam, top_n=args.top_n, symbols=args.symbols, folder=source)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            status = 2
            continue
        for rank, answer in enumerate(solution.answers, 1):
            print(f"{rank}. {answer.text}    [{answer.verdict}]")
            if answer.trace is not None:
                print(f"   trace: {answer.trace}")
        if solution.satisfiable is False:
            print("the formula is unsatisfiable (the exact solver says so): no answer can be correct")
    return status


def _solve_arguments(inputs: list[str]) -> tuple[Path | None, list[str]]:
    """``[MODEL] INPUT ...``: the first argument is a MODEL when there are more and it names a folder (or a path,
    which is then refused if it is missing); every other argument is an input."""
    first = inputs[0]
    if len(inputs) > 1 and (Path(first).is_dir() or os.sep in first or Path(first).exists()):
        return resolve_model_folder(first), inputs[1:]
    return None, inputs


# ---------------------------------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------------------------------
def add_convert_parser(subparsers: _Subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="retrofit a checkpoint into the stream architecture",
        description="Convert a fixed-embedding model of this family into a SIT with the same tensors (paper §5.8: "
        "actual row <- the row of --actual, placeholder row <- the row of --placeholder, every other "
        "tensor one to one), or wrap a standard Hugging Face encoder-decoder checkpoint (BART, Marian, "
        "...) as a per-stream model. Prints the mapping; writes DST atomically. Fine-tune a converted SIT "
        "with `symbolinv train --init-from DST --epochs 1`; a wrapped model is used from Python.",
    )
    parser.add_argument("source", metavar="SRC", help="a saved model folder or a Hub model id")
    parser.add_argument("destination", metavar="DST", help="folder to write the converted model and tokenizer to")
    parser.add_argument("--actual", default="a", help="the symbol whose embedding becomes the actual row (default a)")
    parser.add_argument(
        "--placeholder", default="b", help="the symbol whose embedding becomes the placeholder row (default b)"
    )
    parser.add_argument(
        "--symbols",
        default=None,
        metavar="REGEX",
        help="which token strings are interchangeable symbols (full match); family models keep "
        "their tokenizer's rule by default",
    )
    parser.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    from ..convert import convert_checkpoint
    from ..files import check_model_destination

    source = Path(args.source)
    # A Hub id has one slash at most and no leading "." or "/"; anything else is meant as a local folder,
    # and "Repo id must be in the form ..." would hide that it is simply missing.
    local = source.exists() or args.source.startswith((".", "/", "~")) or args.source.count("/") > 1
    if local and not source.is_dir():
        what = "is a file, not a model folder" if source.exists() else "no such folder"
        print(f"error: cannot read a model config from {args.source}: {what}", file=sys.stderr)
        return 2
    destination = Path(args.destination)
    if local and destination.resolve() == source.resolve():
        print(f"error: {args.destination} is the source model; write the converted model elsewhere", file=sys.stderr)
        return 2
    check_model_destination(destination)  # before loading and converting, which may take long for a Hub model
    try:
        convert_checkpoint(
            args.source, args.destination, actual=args.actual, placeholder=args.placeholder, symbols=args.symbols
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
