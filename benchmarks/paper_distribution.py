"""The shipped propositional and LTL models on the paper's distributions (``prop-35``, ``ltl-35``: formulas of 1-35
nodes over 5 symbols, and the ``*-10sym`` sets with 10 symbols, never seen in training).

For each model: correct / exact / invalid of the first of 3 beams on the test split, by formula size (1-10, 11-20,
21-35 nodes) and symbol count, alpha-covariance on 5 symbols, and the ``*-10sym`` test split. With ``--write-choice``
each shipped model's choice table (its first answers on the *validation* split, by size and symbol count) is written
into its folder as ``evaluation.json``: ``symbolinv solve`` and the web page ask the model whose table is best for a
formula's size and symbol count (``hf_symbolinv.pretrained.model_for``). The test splits choose nothing.

    python benchmarks/paper_distribution.py --data-dir runs/campaign-data --write-choice
    python benchmarks/paper_distribution.py --models runs/campaign/prop-35/checkpoints/checkpoint-1000 ...
    python benchmarks/paper_distribution.py --ship prop-35 --name prop-35 --write-choice   # release a campaign
    python benchmarks/paper_distribution.py --ship prop-35 --cooled --name prop-35        # ... its cool-down
    python benchmarks/paper_distribution.py --small-formulas    # the shipped table's small-formula columns

``--ship`` releases only a better model: the candidate's choice table (its weights rounded to float16, as they would
ship) must answer more of the same validation formulas than the shipped model's table; a tie or worse keeps the
shipped model, says so in one line and exits with status 1, before the test split is measured. A better one's test
figures are measured on those same rounded weights, the release's own. Either way the verdict is appended to the
campaign's ``training_state/RUN/judged.jsonl`` (``gpu_campaign.py --results`` writes it into ``LOG.md``).

``--small-formulas`` adds to each model's row its figures on small formulas (at most 20 nodes), as the shipped
models' table gives them: the first 1,000 test formulas of ``prop-small`` / ``ltl-small`` (1-3 symbols) and 1,000
of ``*-small-8sym`` with 4-8 symbols, beam 3; so that the table shows what each shipped model is best at.

Writes ``benchmarks/results/paper_distribution/RESULTS.md`` and ``results.json`` (a model's row is replaced when it
is measured again, its small-formula figures with it; rows of other models are kept).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from learning import evaluate_groups, load_for_evaluation, machine, small_tests

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.pretrained import (
    CHOICE_TABLE,
    PRETRAINED_DIR,
    RETIRED,
    SHIPPED,
    SIZE_BANDS,
    parse_choice_table,
    size_band,
    table_hits,
)
from hf_symbolinv.pretrained import choice_table as shipped_choice_table
from hf_symbolinv.utils.files import record_written, write_text_atomic

REPOSITORY = Path(__file__).resolve().parent.parent
RESULTS = REPOSITORY / "benchmarks" / "results" / "paper_distribution"
#: The data each task is judged on: ``symbolinv data build NAME --num-samples N`` (deterministic).
DATA = {"prop": ("prop-35", 200_000), "ltl": ("ltl-35", 200_000)}
DATA_10SYM = {"prop": ("prop-35-10sym", 10_000), "ltl": ("ltl-35-10sym", 10_000)}
PAPER = {"prop": 98.03, "ltl": 98.24}
#: RESULTS.md's table is rewritten between these lines; the text around it is the study's.
TABLE_START, TABLE_END = (
    "<!-- table: written by paper_distribution.py -->",
    "<!-- end of table -->",
)  # the SIT paper's correct on its test sets


def load_split(data_dir: Path, name: str, size: int, split: str, limit: int) -> Any:
    from datasets import load_dataset

    folder = data_dir / name
    options = BuildOptions(num_samples=size, progress=False)
    # Nothing to do once built; a training call that checks the same folder holds its lock for a moment.
    dataset_builders.build(name, folder, options, wait_seconds=dataset_builders.SHARED_WAIT_SECONDS)
    rows = load_dataset(str(folder), split=split)
    return rows.select(range(min(limit, len(rows))))


def evaluate_split(model: Any, tokenizer: Any, task: str, rows: Any, beam: int, alpha: bool) -> Any:
    return evaluate_model(
        model,
        tokenizer,
        task,
        list(rows["input"]),
        list(rows["target"]),
        num_symbols=list(rows["num_symbols"]),
        sizes=list(rows["size"]),
        num_beams=beam,
        batch_size=128,
        alpha_symbol_counts=(5,) if alpha else (),
        alpha_pool=5,
        alpha_samples=50,
        max_perm=24,
        progress=False,
    )


def cells_of(report: Any) -> dict[str, dict[str, list[int]]]:
    """Hits and counts of each (symbols, size) cell of ``report``."""
    return {
        k: {n: [round(share * report.heatmap_counts[k][n]), report.heatmap_counts[k][n]] for n, share in row.items()}
        for k, row in report.heatmap.items()
    }


def by_band(report: Any) -> dict[str, float]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in cells_of(report).values():
        for n, (hits, count) in row.items():
            low, high = size_band(int(n))
            totals[f"{low}-{high}"][0] += hits
            totals[f"{low}-{high}"][1] += count
    return {band: hits / count for band, (hits, count) in totals.items() if count}


def model_name(model_dir: Path) -> str:
    """A model's name in the table: a shipped model's own, else its folder."""
    return model_dir.name if model_dir.parent == PRETRAINED_DIR else str(model_dir)


def measure(
    model_dir: Path, task: str, args: argparse.Namespace, loaded: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    """``model_dir``'s row of the table: its test figures; ``loaded``, where given, is its model and tokenizer as
    already loaded (a release measures the weights it judged, rounded to float16, without loading them again)."""
    model, tokenizer = loaded if loaded is not None else load_for_evaluation(model_dir)
    name, size = DATA[task]
    test = evaluate_split(model, tokenizer, task, load_split(args.data_dir, name, size, "test", args.limit), 3, True)
    name10, size10 = DATA_10SYM[task]
    rows10 = load_split(args.data_dir, name10, size10, "test", args.limit_10sym)
    test10 = evaluate_split(model, tokenizer, task, rows10, 3, False)
    row: dict[str, Any] = {
        "model": model_name(model_dir),
        "task": task,
        "parameters": sum(p.numel() for p in model.parameters()),
        "test": {key: test.to_dict()[key] for key in ("count", "correct", "exact", "invalid", "alpha_covariance")},
        "test_by_size": by_band(test),
        "test_by_symbols": test.by_symbols,
        "test_10sym": {key: test10.to_dict()[key] for key in ("count", "correct", "exact", "invalid")},
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
    }
    if args.write_choice and model_dir.parent == PRETRAINED_DIR:
        row["validation_correct"] = write_choice_table(model, tokenizer, task, model_dir, args)
    return row


def choice_table(model: Any, tokenizer: Any, task: str, args: argparse.Namespace) -> dict[str, Any]:
    """A model's choice table: its first answers on the validation split by symbol count and size."""
    name, size = DATA[task]
    validation = load_split(args.data_dir, name, size, "validation", args.limit)
    report = evaluate_split(model, tokenizer, task, validation, 3, False)
    return {
        "task": task,
        "what": f"first of 3 beams on the first {report.count:,} validation formulas of {name} "
        f"(symbolinv data build {name} --num-samples {size}); hits and counts by symbol count, then size",
        "correct": report.correct,
        "cells": cells_of(report),
    }


def save_choice_table(folder: Path, table: dict[str, Any]) -> float:
    """Write ``table`` into ``folder`` (its ``evaluation.json``); its share of correct answers."""
    write_text_atomic(folder / CHOICE_TABLE, json.dumps(table, indent=1) + "\n")
    record_written(folder / CHOICE_TABLE)  # a later release of the folder replaces it with the rest
    return table["correct"]


def write_choice_table(model: Any, tokenizer: Any, task: str, folder: Path, args: argparse.Namespace) -> float:
    """Write ``folder``'s choice table (:func:`choice_table`); its share of correct answers."""
    return save_choice_table(folder, choice_table(model, tokenizer, task, args))


def refusal_to_replace(candidate: dict[str, Any], name: str) -> str | None:
    """Why ``candidate`` (a choice table) may not replace the shipped model ``name``; None where it may: no model of
    that name ships, or the candidate answers more of the same validation formulas. A tie keeps the shipped model."""
    shipped = shipped_choice_table(name)
    if shipped is None:
        return None
    (hits, count), (shipped_hits, shipped_count) = table_hits(parse_choice_table(candidate)), table_hits(shipped)
    if candidate["task"] != shipped["task"]:
        return f"its choice table is of the {candidate['task']} task, the shipped {name}'s of {shipped['task']}"
    if count != shipped_count:
        return (
            f"its choice table ({candidate['task']}, {count:,} validation formulas) is not comparable with that of "
            f"the shipped {name} ({shipped['task']}, {shipped_count:,}): measure both with the same --limit"
        )
    if hits <= shipped_hits:
        return (
            f"its choice table reads {hits:,} of {count:,} validation formulas ({hits / count:.1%}) against the "
            f"shipped {name}'s {shipped_hits:,} ({shipped_hits / count:.1%})"
        )
    return None


def round_to_float16(model: Any) -> Any:
    """``model`` with its weights rounded to float16 and kept in float32: what a release stores, as loaded back."""
    import torch

    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            if tensor.is_floating_point():
                tensor.copy_(tensor.to(torch.float16))
    return model


#: The small-formula test groups of the shipped models' table (``learning.small_tests``).
SMALL_GROUPS = ("1-3 symbols", "4-8 symbols")


def small_formula_row(row: dict[str, Any], folder: Path, task: str, args: argparse.Namespace) -> dict[str, Any]:
    """``row`` (the model's row of ``results.json``) with the model's correct on the small-formula test groups."""
    scores = evaluate_groups(folder, task, small_tests(args.data_dir, task, args.limit), beam=3)
    small = {group: scores[group]["correct"] for group in SMALL_GROUPS}
    counts = {group: scores[group]["count"] for group in SMALL_GROUPS}
    measured = {"count": counts, "date": datetime.date.today().isoformat(), "machine": machine()}
    return {**row, "small_formulas": {**small, **measured}}


def small_machine(row: dict[str, Any]) -> str:
    """Where and when a row's small-formula figures were measured, where that differs from the rest of the row."""
    small = row.get("small_formulas")
    if not small or (small.get("machine"), small["date"]) == (row["machine"], row["date"]):
        return ""
    return f" (small formulas: {small.get('machine', 'machine not recorded')}, {small['date']})"


def results_table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of ``rows``, in their order."""
    lines = [
        "| model | task | params | test correct | 1-10 / 11-20 / 21-35 nodes | exact | invalid | alpha-cov (5) | "
        "10 symbols | small formulas, 1-3 / 4-8 symbols | paper |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        bands = " / ".join(f"{100 * row['test_by_size'].get(f'{a}-{b}', float('nan')):.1f}" for a, b in SIZE_BANDS)
        test = row["test"]
        alpha = test["alpha_covariance"].get("5", test["alpha_covariance"].get(5))
        small = row.get("small_formulas")
        small = " / ".join(f"{100 * small[group]:.1f}" for group in SMALL_GROUPS) if small else ""
        lines.append(
            f"| `{row['model']}`{' (retired)' if row['model'] in RETIRED else ''} | {row['task']} | "
            f"{row['parameters']:,} | **{100 * test['correct']:.1f}** | {bands} | "
            f"{100 * test['exact']:.1f} | {100 * test['invalid']:.1f} | "
            f"{'-' if alpha is None else f'{100 * alpha:.0f}'} | {100 * row['test_10sym']['correct']:.1f} | "
            f"{small} | {PAPER[row['task']]} |"
        )
    return "\n".join(lines)


CARD = """\
---
library_name: transformers
tags: [symbol-invariant-transformer, {task}, satisfiability]
---

# `{name}`: {what} on the paper's distribution

A Symbol-Invariant Transformer ({parameters:,} parameters, float16, {megabytes:.1f} MB) that answers {what} with
{answer}, in the user's own symbol names and for any number of symbols. It ships with `hf_symbolinv`; `symbolinv solve`
and the web page ask it for the formulas its measured table (`evaluation.json`) says it answers best.

```python
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
from hf_symbolinv.pretrained import shipped_model

path = shipped_model("{name}")
model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
tokenizer = AutoTokenizer.from_pretrained(path)
```

## Figures

Beam 3, the first answer judged by the checker, on the first {count:,} test formulas of `{data}` (`symbolinv data
build {data} --num-samples {data_samples}`: formulas of 1-35 nodes over 5 symbols, sizes uniform as in the paper)
and 500 of `{data}-10sym` (10 symbols, never seen in training):

| correct | 1-10 / 11-20 / 21-35 nodes | exact | invalid | alpha-covariance (5 symbols) | 10 symbols | the paper (SIT) |
|---|---|---|---|---|---|---|
| **{correct:.1f}%** | {bands} | {exact:.1f}% | {invalid:.1f}% | {alpha} | {correct10:.1f}% | {paper}% |

The table of every shipped model is the project's `benchmarks/results/paper_distribution/RESULTS.md`.

## Training

The `{campaign}` run of the project's `benchmarks/gpu_campaign.py`: `symbolinv train --task {task} --init-from
hf_symbolinv/pretrained/{init} --data {data} --batch-size {batch} {extra} --steps {steps_total}` (the shipped small
model as the start; the paper's budget, 50,000 steps of 1,024, as the run's length{turned}), in calls that each
resume the state the repository keeps:

```bash
python benchmarks/gpu_campaign.py {campaign} --train-minutes 100   # again to continue, on a CPU or a GPU
```

This model: step {step:,} ({samples:,} samples seen, {share:.1%} of the paper's budget), {minutes} of training:
{machines}. AdamW, cosine schedule, cross-entropy over the cosine logits{cooled}; the weights then cast to float16.
"""
#: What a card adds for a model cooled down from the campaign's step (``gpu_campaign.py RUN --cool-down STEPS``).
COOLED = """, then cooled down: the campaign's learning rate at that step ({lr:g}) decayed to zero over {steps:,} more
steps of {batch} after a {warmup}-step warm-up of a new optimizer ({minutes:.0f} minutes on {device}; `python
benchmarks/gpu_campaign.py {campaign} --cool-down {steps}{augment}` from the campaign's kept step)"""
WHAT = {
    "prop": ("propositional satisfiability", "a complete satisfying assignment"),
    "ltl": ("LTL satisfiability", "a satisfying trace (a lasso)"),
}


def augment_turn(campaign_name: str) -> str:
    """What a card adds where the campaign turned to rewritten formulas part of the way (its command shows the options
    it trains with now): from which step, so that the command does not claim the whole run."""
    import gpu_campaign

    augment = gpu_campaign.CAMPAIGNS[campaign_name].options.get("augment")
    turned = gpu_campaign.augment_start(campaign_name) if augment else None
    return f"; `--augment {augment}` from step {turned:,} on, the formulas as written before it" if turned else ""


def judged_state(campaign_name: str, source: Path, cooldown: dict[str, Any] | None) -> dict[str, Any]:
    """Which state of the campaign ``source`` is: the campaign's step, or the branch of its ``cooldown`` (the step it
    started from, its length and its ``--augment``)."""
    import gpu_campaign

    if cooldown is not None:
        augment = {"augment": cooldown["augment"]} if "augment" in cooldown else {}
        return {"from_step": cooldown["from_step"], "of": cooldown["of"], **augment}
    if source.name != "checkpoint":
        return {"step": gpu_campaign.checkpoint_step(source)}
    return {"step": gpu_campaign.log_entries(gpu_campaign.state_folder(campaign_name))[-1]["step"]}  # the old layout


def verdict_entry(name: str, state: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The judged log's line for ``state`` (:func:`judged_state`), whose choice table ``table`` was set against the
    shipped ``name``'s (none: nothing of that name ships); ``shipped`` is filled in once the verdict is known. Read
    before a release replaces the shipped table."""
    shipped = shipped_choice_table(name)
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "name": name,
        **state,
        "choice": list(table_hits(parse_choice_table(table))),
        "shipped_choice": list(table_hits(shipped)) if shipped is not None else None,
    }


def record_verdict(campaign_name: str, entry: dict[str, Any]) -> None:
    """Append ``entry`` (:func:`verdict_entry`, with its verdict) to the campaign's judged log."""
    import gpu_campaign

    gpu_campaign.append_line(gpu_campaign.state_folder(campaign_name) / gpu_campaign.JUDGED_LOG, entry)


def ship(
    campaign_name: str,
    name: str,
    row: dict[str, Any],
    source: Path,
    cooldown: dict[str, Any] | None,
    loaded: tuple[Any, Any],
) -> Path:
    """Write ``source`` (the campaign's kept checkpoint, or the model of its finished ``cooldown``; ``loaded``: its
    model and tokenizer as the release judged and measured them), cast to float16, with its card, as the shipped model
    ``name``."""
    import gpu_campaign

    from hf_symbolinv.utils.files import save_model_folder

    campaign = gpu_campaign.CAMPAIGNS[campaign_name]
    state = gpu_campaign.state_folder(campaign_name)
    calls = gpu_campaign.log_entries(state)
    judged = judged_state(campaign_name, source, cooldown)
    step = judged["from_step"] if cooldown is not None else judged["step"]
    if cooldown is not None:
        calls = [call for call in calls if call["step"] <= step]  # the campaign's calls up to the branch
    by_device: dict[str, float] = defaultdict(float)
    for call in calls:
        by_device[call["device"].split(",")[0]] += call["call_minutes"]
    cooled = ""
    if cooldown is not None:
        branch = [
            entry
            for entry in gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)
            if (entry["from_step"], entry["of"], entry.get("augment"))
            == (step, cooldown["of"], cooldown.get("augment"))
        ]
        cooled = COOLED.format(
            lr=cooldown["lr"],
            steps=cooldown["of"],
            batch=cooldown["batch_size"],
            warmup=gpu_campaign.COOLDOWN_WARMUP,
            minutes=sum(entry["call_minutes"] for entry in branch),
            device=", ".join(sorted({entry["device"].split(",")[0] for entry in branch})),
            campaign=campaign_name,
            augment=f" --augment {cooldown['augment']}" if "augment" in cooldown else "",
        )
    machines = "; ".join(f"{minutes:.0f} minutes on {device}" for device, minutes in by_device.items())
    model, tokenizer = loaded
    task = campaign.task
    test = row["test"]
    alpha = test["alpha_covariance"].get("5", test["alpha_covariance"].get(5))
    card = CARD.format(
        task=task,
        name=name,
        what=WHAT[task][0],
        answer=WHAT[task][1],
        parameters=row["parameters"],
        megabytes=2 * row["parameters"] / 2**20,
        count=test["count"],
        data=DATA[task][0],
        data_samples=DATA[task][1],
        correct=100 * test["correct"],
        bands=" / ".join(f"{100 * row['test_by_size'].get(f'{a}-{b}', float('nan')):.1f}" for a, b in SIZE_BANDS),
        exact=100 * test["exact"],
        invalid=100 * test["invalid"],
        alpha="-" if alpha is None else f"{100 * alpha:.0f}%",
        correct10=100 * row["test_10sym"]["correct"],
        paper=PAPER[task],
        campaign=campaign_name,
        init=Path(campaign.init_from).name if campaign.init_from else campaign.preset,
        batch=campaign.batch_size,
        extra=" ".join(f"--{key.replace('_', '-')} {value}" for key, value in campaign.options.items()),
        steps_total=campaign.steps,
        turned=augment_turn(campaign_name),
        step=step,
        samples=step * campaign.batch_size,
        share=step * campaign.batch_size / (50_000 * 1_024),
        minutes=f"{sum(by_device.values()):.0f} minutes",
        machines=machines,
        cooled=cooled,
    )
    destination = PRETRAINED_DIR / name
    save_model_folder(model.half(), tokenizer, destination, card, with_code=False)  # the package loads it
    return destination


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", nargs="*", default=None, help="model folders (default: every shipped prop and LTL model)"
    )
    parser.add_argument("--data-dir", type=Path, default=REPOSITORY / "runs" / "campaign-data")
    parser.add_argument("--limit", type=int, default=1000, help="formulas per split (default 1000)")
    parser.add_argument("--limit-10sym", type=int, default=500, help="formulas of the 10-symbol test (default 500)")
    parser.add_argument(
        "--write-choice", action="store_true", help="write each shipped model's choice table into its folder"
    )
    parser.add_argument(
        "--small-formulas",
        action="store_true",
        help="add each model's figures on small formulas (at most 20 nodes, 1-3 and 4-8 symbols) to its row; the "
        "paper's distribution is not measured again",
    )
    parser.add_argument(
        "--ship",
        metavar="CAMPAIGN",
        help="release the campaign's kept checkpoint as --name, where its validation choice table beats the "
        "shipped model's",
    )
    parser.add_argument("--name", help="with --ship: the shipped model's name (a folder of hf_symbolinv/pretrained)")
    parser.add_argument(
        "--cooled",
        action="store_true",
        help="with --ship: release the campaign's newest finished cool-down (gpu_campaign.py RUN --cool-down STEPS) "
        "instead of its kept checkpoint",
    )
    args = parser.parse_args(argv)
    if (args.ship is None) != (args.name is None):
        parser.error("--ship and --name go together")
    if args.cooled and args.ship is None:
        parser.error("--cooled goes with --ship")
    if args.small_formulas and (args.ship is not None or args.write_choice):
        parser.error("--small-formulas measures models already in the table: not with --ship or --write-choice")
    if args.ship is not None:
        import gpu_campaign

        cooldown = gpu_campaign.finished_cooldown(args.ship) if args.cooled else None
        if args.cooled and cooldown is None:
            raise SystemExit(
                f"error: campaign {args.ship} has no finished cool-down whose model is on this machine (python "
                f"benchmarks/gpu_campaign.py {args.ship} --cool-down STEPS)"
            )
        if cooldown is not None:
            source = gpu_campaign.REPOSITORY / cooldown["model"]
            problem = gpu_campaign.verify_checkpoint(source)
            if problem is not None:
                raise SystemExit(f"error: the cool-down's model {source} is {problem}; it is not shipped")
        else:
            source = gpu_campaign.kept_checkpoint(gpu_campaign.state_folder(args.ship))
        task = gpu_campaign.CAMPAIGNS[args.ship].task
        # Chosen on validation alone: the candidate's choice table, measured on the weights as they would ship, must
        # beat the shipped model's before the test split is measured at all.
        model, tokenizer = load_for_evaluation(source)
        model = round_to_float16(model)
        table = choice_table(model, tokenizer, task, args)
        verdict = verdict_entry(args.name, judged_state(args.ship, source, cooldown), table)
        refusal = refusal_to_replace(table, args.name)
        if refusal is not None:
            record_verdict(args.ship, {**verdict, "shipped": False})
            print(f"{args.ship}: not shipped as {args.name}: {refusal}; the test split was not measured")
            return 1
        # The test split is then measured on those same rounded weights: the figures are the release's own.
        row = measure(source, task, argparse.Namespace(**{**vars(args), "write_choice": False}), (model, tokenizer))
        folder = ship(args.ship, args.name, row, source, cooldown, (model, tokenizer))
        tests = {"test": row["test"]["correct"], "test_10sym": row["test_10sym"]["correct"]}
        record_verdict(args.ship, {**verdict, "shipped": True, **tests})
        row = {**row, "model": args.name, "validation_correct": save_choice_table(folder, table)}
        row["shipped_from"] = f"campaign {args.ship}, " + (
            f"cooled down over {cooldown['of']:,} steps from step {cooldown['from_step']:,}"
            if cooldown is not None
            else source.name
        )
        save_rows([row])
        return 0
    shipped = [PRETRAINED_DIR / name for name, task in SHIPPED.items() if task in DATA]  # not clutrr's stories
    folders = [Path(m) for m in args.models] if args.models else shipped
    for folder in folders:
        task = SHIPPED.get(folder.name) or json.loads((folder / "config.json").read_text()).get("vocabulary")
        if task not in DATA:
            raise SystemExit(f"error: {folder}: not a propositional or LTL model")
        if args.small_formulas:
            row = measured_rows().get(model_name(folder))
            if row is None:
                raise SystemExit(f"error: {folder} has no row yet: measure it on the paper's distribution first")
            save_rows([small_formula_row(row, folder, task, args)])
        else:
            save_rows([measure(folder, task, args)])
    return 0


def measured_rows() -> dict[str, dict[str, Any]]:
    """The rows of ``results.json``, by model."""
    results = RESULTS / "results.json"
    return {row["model"]: row for row in json.loads(results.read_text())["models"]} if results.is_file() else {}


def save_rows(rows: list[dict[str, Any]]) -> None:
    """Add ``rows`` to ``results.json`` (replacing earlier rows of the same models) and write ``RESULTS.md``."""
    results = RESULTS / "results.json"
    by_model = measured_rows()
    for row in rows:
        by_model[row["model"]] = row
        print(json.dumps(row, default=str), flush=True)
    # Propositional rows first, then LTL, each by name, in the file and the table alike: the order the rows were
    # measured in says nothing, and a stable order keeps a new row's diff to its own figures.
    kept = sorted(by_model.values(), key=lambda row: (row["task"] != "prop", row["model"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_text_atomic(results, json.dumps({"models": kept}, indent=1, default=str) + "\n")
    table = (
        f"{TABLE_START}\n"
        "Written by `python benchmarks/paper_distribution.py` (see its docstring). Beam 3, the first answer judged "
        "by the checker; the first 1,000 test formulas of `prop-35` / `ltl-35` (`symbolinv data build NAME "
        "--num-samples 200000`), 500 of the `*-10sym` sets (10 symbols, never seen in training).\n\n"
        f"{results_table(kept)}\n\nMachines: "
        + "; ".join(sorted({f"`{r['model']}`: {r['machine']}, {r['date']}{small_machine(r)}" for r in kept}))
        + f"\n{TABLE_END}"
    )
    path = RESULTS / "RESULTS.md"
    previous = (
        path.read_text()
        if path.is_file()
        else f"# The shipped models on the paper's distributions\n\n{TABLE_START}{TABLE_END}\n"
    )
    if TABLE_START in previous and TABLE_END in previous:  # the study's own text around the table is kept
        head, rest = previous.split(TABLE_START, 1)
        text = head + table + rest.split(TABLE_END, 1)[1]
    else:
        text = previous.rstrip("\n") + "\n\n" + table + "\n"
    write_text_atomic(RESULTS / "RESULTS.md", text)


if __name__ == "__main__":
    sys.exit(main())
