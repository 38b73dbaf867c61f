"""The shipped propositional and LTL models on the paper's distributions (``prop-35``, ``ltl-35``: formulas of 1-35
nodes over 5 symbols, and the ``*-10sym`` sets with 10 symbols, never seen in training).

For each model: correct / exact / invalid of the first of 3 beams on the test split, by formula size (1-10, 11-20,
21-35 nodes) and symbol count, alpha-covariance on 5 symbols, and the ``*-10sym`` test split. With ``--write-choice``
each shipped model's choice table (its first answers on the *validation* split, by size and symbol count) is written
into its folder as ``evaluation.json``: ``symbolinv solve`` and the web page ask the model whose table is best for a
formula's size and symbol count (``hf_symbolinv.pretrained.model_for``). The test splits choose nothing.

    python benchmarks/paper_distribution.py --data-dir runs/campaign-data --write-choice
    python benchmarks/paper_distribution.py --models runs/campaign/prop-35/checkpoints/checkpoint-1000 ...

Writes ``benchmarks/results/paper_distribution/RESULTS.md`` and ``results.json`` (a model's row is replaced when it
is measured again; rows of other models are kept).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from learning import load_for_evaluation, machine

import dataset_builders
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.pretrained import CHOICE_TABLE, PRETRAINED_DIR, SHIPPED, SIZE_BANDS
from hf_symbolinv.utils.files import write_text_atomic

REPOSITORY = Path(__file__).resolve().parent.parent
RESULTS = REPOSITORY / "benchmarks" / "results" / "paper_distribution"
#: The data each task is judged on: ``symbolinv data build NAME --num-samples N`` (deterministic).
DATA = {"prop": ("prop-35", 200_000), "ltl": ("ltl-35", 200_000)}
DATA_10SYM = {"prop": ("prop-35-10sym", 10_000), "ltl": ("ltl-35-10sym", 10_000)}
PAPER = {"prop": 98.03, "ltl": 98.24}  # the SIT paper's correct on its test sets


def load_split(data_dir: Path, name: str, size: int, split: str, limit: int) -> Any:
    from datasets import load_dataset

    folder = data_dir / name
    dataset_builders.build(name, folder, num_samples=size, progress=False)  # nothing to do once built
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
            low, high = next((band for band in SIZE_BANDS if int(n) <= band[1]), SIZE_BANDS[-1])
            totals[f"{low}-{high}"][0] += hits
            totals[f"{low}-{high}"][1] += count
    return {band: hits / count for band, (hits, count) in totals.items() if count}


def measure(model_dir: Path, task: str, args: argparse.Namespace) -> dict[str, Any]:
    model, tokenizer = load_for_evaluation(model_dir)
    name, size = DATA[task]
    test = evaluate_split(model, tokenizer, task, load_split(args.data_dir, name, size, "test", args.limit), 3, True)
    name10, size10 = DATA_10SYM[task]
    rows10 = load_split(args.data_dir, name10, size10, "test", args.limit_10sym)
    test10 = evaluate_split(model, tokenizer, task, rows10, 3, False)
    row: dict[str, Any] = {
        "model": model_dir.name if model_dir.parent == PRETRAINED_DIR else str(model_dir),
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
        validation = load_split(args.data_dir, name, size, "validation", args.limit)
        report = evaluate_split(model, tokenizer, task, validation, 3, False)
        table = {
            "task": task,
            "what": f"first of 3 beams on the first {report.count:,} validation formulas of {name} "
            f"(symbolinv data build {name} --num-samples {size}); hits and counts by symbol count, then size",
            "correct": report.correct,
            "cells": cells_of(report),
        }
        write_text_atomic(model_dir / CHOICE_TABLE, json.dumps(table, indent=1) + "\n")
        row["validation_correct"] = report.correct
    return row


def results_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | task | params | test correct | 1-10 / 11-20 / 21-35 nodes | exact | invalid | alpha-cov (5) | "
        "10 symbols | paper |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        bands = " / ".join(f"{100 * row['test_by_size'].get(f'{a}-{b}', float('nan')):.1f}" for a, b in SIZE_BANDS)
        test = row["test"]
        alpha = test["alpha_covariance"].get("5", test["alpha_covariance"].get(5))
        lines.append(
            f"| `{row['model']}` | {row['task']} | {row['parameters']:,} | **{100 * test['correct']:.1f}** | {bands} | "
            f"{100 * test['exact']:.1f} | {100 * test['invalid']:.1f} | "
            f"{'-' if alpha is None else f'{100 * alpha:.0f}'} | {100 * row['test_10sym']['correct']:.1f} | "
            f"{PAPER[row['task']]} |"
        )
    return "\n".join(lines)


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
    args = parser.parse_args(argv)
    folders = [Path(m) for m in args.models] if args.models else [PRETRAINED_DIR / name for name in SHIPPED]
    results = RESULTS / "results.json"
    kept = json.loads(results.read_text())["models"] if results.is_file() else []
    for folder in folders:
        task = SHIPPED.get(folder.name) or json.loads((folder / "config.json").read_text()).get("vocabulary")
        if task not in DATA:
            raise SystemExit(f"error: {folder}: not a propositional or LTL model")
        row = measure(folder, task, args)
        kept = [r for r in kept if r["model"] != row["model"]] + [row]
        print(json.dumps(row, default=str), flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        write_text_atomic(results, json.dumps({"models": kept}, indent=1, default=str) + "\n")
    text = (
        "# The shipped models on the paper's distributions\n\n"
        "Written by `python benchmarks/paper_distribution.py` (see its docstring). Beam 3, the first answer judged "
        "by the checker; the first 1,000 test formulas of `prop-35` / `ltl-35` (`symbolinv data build NAME "
        "--num-samples 200000`), 500 of the `*-10sym` sets (10 symbols, never seen in training).\n\n"
        f"{results_table(kept)}\n\nMachines: "
        + "; ".join(sorted({f"`{r['model']}`: {r['machine']}, {r['date']}" for r in kept}))
        + "\n"
    )
    write_text_atomic(RESULTS / "RESULTS.md", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
