"""The demo (``symbolinv demo``, :func:`run_demo` from Python): train a small SIT and a fixed-embedding baseline on
the copy task and compare.

Everything is generated locally (no download): a copy-task dataset with at most five distinct
characters, two same-size models trained with ``Seq2SeqTrainer``, greedy evaluation at the training
symbol count and with more symbols than the baseline has embeddings for, alpha-covariance, and a
saved, reloadable SIT checkpoint with a model card and an accuracy heatmap.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..tasks.copy import (
    LETTERS,
    CopySpec,
    exact_match,
    grid_copy_strings,
    mean_alpha_covariance,
    mean_edit_distance,
    sample_copy_strings,
)
from ..utils.files import (
    check_model_destination,
    check_output_file,
    check_output_folder,
    save_model_folder,
    write_text_atomic,
)
from ..utils.model_card import render_card
from ..utils.progress import show_progress

#: Characters of the training data. Letters have fixed symbol slots (a -> 0 ... e -> 4), so a
#: baseline with five symbol rows can run exactly these; the SIT never sees another name.
TRAIN_ALPHABET = "abcde"
NOT_RUNNABLE = "n/a (cannot run)"
#: Strings shown after reloading: training-like, then more symbols and names never trained on.
PROBES = ["abcde", "eeddcab", "xylophone", "jumpingfox"]


@dataclass(frozen=True)
class DemoSettings:
    """Sizes of one demo run: ``DEFAULT`` takes about 1.5 minutes on one CPU core, ``QUICK`` seconds."""

    steps: int = 600  # both models are at 100% by about 250 steps (seed 0); the rest is margin
    batch_size: int = 64
    generate_batch_size: int = 256  # generation cost is mostly per step, so big batches pay
    train_size: int = 20000
    eval_size: int = 500
    more_size: int = 500
    alpha_inputs: int = 200
    alpha_variants: int = 8
    grid_distinct: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    grid_length: tuple[int, ...] = (2, 4, 6, 8, 10, 12, 14, 16, 18, 20)
    grid_per_cell: int = 20
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    ffn_dim: int = 128
    dropout: float = 0.0
    learning_rate: float = 1e-3


DEFAULT = DemoSettings()
QUICK = DemoSettings(
    steps=250,
    batch_size=32,
    train_size=1000,
    eval_size=32,
    more_size=32,
    alpha_inputs=12,
    alpha_variants=4,
    grid_distinct=(1, 4, 8),
    grid_length=(4, 8, 12),
    grid_per_cell=3,
    layers=1,
)

TRAIN_SPEC = CopySpec(distinct=(1, 5), length=(5, 10), alphabet=TRAIN_ALPHABET)
# More distinct characters than training ever had, named with any letter a-z.
MORE_SPEC = CopySpec(distinct=(6, 10), length=(6, 12), alphabet=LETTERS)


# ---------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------
def build_datasets(settings: DemoSettings, seed: int) -> dict[str, Any]:
    """The demo's copy-task splits as ``datasets.Dataset`` objects with a ``text`` column.

    ``train`` and ``eval`` (held-out strings) use at most five distinct characters; ``more``
    uses six to ten. Strings seen in training are kept out of the evaluation splits.
    """
    from datasets import Dataset

    rng = random.Random(seed)
    train = sample_copy_strings(rng, settings.train_size, TRAIN_SPEC)
    seen = set(train)
    held_out: list[str] = []
    while len(held_out) < settings.eval_size:
        candidate = sample_copy_strings(rng, 1, TRAIN_SPEC)[0]
        if candidate not in seen:
            seen.add(candidate)
            held_out.append(candidate)
    more = sample_copy_strings(rng, settings.more_size, MORE_SPEC)
    return {
        name: Dataset.from_dict({"text": texts})
        for name, texts in (("train", train), ("eval", held_out), ("more", more))
    }


# ---------------------------------------------------------------------------------------------------
# Models and training
# ---------------------------------------------------------------------------------------------------
def build_models(settings: DemoSettings, seed: int) -> dict[str, Any]:
    """The SIT and the fixed-embedding baseline, same widths and depths."""
    from transformers import set_seed

    from ..models.symbolinv.configuration_symbolinv import SymbolInvConfig
    from ..models.symbolinv.modeling_symbolinv import SymbolInvForConditionalGeneration

    dims = dict(
        d_model=settings.d_model,
        encoder_layers=settings.layers,
        decoder_layers=settings.layers,
        encoder_attention_heads=settings.heads,
        decoder_attention_heads=settings.heads,
        encoder_ffn_dim=settings.ffn_dim,
        decoder_ffn_dim=settings.ffn_dim,
        dropout=settings.dropout,
    )
    configs = {
        "sit": SymbolInvConfig.from_preset("copy", **dims),
        # One learned row per training character: the classic closed-vocabulary model.
        "baseline": SymbolInvConfig.from_preset("copy-vanilla", num_symbol_embeddings=len(TRAIN_ALPHABET), **dims),
    }
    models = {}
    for name, config in configs.items():
        set_seed(seed)  # both start from the same random state
        models[name] = SymbolInvForConditionalGeneration(config)
    return models


def train_model(
    model: Any,
    tokenizer: Any,
    train_dataset: Any,
    eval_dataset: Any,
    settings: DemoSettings,
    seed: int,
    workdir: str,
    name: str,
) -> float:
    """Train with ``Seq2SeqTrainer``; returns the wall time in seconds."""
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    from ..training import SymbolInvDataCollator, recipe_arguments

    steps = settings.steps
    args = Seq2SeqTrainingArguments(
        output_dir=os.path.join(workdir, name),
        max_steps=steps,
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.batch_size,
        **recipe_arguments(learning_rate=settings.learning_rate),
        optim="adamw_torch",
        eval_strategy="steps",
        eval_steps=max(steps // 2, 1),
        logging_steps=max(steps // 10, 1),
        save_strategy="no",
        report_to=[],
        disable_tqdm=not show_progress(),  # off a terminal, the log a line per step
        seed=seed,
        data_seed=seed,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,  # tiny batches: pinning gains nothing and warns without a GPU
        # symbol_mask is in the model's forward signature, so this keeps it and drops nothing else.
        remove_unused_columns=True,
    )
    trainer = Seq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=SymbolInvDataCollator(tokenizer, model=model),
    )
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------------
def generate_copies(
    model: Any, tokenizer: Any, texts: Sequence[str], batch_size: int = 64, desc: str = "generating"
) -> list[str]:
    """Greedy copies of ``texts``, in the callers' character names (raises the model's ValueError
    when it cannot run an input)."""
    from ..evaluation import generate_answers

    # A copy is as long as its input; the margin lets a wrong, longer answer show as wrong.
    answers = generate_answers(
        model,
        tokenizer,
        texts,
        num_beams=1,
        batch_size=batch_size,
        max_new_tokens=lambda batch: max(map(len, batch)) + 4,
        desc=desc,
    )
    return [candidates[0] for candidates in answers]


def evaluate_model(
    model: Any, tokenizer: Any, datasets: dict[str, Any], settings: DemoSettings, seed: int, name: str
) -> dict[str, Any]:
    """Accuracy, edit distance and alpha-covariance on the training-count and more-symbols sets."""
    eval_texts = list(datasets["eval"]["text"])
    more_texts = list(datasets["more"]["text"])
    bs = settings.generate_batch_size
    result: dict[str, Any] = {}

    predictions = generate_copies(model, tokenizer, eval_texts, bs, desc=f"{name}: <=5 symbols")
    result["accuracy"] = exact_match(predictions, eval_texts)
    result["edit_distance"] = mean_edit_distance(predictions, eval_texts)

    try:
        predictions = generate_copies(model, tokenizer, more_texts, bs, desc=f"{name}: 6-10 symbols")
    except ValueError as err:
        if model.config.embedding_type == "streams":
            raise  # the SIT runs any symbol count: an error here is a real failure
        # A fixed-embedding model refuses symbols it has no row for: report that, never invent a score.
        result.update(
            accuracy_more=None, edit_distance_more=None, more_symbols_runnable=False, more_symbols_error=str(err)
        )
    else:
        result.update(
            accuracy_more=exact_match(predictions, more_texts),
            edit_distance_more=mean_edit_distance(predictions, more_texts),
            more_symbols_runnable=True,
            more_symbols_error=None,
        )

    def predict(texts: list[str]) -> list[str]:
        return generate_copies(model, tokenizer, texts, bs, desc=f"{name}: alpha-covariance")

    # Same renamed variants for both models (same seed): permutations of the training characters.
    rng = random.Random(seed + 1)
    result["alpha_covariance"] = mean_alpha_covariance(
        predict, eval_texts[: settings.alpha_inputs], TRAIN_ALPHABET, settings.alpha_variants, rng
    )
    if result["more_symbols_runnable"]:
        # Renamings into all 26 letters: names the SIT never saw in training.
        rng = random.Random(seed + 2)
        result["alpha_covariance_more"] = mean_alpha_covariance(
            predict, more_texts[: settings.alpha_inputs], LETTERS, settings.alpha_variants, rng
        )
    else:
        result["alpha_covariance_more"] = None
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result


def accuracy_grid(model: Any, tokenizer: Any, settings: DemoSettings, seed: int) -> dict[str, Any]:
    """SIT exact-match accuracy per (distinct characters, length) cell; None where infeasible."""
    cells = grid_copy_strings(
        random.Random(seed + 3), settings.grid_distinct, settings.grid_length, settings.grid_per_cell
    )
    texts = [text for cell in cells.values() for text in cell]
    outputs = generate_copies(model, tokenizer, texts, settings.generate_batch_size, desc="sit: heatmap grid")
    predictions = iter(outputs)
    scores = {key: exact_match([next(predictions) for _ in cell], cell) for key, cell in cells.items()}
    return {
        "distinct": list(settings.grid_distinct),
        "length": list(settings.grid_length),
        "accuracy": [[scores.get((k, n)) for n in settings.grid_length] for k in settings.grid_distinct],
        "per_cell": settings.grid_per_cell,
    }


# ---------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------
MODEL_LABELS = {"sit": "SIT (streams)", "baseline": "fixed embeddings"}


def _percent(value: float | None) -> str:
    return NOT_RUNNABLE if value is None else f"{100 * value:.1f}%"


def _number(value: float | None) -> str:
    return NOT_RUNNABLE if value is None else f"{value:.3f}"


def table_rows(models: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(metric, one cell per model) in display order."""
    rows = [
        ("accuracy, <=5 symbols (training)", "accuracy", _percent),
        ("accuracy, 6-10 symbols", "accuracy_more", _percent),
        ("mean edit distance, <=5 symbols", "edit_distance", _number),
        ("mean edit distance, 6-10 symbols", "edit_distance_more", _number),
        ("alpha-covariance, <=5 symbols", "alpha_covariance", _percent),
        ("alpha-covariance, 6-10 symbols", "alpha_covariance_more", _percent),
        ("parameters", "parameters", lambda v: f"{v:,}"),
        ("training time", "train_seconds", lambda v: f"{v:.0f} s"),
    ]
    return [(label, [fmt(models[name][key]) for name in models]) for label, key, fmt in rows]


def format_table(models: dict[str, dict[str, Any]]) -> str:
    """Plain-text side-by-side table."""
    headers = ["metric"] + [MODEL_LABELS.get(name, name) for name in models]
    rows = [[label, *cells] for label, cells in table_rows(models)]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = [cell.rjust(width) for cell, width in zip(cells, widths)]
        padded[0] = cells[0].ljust(widths[0])  # metric names left-aligned, numbers right-aligned
        return "  ".join(padded)

    rule = "-" * len(line(headers))
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def markdown_table(models: dict[str, dict[str, Any]]) -> str:
    headers = ["metric"] + [MODEL_LABELS.get(name, name) for name in models]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join([label, *cells]) + " |" for label, cells in table_rows(models)]
    return "\n".join(lines)


def model_card(results: dict[str, Any]) -> str:
    """The README.md saved next to the SIT weights (``model_cards/demo.md``)."""
    settings = results["settings"]
    sit = results["models"]["sit"]
    return render_card(
        "demo",
        train_size=settings["train_size"],
        seed=results["seed"],
        train_length="{}-{}".format(*TRAIN_SPEC.length),
        train_distinct="{}-{}".format(*TRAIN_SPEC.distinct),
        train_alphabet=TRAIN_ALPHABET,
        steps=settings["steps"],
        batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        d_model=settings["d_model"],
        layers=settings["layers"],
        heads=settings["heads"],
        ffn_dim=settings["ffn_dim"],
        parameters=sit["parameters"],
        eval_size=settings["eval_size"],
        more_size=settings["more_size"],
        more_length="{}-{}".format(*MORE_SPEC.length),
        more_distinct="{}-{}".format(*MORE_SPEC.distinct),
        alpha_variants=settings["alpha_variants"],
        alpha_inputs=settings["alpha_inputs"],
        results_table=markdown_table(results["models"]),
        max_streams=sit["max_streams"],
        train_max_length=TRAIN_SPEC.length[1],
    )


def save_heatmap(grid: dict[str, Any], path: Path) -> None:
    """Accuracy over (distinct characters x length), written atomically as a PNG."""
    from ..evaluation import plot_heatmap

    plot_heatmap(
        path,
        grid["accuracy"],
        grid["distinct"],
        grid["length"],
        title=(
            f"SIT copy accuracy (%), {grid['per_cell']} strings per cell\n"
            f"trained on <= {TRAIN_SPEC.distinct[1]} characters, length "
            f"{TRAIN_SPEC.length[0]}-{TRAIN_SPEC.length[1]}"
        ),
        xlabel="string length",
        ylabel="distinct characters",
        training_box=(TRAIN_SPEC.distinct, TRAIN_SPEC.length),
    )


def check_reload(folder: Path, expected: dict[str, str]) -> dict[str, Any]:
    """Reload the saved folder through the Auto classes; it must reproduce ``expected`` (input -> output)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    reloaded = AutoModelForSeq2SeqLM.from_pretrained(folder)
    reloaded_tokenizer = AutoTokenizer.from_pretrained(folder)
    outputs = generate_copies(reloaded, reloaded_tokenizer, list(expected), desc="reloaded")
    return {
        "ok": outputs == list(expected.values()),
        "outputs": dict(zip(expected, outputs)),
        "model_class": type(reloaded).__name__,
    }


# ---------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------
def run_demo(
    output_dir: str | os.PathLike[str] = "symbolinv-demo",
    steps: int | None = None,
    seed: int = 0,
    quick: bool = False,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the whole demo; returns every number it printed, plus where it saved things.

    Keys: ``models`` (``sit`` and ``baseline``: accuracy, accuracy_more, edit_distance,
    edit_distance_more, alpha_covariance, alpha_covariance_more, more_symbols_runnable,
    more_symbols_error, parameters, train_seconds), ``heatmap`` (the grid), ``probe_outputs``,
    ``reload``, ``paths``, ``table``, ``settings``, ``seed``, ``seconds``.

    Runs single-threaded on CPU unless ``OMP_NUM_THREADS`` is set: on an idle machine a second
    thread could at best halve the time, but on a two-core machine shared with other processes,
    two threads made each training step about seven times slower than one (they wait for each
    other), and the whole demo about ten times slower.
    """
    import torch

    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)
    try:
        return _run_demo(output_dir, steps, seed, quick, log)
    finally:
        torch.set_num_threads(threads)


def _run_demo(
    output_dir: str | os.PathLike[str], steps: int | None, seed: int, quick: bool, log: Callable[[str], None]
) -> dict[str, Any]:
    import hf_symbolinv

    hf_symbolinv.register()
    from ..models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
    from ..training import tokenize_dataset

    started = time.perf_counter()
    settings = QUICK if quick else DEFAULT
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        settings = replace(settings, steps=steps)
    output = Path(output_dir)
    # Every destination is checked before minutes of training, not when the results are saved.
    check_output_folder(output)
    check_model_destination(output / "sit")
    check_output_file(output / "heatmap.png")
    check_output_file(output / "results.json")
    output.mkdir(parents=True, exist_ok=True)

    log(
        f"Building the copy task (seed {seed}): {settings.train_size:,} training strings, length "
        f"{TRAIN_SPEC.length[0]}-{TRAIN_SPEC.length[1]}, <= {TRAIN_SPEC.distinct[1]} distinct characters."
    )
    datasets = build_datasets(settings, seed)
    tokenizer = SymbolInvTokenizer.from_preset("copy")
    # Input and target are the same string; the tokenizer gives both the same symbol slots.
    train_set = tokenize_dataset(datasets["train"], tokenizer, "text", "text")
    eval_set = tokenize_dataset(datasets["eval"], tokenizer, "text", "text")
    models = build_models(settings, seed)

    results: dict[str, Any] = {"seed": seed, "settings": asdict(settings), "models": {}}
    with tempfile.TemporaryDirectory(prefix="symbolinv-trainer-") as workdir:
        for name, model in models.items():
            size = sum(p.numel() for p in model.parameters())
            log(f"\nTraining {MODEL_LABELS[name]} ({size:,} parameters, {settings.steps} steps)...")
            seconds = train_model(model, tokenizer, train_set, eval_set, settings, seed, workdir, name)
            log(f"Evaluating {MODEL_LABELS[name]}...")
            metrics = evaluate_model(model, tokenizer, datasets, settings, seed, name)
            metrics["train_seconds"] = seconds
            metrics["max_streams"] = model.config.max_streams
            results["models"][name] = metrics
    if not results["models"]["baseline"]["more_symbols_runnable"]:
        error = results["models"]["baseline"]["more_symbols_error"]
        log(f"The baseline cannot run the 6-10 symbol set: {error}")

    log("Evaluating the SIT over a grid of (distinct characters x length)...")
    results["heatmap"] = accuracy_grid(models["sit"], tokenizer, settings, seed)
    results["table"] = format_table(results["models"])

    # Outputs of the in-memory model, to compare with the saved-and-reloaded one.
    probe_outputs = generate_copies(models["sit"], tokenizer, PROBES, desc="probes")
    results["probe_outputs"] = dict(zip(PROBES, probe_outputs))
    folder, heatmap, summary = output / "sit", output / "heatmap.png", output / "results.json"
    save_model_folder(models["sit"], tokenizer, folder, card=model_card(results))
    save_heatmap(results["heatmap"], heatmap)
    results["reload"] = check_reload(folder, results["probe_outputs"])
    results["paths"] = {
        "model": str(folder),
        "model_card": str(folder / "README.md"),
        "heatmap": str(heatmap),
        "results": str(summary),
    }
    results["seconds"] = time.perf_counter() - started
    saved = {key: value for key, value in results.items() if key != "table"}
    write_text_atomic(summary, json.dumps(saved, indent=2) + "\n")

    log("\n" + results["table"] + "\n")
    log(f"SIT saved to            {folder}  (model card: {folder / 'README.md'})")
    log(f"Accuracy heatmap saved  {heatmap}")
    log(f"All numbers saved to    {summary}")
    reload = results["reload"]
    status = (
        "and generates the same outputs as before saving"
        if reload["ok"]
        else "BUT its outputs differ from those before saving"
    )
    log(f"Reloaded {folder} with AutoModelForSeq2SeqLM ({reload['model_class']}) {status}:")
    for text, copied in reload["outputs"].items():
        log(f"  {text!r} -> {copied!r}")
    log(f"Done in {results['seconds']:.0f} s.")
    return results


__all__ = ["DEFAULT", "QUICK", "DemoSettings", "build_datasets", "generate_copies", "run_demo"]
