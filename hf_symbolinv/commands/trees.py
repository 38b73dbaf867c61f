"""``symbolinv train`` and ``symbolinv evaluate`` for the tree family (DTM, DTE, Terminating DTE; tasks ``tree``
and ``nnf``): ``model.py`` hands a DTE preset, a DTE ``--init-from`` or a DTE model folder to these handlers.

The family trains with the plain ``Trainer`` (the loss is inside the model, the batches are trees, there is no
generation) and is judged by tree match (and, for ``nnf``, semantic equivalence by the logic engine).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

#: ``symbolinv train`` options the tree family does not take, with their defaults: given, they are an error
#: rather than silently ignored.
_NOT_FOR_TREES: dict[str, Any] = {
    "embedding_type": None,
    "grad_accum": 1,
    "eval_steps": None,
    "bf16": False,
    "group_by_length": False,
    "workers": 0,
    "warmup_steps": None,  # the tree family keeps the recipe's 5%
    "warmup_ratio": None,
}


def is_tree_model_folder(folder: Path) -> bool:
    """Whether a saved model folder holds a tree-family model (its config's ``model_type`` is ``dte``)."""
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type") == "dte"
    except (OSError, ValueError):
        return False


def load_tree_model(folder: Path) -> tuple[Any, Any]:
    """The model and tokenizer of a saved tree-family folder; a tokenizer of other labels than the model's
    is refused naming both."""
    from ..models.dte import DTEForTreeTransduction, DTETreeTokenizer
    from ..presets import tree_tokenizer

    model = DTEForTreeTransduction.from_pretrained(folder).eval()
    tokenizer = DTETreeTokenizer.from_pretrained(folder)
    tokenizer.check_model_config(model.config)
    if model.config.vocabulary is not None:
        # The sizes agree; the labels, in order, must be the task's too (two swapped labels keep every size).
        task = _task_of(model.config)
        expected = tree_tokenizer(task, model.config.max_depth, tokenizer.max_symbols)
        ours, theirs = tokenizer.labels, expected.labels
        differ = [i for i, (mine, task_label) in enumerate(zip(ours, theirs)) if mine != task_label]
        if differ or tokenizer.symbol_pattern != expected.symbol_pattern:
            where = (
                f"label {differ[0]} is {ours[differ[0]]!r}, task {task!r} has {theirs[differ[0]]!r}"
                if differ
                else f"symbol pattern {tokenizer.symbol_pattern!r}, task {task!r} has {expected.symbol_pattern!r}"
            )
            raise ValueError(f"the tokenizer in {folder} does not match the model's task: {where}")
    return model, tokenizer


def _task_of(config: Any) -> str:
    from ..tasks import task_for_vocabulary

    if config.vocabulary is None:
        raise ValueError("the model's config records no task vocabulary (config.vocabulary); it cannot be judged")
    return task_for_vocabulary(config.vocabulary).name


def run_train_trees(args: argparse.Namespace, output: Path, config: Any = None, init_folder: Path | None = None) -> int:
    """Train a tree-family model: a new one of ``config`` or the one saved in ``init_folder``."""
    from transformers import set_seed

    from ..evaluation.trees import evaluate_tree_model
    from ..models.dte import DTEForTreeTransduction
    from ..presets import tree_tokenizer
    from ..training.trees import check_tree_rows, train_tree_model
    from .model import checkpoint_problem, checkpoint_writes, load_data, save_trained_model, stopped_by_time_limit

    given = [
        "--" + name.replace("_", "-") for name, default in _NOT_FOR_TREES.items() if getattr(args, name) != default
    ]
    if given:
        print(f"error: {', '.join(given)}: not options of the tree family (DTE presets)", file=sys.stderr)
        return 2
    set_seed(args.seed)
    if init_folder is not None:
        model, tokenizer = load_tree_model(init_folder)
        model.train()
        config, origin = model.config, f"`{args.init_from}`"
    else:
        tokenizer = tree_tokenizer(args.task, config.max_depth, config.max_symbols)
        model, origin = DTEForTreeTransduction(config), f"preset `{args.preset}`"
    task = _task_of(config)
    if task != args.task:
        print(f"error: {origin} is a model for task {task!r}, not {args.task!r}", file=sys.stderr)
        return 2
    dataset = load_data(args.data, args.task, "train")
    if "train" not in dataset:
        print(f"error: {args.data} has no train split (splits: {', '.join(dataset)})", file=sys.stderr)
        return 2
    train = dataset["train"]
    if args.max_train_samples is not None:
        train = train.select(range(min(args.max_train_samples, len(train))))
    check_tree_rows(tokenizer, train, "train")
    steps = args.steps or 1000
    if args.epochs is not None:
        steps = max(1, math.ceil(args.epochs * len(train) / args.batch_size))
    checkpoints = output / "checkpoints"
    problem = checkpoint_problem(config, checkpoints, args.no_resume)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    with checkpoint_writes(checkpoints):
        time_limit = train_tree_model(
            model,
            tokenizer,
            train,
            checkpoints,
            steps=steps,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            seed=args.seed,
            time_limit_minutes=args.time_limit,
            resume=not args.no_resume,
        )
    if stopped_by_time_limit(time_limit, steps, args.time_limit, checkpoints):
        return 0
    eval_name = next((name for name in ("validation", "val", "test") if name in dataset), None)
    report = None
    if eval_name is not None:
        held_out = dataset[eval_name].select(range(min(args.eval_samples, len(dataset[eval_name]))))
        report = evaluate_tree_model(
            model,
            tokenizer,
            task,
            held_out["input"],
            held_out["target"],
            batch_size=args.eval_batch_size or args.batch_size,
        )
    return save_trained_model(
        args, output, model, tokenizer, origin, len(train), steps, str(args.batch_size), report, eval_name
    )


def run_evaluate_trees(args: argparse.Namespace, folder: Path, report_path: Path) -> int:
    """Evaluate a tree-family model on a split: correct, exact, invalid, by input size, the steps it ran."""
    from ..evaluation.trees import evaluate_tree_model
    from ..files import record_written, write_text_atomic
    from ..training.trees import check_tree_rows
    from .model import load_split

    model, tokenizer = load_tree_model(folder)
    task = _task_of(model.config)
    split = load_split(args.data, task, args.split, args.limit)
    check_tree_rows(tokenizer, split, args.split)
    report = evaluate_tree_model(
        model,
        tokenizer,
        task,
        split["input"],
        split["target"],
        sizes=split["size"] if "size" in split.column_names else None,
        batch_size=args.batch_size,
    )
    print(
        f"{args.split}: {report['count']} samples, correct {100 * report['correct']:.2f}%, exact "
        f"{100 * report['exact']:.2f}%, invalid {100 * report['invalid']:.2f}% ({report['num_steps']} steps)"
    )
    write_text_atomic(report_path, json.dumps(report, indent=1))
    record_written(report_path)
    print(f"report: {report_path}")
    return 0


def run_solve_trees(folder: Path, text: str) -> int:
    """Print a tree-family model's answer to one input; for ``nnf`` also the logic engine's verdict (the tree
    task has no checker without a reference)."""
    from ..evaluation.trees import predict_trees
    from ..tasks import get_task

    model, tokenizer = load_tree_model(folder)
    task = _task_of(model.config)
    (answer,), steps = predict_trees(model, tokenizer, [text])
    verdict = get_task(task).judge(text, answer, None, None)
    state = (
        "invalid"
        if verdict.invalid
        else "unknown"
        if verdict.unknown
        else "correct"
        if verdict.correct
        else "incorrect"
    )
    print(f"1. {answer}    [{state}, {steps} steps]")
    return 0
