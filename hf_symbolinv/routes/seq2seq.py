"""The ``seq2seq`` route: training, evaluating and asking the families whose models generate token sequences, with
the ``Seq2SeqTrainer``, beam search and the task's checker."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..models.registry import Route, register_route
from ..tasks import get_task, task_for_vocabulary
from ..utils.progress import show_progress
from .common import (
    TrainedModel,
    checkpoint_problem,
    given_warmup,
    load_data,
    load_split,
    save_trained_model,
    stopped_early,
    with_overrides,
)


def _warmup(args: Any, steps: int) -> int | float:
    """``--warmup-steps``, ``--warmup-ratio`` (:func:`given_warmup`), or the default."""
    from ..training import default_warmup_steps

    given = given_warmup(args)
    return default_warmup_steps(steps) if given is None else given


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


def train_seq2seq(args: Any, output: Path, config: Any, init_folder: Path | None) -> int:
    """Train a new model of ``config`` (its family's tokenizer) or the one saved in ``init_folder`` with the
    ``Seq2SeqTrainer``, judge it on the held-out split with the task's checker, save it with its card."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainingArguments

    from ..models.registry import get_family
    from ..training import (
        CommutedTrainSet,
        GracefulStop,
        SymbolInvDataCollator,
        SymbolInvTrainer,
        grouping_key,
        prepare_checkpoints,
        recipe_arguments,
        semantic_metrics,
        tokenize_dataset,
    )

    if init_folder is not None:
        from ..models.folders import check_tokenizer, load_folder

        # --set on a loaded model: only its family's fine_tune_fields get here (checked before), set on its config as
        # it loads; the trained model records the new values.
        model, tokenizer = load_folder(init_folder, **args.overrides)
        check_tokenizer(tokenizer, model)
        config = model.config
        origin = with_overrides(f"`{args.init_from}`", args.overrides)
    else:
        tokenizer = get_family(config.model_type).new_tokenizer(config, args.task)
        model = None
        origin = f"preset `{args.preset}`"
    if get_task(args.task).vocabulary != config.vocabulary:
        raise ValueError(f"{origin} is for the {config.vocabulary!r} vocabulary, not task {args.task!r}")
    dataset = load_data(args.data, args.task, "train")
    if "train" not in dataset:
        raise ValueError(f"{args.data} has no train split (splits: {', '.join(dataset)})")
    eval_name = next((name for name in ("validation", "val", "test") if name in dataset), None)
    train_split = dataset["train"]
    if args.max_train_samples is not None:
        train_split = train_split.select(range(min(args.max_train_samples, len(train_split))))
    num_proc = args.workers if args.workers > 1 else None
    teach = args.task if args.targets == "taught" else None
    # Refused before the split is tokenised: a task whose inputs have no commuted form.
    commuted = (
        CommutedTrainSet(train_split, tokenizer, args.task, teach is not None, args.seed)
        if args.augment == "commute"
        else None
    )
    # Augmented, the tokenised split gives only the inputs' lengths and stream counts (a swap changes neither): the
    # samples and their taught targets are written anew at each draw, so none is taught here.
    train = tokenize_dataset(train_split, tokenizer, num_proc=num_proc, task=teach if commuted is None else None)
    drawn = commuted if commuted is not None else train
    evaluation = None
    if eval_name is not None:
        held_out = dataset[eval_name].select(range(min(args.eval_samples, len(dataset[eval_name]))))
        evaluation = tokenize_dataset(held_out, tokenizer, task=teach)
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
        disable_tqdm=not show_progress(),  # off a terminal, the log a line per step
        generation_num_beams=args.beam,
        generation_max_length=128,
        report_to=[],
        seed=args.seed,
        data_seed=args.seed,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    stop = GracefulStop(args.time_limit * 60 if args.time_limit is not None else None)
    given = given_warmup(args)
    # What a resumed run must keep (its optimizer and schedule are restored): recorded with every checkpoint.
    options = {
        "learning_rate": args.lr,
        "batch_size": args.batch_size,
        "gradient_accumulation": args.grad_accum,
        "targets": args.targets,
        "seed": args.seed,
        "warmup": "default" if given is None else given,
        "steps": steps,
        "max_train_samples": args.max_train_samples,
        "curriculum": args.curriculum,
        "augment": args.augment,
    }
    trainer = SymbolInvTrainer(
        model=model,
        args=training_args,
        train_dataset=drawn,
        eval_dataset=evaluation,
        processing_class=tokenizer,
        data_collator=SymbolInvDataCollator(tokenizer, model=model, bucketed=args.compile is not None),
        compile_backend=args.compile,
        checkpoint_options=options,
        compute_metrics=semantic_metrics(args.task, tokenizer, held_out["input"], held_out["target"])
        if evaluation is not None
        else None,
        callbacks=[stop],
        group_keys=[grouping_key(ids, mask) for ids, mask in zip(train["input_ids"], train["symbol_mask"])]
        if args.group_by_length
        else None,
        curriculum_sizes=[len(ids) for ids in train["input_ids"]] if args.curriculum else None,
        curriculum_steps=args.curriculum,
    )
    problem = checkpoint_problem(config, output / "checkpoints", args.no_resume)
    if problem is not None:
        raise ValueError(problem)
    start = prepare_checkpoints(output / "checkpoints", options, resume=not args.no_resume)
    # A checkpoint that cannot be written (a full disk) ends the run in one line: see CheckpointRecordMixin.
    try:
        trainer.train(resume_from_checkpoint=str(start) if start is not None else None)
    finally:
        stop.release()
    if stopped_early(stop, steps, output / "checkpoints"):
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
    return save_trained_model(
        TrainedModel(
            arguments=args,
            output=output,
            model=model,
            tokenizer=tokenizer,
            origin=origin,
            train_size=len(train),
            steps=steps,
            batch=batch,
            report=report,
            eval_name=eval_name,
        )
    )


def evaluate_seq2seq(args: Any, folder: Path, report_path: Path, heatmap_path: Path) -> int:
    """Correct, exact, invalid, unknown, top-N, alpha-covariance per symbol count and a heatmap, by beam search
    and the task's checker."""
    import json

    from ..evaluation import evaluate_model, save_heatmap
    from ..models.folders import load_model
    from ..utils.files import record_written, write_text_atomic

    model, tokenizer, folder = load_model(str(folder))
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
    if args.whole_story and task != "clutrr":
        raise ValueError(f"--whole-story applies to CLUTRR models only; {folder} answers {task}")
    split = load_split(args.data, task, args.split, args.limit)
    sources, targets = list(split["input"]), list(split["target"])
    if getattr(model.config, "embedding_type", None) == "random":
        loss = median_loss_draw(model, tokenizer, sources, targets, args.draws, args.seed)
        print(f"random embeddings: using the median-loss draw of {args.draws} (loss {loss:.4f})")
    columns = split.column_names
    from ..evaluation.chains import DEFAULT_MAX_SPAN, composed_answers

    answer = None
    if task == "clutrr" and not args.whole_story:

        def answer(texts: list[str]) -> list[list[str]]:
            return composed_answers(model, tokenizer, texts, beam=args.beam, top_n=args.top_n)

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
        answer=answer,
    )
    print("\n".join(report.summary_lines()))
    written = report.to_dict()
    if task == "clutrr":
        written["answered_by"] = (
            "the whole story"
            if args.whole_story
            else f"chain composition (beam {args.beam}, stories of up to {DEFAULT_MAX_SPAN} facts asked whole)"
        )
    write_text_atomic(report_path, json.dumps(written, indent=1, default=str))
    save_heatmap(report, report_path.with_name(report_path.stem + "-heatmap.json"), heatmap_path)
    record_written(report_path, report_path.with_name(report_path.stem + "-heatmap.json"), heatmap_path)
    print(f"report: {report_path}\nheatmap: {heatmap_path}")
    return 0


#: ``symbolinv train`` options are all the seq2seq route's; its models are asked through
#: :class:`hf_symbolinv.evaluation.solve.Solver` (``solve`` below is None).
ROUTE = Route(name="seq2seq", train=train_seq2seq, evaluate=evaluate_seq2seq)
register_route(ROUTE)
