"""The ``tree`` route: training, evaluating and asking models that hold trees, not token sequences (tasks ``tree`` and
``nnf``).

The route trains with the plain ``Trainer`` (the loss is inside the model, the batches are trees, there is no
generation) and judges by tree match (and, for ``nnf``, semantic equivalence by the logic engine).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from ..models.registry import Route, register_route
from .common import (
    DEFAULT_ALPHA_SYMBOLS,
    TrainedModel,
    checkpoint_problem,
    given_warmup,
    load_data,
    load_split,
    save_trained_model,
    stopped_early,
    with_overrides,
)

#: ``symbolinv train`` options the tree route does not take, with their defaults: given, they are an error
#: rather than silently ignored.
_NOT_FOR_TREES: dict[str, Any] = {
    "embedding_type": None,
    "grad_accum": 1,
    "eval_steps": None,
    "bf16": False,
    "group_by_length": False,
    "curriculum": 0,
    "augment": "none",
    "workers": 0,
    "targets": "taught",  # tree targets are taught as written
}


def load_tree_folder(folder: Path) -> tuple[Any, Any]:
    """The model and tokenizer of a saved tree-model folder, by its family's ``load`` (which checks the tokenizer
    against the model)."""
    from ..models.registry import folder_model_type, get_family

    return get_family(folder_model_type(folder) or "").load(folder)


def tree_task(config: Any) -> str:
    """The task a tree model's config records (its vocabulary); ``ValueError`` where it records none."""
    from ..tasks import task_for_vocabulary

    if config.vocabulary is None:
        raise ValueError("the model's config records no task vocabulary (config.vocabulary); it cannot be judged")
    return task_for_vocabulary(config.vocabulary).name


def train_tree(args: Any, output: Path, config: Any, init_folder: Path | None) -> int:
    """Train a tree model: a new one of ``config`` or the one saved in ``init_folder``."""
    from transformers import AutoModel

    from ..evaluation.tree import evaluate_tree_model
    from ..models.registry import get_family
    from ..training.tree import check_tree_rows, train_tree_model

    if init_folder is not None:
        model, tokenizer = load_tree_folder(init_folder)
        model.train()
        config, origin = model.config, f"`{args.init_from}`"
        # --set on a loaded model: only its family's fine_tune_fields get here (checked before); the model records
        # the new values, so it answers as it was trained.
        for name, value in args.overrides.items():
            setattr(config, name, value)
        if args.overrides:
            config.validate_combinations()
            origin = with_overrides(origin, args.overrides)
    else:
        tokenizer = get_family(config.model_type).new_tokenizer(config, args.task)
        model, origin = AutoModel.from_config(config), f"preset `{args.preset}`"
    task = tree_task(config)
    if task != args.task:
        raise ValueError(f"{origin} is a model for task {task!r}, not {args.task!r}")
    dataset = load_data(args.data, args.task, "train")
    if "train" not in dataset:
        raise ValueError(f"{args.data} has no train split (splits: {', '.join(dataset)})")
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
        raise ValueError(problem)
    warmup = given_warmup(args)  # neither option: the recipe's 5%
    stop = train_tree_model(
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
        compile_backend=args.compile,
        warmup=warmup,
        options={
            "learning_rate": args.lr,
            "batch_size": args.batch_size,
            "seed": args.seed,
            "steps": steps,
            "max_train_samples": args.max_train_samples,
            # Recorded only when given, so that runs from before the option resume as they were.
            **({"warmup": warmup} if warmup is not None else {}),
        },
    )
    if stopped_early(stop, steps, checkpoints):
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
        TrainedModel(
            arguments=args,
            output=output,
            model=model,
            tokenizer=tokenizer,
            origin=origin,
            train_size=len(train),
            steps=steps,
            batch=str(args.batch_size),
            report=report,
            eval_name=eval_name,
        )
    )


def evaluate_tree(args: Any, folder: Path, report_path: Path, heatmap_path: Path) -> int:
    """Evaluate a tree model on a split: correct, exact, invalid, by input size, the steps it ran (no heatmap)."""
    from ..evaluation.tree import evaluate_tree_model
    from ..training.tree import check_tree_rows
    from ..utils.files import record_written, write_text_atomic

    model, tokenizer = load_tree_folder(folder)
    task = tree_task(model.config)
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


def solve_tree(folder: Path, texts: list[str]) -> int:
    """Print a tree model's answer to each input, the model loaded once; for ``nnf`` also the logic engine's
    verdict (the tree task has no checker without a reference). A bad input is named and the others still answered;
    the exit status is 2 when any failed."""
    from ..evaluation.tree import answer_tree

    model, tokenizer = load_tree_folder(folder)
    task = tree_task(model.config)
    status = 0
    for text in texts:
        if len(texts) > 1:
            print(f"input: {text}")
        try:
            result = answer_tree(model, tokenizer, task, text)
        except (ValueError, SyntaxError) as error:
            if len(texts) == 1:
                raise
            lines = str(error).strip().splitlines()
            print(f"error: {lines[0] if lines else type(error).__name__}", file=sys.stderr)
            status = 2
            continue
        print(f"1. {result.answer}    [{result.verdict}, {result.steps} steps]")
    return status


#: The tree route's ``symbolinv evaluate`` options it does not take (a tree model runs its own steps), with defaults.
_EVALUATE_NOT_FOR_TREES: dict[str, Any] = {
    "heatmap": None,
    "beam": 3,
    "top_n": 1,
    "alpha_symbols": list(DEFAULT_ALPHA_SYMBOLS),
    "alpha_pool": 5,
    "max_perm": 120,
    "alpha_samples": 100,
    "draws": 10,
    "whole_story": False,
}

ROUTE = Route(
    name="tree",
    train=train_tree,
    evaluate=evaluate_tree,
    solve=solve_tree,
    train_options_not_taken=_NOT_FOR_TREES,
    evaluate_options_not_taken=_EVALUATE_NOT_FOR_TREES,
)
register_route(ROUTE)
