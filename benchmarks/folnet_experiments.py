"""CPU-scale comparisons of FOLNet with the SIT and a transformer, at (nearly) equal parameter counts and equal
steps, run with the project's own commands (``symbolinv data build``, ``symbolinv train``).

``kinship``: FOLNet with every operator, FOLNet with join and assoc only (the paper's "dual-branch
transformer"), the renaming-invariant FOLNet and a transformer encoder-decoder with one embedding per token
(``kinship-vanilla``, the same tokenizer), trained on chains of k = 2, 3 facts between people named a..m and
tested on k = 2..10 with people named n..z: accuracy per k.

``kinship-shuffled``: the same four models on ``kinship-shuffled`` (each story's facts in a random order among
two distractor facts that lead away from the chain, so that the answer depends on who is who), with every seed
of ``--seeds``: accuracy per k, mean and spread over the seeds.

``prop``: the renaming-invariant FOLNet against the SIT (``prop-best``) and the fixed-embedding transformer
(``prop-vanilla``), trained on 5-symbol ``prop-35`` formulas and tested on 5 and 10 symbols: correct, exact,
alpha-covariance, and the time per training step.

    python benchmarks/folnet_experiments.py kinship --out benchmarks/results/folnet_experiments_kinship
    python benchmarks/folnet_experiments.py kinship-shuffled \
        --out benchmarks/results/folnet_experiments_kinship_shuffled
    python benchmarks/folnet_experiments.py prop --out benchmarks/results/folnet_experiments_prop

Each run's report is saved as ``runs/NAME/report.json``; a rerun skips finished runs and resumes an interrupted
training from its last checkpoint; ``--only NAME ...`` runs some of them (parallel processes), and a last
invocation without it collects ``RESULTS.md`` and ``results.json`` (``--collect``: of the finished runs only, training
nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from dte_experiments import mean_spread
from prop_experiments import build_data, evaluate_saved, run_once, train

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.utils.files import write_text_atomic

# Sizes chosen for nearly equal parameter counts (printed in the results): FOLNet's operators other than join
# and assoc carry weights of their own, so the join/assoc model is wider.
FOLNET_KINSHIP = [
    "num_layers=3",
    "num_heads=4",
    "head_dim=16",
    "binary_dim=8",
    "ffn_dim=256",
    "binary_ffn_dim=32",
    "max_relative_distance=16",
]
KINSHIP_RUNS: dict[str, tuple[str, list[str], str]] = {
    "folnet": ("folnet-small", FOLNET_KINSHIP, "FOLNet, all seven operators"),
    "folnet-join-assoc": (
        "folnet-small",
        [*FOLNET_KINSHIP[:2], "head_dim=30", *FOLNET_KINSHIP[3:], "operators=join,assoc"],
        "FOLNet, join and assoc only (a transformer as a degenerate FOLNet), wider",
    ),
    "folnet-invariant": (
        "folnet-small",
        [*FOLNET_KINSHIP, "symbol_invariant=true"],
        "FOLNet, renaming-invariant variant (shared symbol atom, same-symbol relation, pointer output)",
    ),
    "transformer": (
        "kinship-vanilla",
        ["d_model=64", "encoder_ffn_dim=384", "decoder_ffn_dim=384"],
        "transformer encoder-decoder, one embedding per token (same tokenizer)",
    ),
}

FOLNET_PROP = [
    "num_layers=3",
    "num_heads=4",
    "head_dim=16",
    "binary_dim=16",
    "ffn_dim=240",
    "binary_ffn_dim=64",
    "max_relative_distance=16",
    "symbol_invariant=true",
]
SIT_PROP = [
    "d_model=64",
    "encoder_layers=3",
    "decoder_layers=3",
    "encoder_attention_heads=4",
    "decoder_attention_heads=4",
    "encoder_ffn_dim=256",
    "decoder_ffn_dim=256",
]
PROP_RUNS: dict[str, tuple[str, list[str], str]] = {
    "folnet-invariant": ("folnet-small", FOLNET_PROP, "FOLNet, renaming-invariant, parse-tree relations"),
    "sit": ("prop-best", SIT_PROP, "SIT prop-best (EP-DP-EA-DA-CP), smaller"),
    "vanilla": (
        "prop-vanilla",
        [*SIT_PROP[:5], "encoder_ffn_dim=384", "decoder_ffn_dim=384"],
        "fixed-embedding transformer prop-vanilla, smaller",
    ),
}


def kinship_data(data_dir: Path, samples: int, config: str = "kinship") -> tuple[Path, object]:
    folder = data_dir / config
    dataset = dataset_builders.build(config, folder, BuildOptions(num_samples=samples, seed=0, progress=False))
    return folder, dataset["test"]


def evaluate_kinship(model_dir: Path, test: object, alpha_counts: tuple[int, int] = (3, 4)) -> dict:
    """Accuracy per chain length k (greedy: the answer is one word), alpha-covariance on 3-4 people (5-6 in a
    shuffled story: its two distractors name two more)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    try:
        report = evaluate_model(
            model,
            tokenizer,
            "kinship",
            list(test["input"]),
            list(test["target"]),
            num_symbols=list(test["num_symbols"]),
            sizes=list(test["size"]),
            num_beams=1,
            max_new_tokens=4,
            alpha_symbol_counts=alpha_counts,
            alpha_pool=max(alpha_counts) + 1,
            alpha_samples=30,
            max_perm=24,
            progress=False,
        )
    except ValueError as error:  # a model with too few symbol rows for the test names
        return {"parameters": sum(p.numel() for p in model.parameters()), "error": str(error).split(":")[0]}
    by_k: dict[int, list[float]] = {}  # k (the size) -> [hits, count], over the people counts
    for people, cells in report.heatmap.items():
        for k, accuracy in cells.items():
            count = report.heatmap_counts[people][k]
            hits = by_k.setdefault(int(k), [0.0, 0])
            hits[0] += accuracy * count
            hits[1] += count
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "correct": report.correct,
        "invalid": report.invalid,
        "by_k": {k: hits / count for k, (hits, count) in sorted(by_k.items())},
        "alpha_covariance": report.alpha_covariance,
    }


def run_presets(
    args: argparse.Namespace,
    table: dict,
    data: Path,
    task: str,
    evaluate: Callable[[Path], dict],
    flags: tuple[str, ...] = (),
) -> list[dict]:
    """Train every run of ``table`` (name -> preset, ``--set`` settings, note) on ``data`` with every seed of
    ``--seeds`` unless ``--only`` leaves it out, and evaluate each with ``evaluate(model_dir)``. A run of one
    seed is named as its model; with several, ``MODEL-sSEED``. ``flags``: more ``symbolinv train`` options."""
    runs = []
    for seed in args.seeds:
        for model, (preset, settings, note) in table.items():
            if args.only and model not in args.only:
                continue
            name = model if len(args.seeds) == 1 else f"{model}-s{seed}"
            if args.collect and not (args.out / "runs" / name / "report.json").is_file():
                continue  # --collect: the finished runs only
            report = run_once(
                args.out,
                name,
                lambda preset=preset, settings=settings, name=name, seed=seed: train(
                    args.out,
                    name,
                    data,
                    args.steps,
                    args.batch_size,
                    "--preset",
                    preset,
                    "--seed",
                    str(seed),
                    *flags,
                    settings=settings,
                    task=task,
                ),
                {},
                1,
                f"{note}; `--preset {preset} --set {' '.join(settings)}`",
                evaluate=evaluate,
            )
            runs.append({**report, "model": model, "seed": seed})
    return runs


def experiment_kinship(args: argparse.Namespace) -> tuple[list[dict], str]:
    data, test = kinship_data(args.data_dir, args.samples)
    runs = run_presets(args, KINSHIP_RUNS, data, "kinship", lambda model_dir: evaluate_kinship(model_dir, test))
    return runs, "Kinship: FOLNet variants against a transformer, CPU scale"


#: kinship-shuffled: validation stories per evaluation during training, and evaluations per run.
CURVE_SAMPLES, CURVE_POINTS = 300, 6


def experiment_kinship_shuffled(args: argparse.Namespace) -> tuple[list[dict], str]:
    from learning import curve, log_history

    data, test = kinship_data(args.data_dir, args.samples, "kinship-shuffled")

    def evaluate(model_dir: Path) -> dict:
        # The validation curve (k = 2, 3, training names) shows whether a model was still learning.
        return {**evaluate_kinship(model_dir, test, (5, 6)), "curve": curve(log_history(model_dir.parent))}

    eval_flags = ("--eval-samples", str(CURVE_SAMPLES), "--eval-steps", str(max(1, args.steps // CURVE_POINTS)))
    runs = run_presets(args, KINSHIP_RUNS, data, "kinship", evaluate, eval_flags)
    return runs, "Shuffled kinship stories with distractors: FOLNet variants against a transformer, CPU scale"


def experiment_prop(args: argparse.Namespace) -> tuple[list[dict], str]:
    _, tests = build_data(args.data_dir, args.samples, args.test_samples)

    def evaluate(model_dir: Path) -> dict:
        return evaluate_saved(model_dir, tests, args.beam)

    runs = run_presets(args, PROP_RUNS, args.data_dir / "prop-35", "prop", evaluate)
    return runs, "Propositional task: the renaming-invariant FOLNet against the SIT and a transformer, CPU scale"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def markdown(title: str, runs: list[dict], args: argparse.Namespace, machine: str) -> str:
    lines = [
        f"# {title}",
        "",
        f"Command: `{args.command}`  ",
        f"Machine: {machine}  ",
        f"Training: `symbolinv train`, {args.steps} steps of batch {args.batch_size} (AdamW lr 1e-3, weight decay "
        f"0.1, cosine schedule, 5% warm-up), seed {', '.join(map(str, args.seeds))}; time per step includes the few "
        "in-training evaluations.",
        "",
    ]
    if args.experiment == "kinship-shuffled":
        ks = sorted({int(k) for run in runs for k in run.get("by_k", {})})
        lines += [
            f"Data: `kinship-shuffled`, {args.samples:,} stories (train k = 2, 3 with names a..m; test k = 2..10 "
            "with names n..z; every story's facts in a random order among 2 distractor facts that lead away from "
            "the chain), greedy answers judged against the composed relation. Accuracy in %, mean ± standard "
            "deviation over the seeds.",
            "",
            "| model | seeds | parameters | s/step | test correct | "
            + " | ".join(f"k={k}" for k in ks)
            + " | alpha-cov 5/6 |",
            "|---|---|---|---|---|" + "---|" * len(ks) + "---|",
        ]
        for model in dict.fromkeys(run["model"] for run in runs):
            group = [run for run in runs if run["model"] == model and "error" not in run]
            if not group:
                continue
            alpha = [a for run in group for a in run.get("alpha_covariance", {}).values()]
            lines.append(
                f"| {model} | {len(group)} | {group[0]['parameters']:,} | "
                f"{60 * statistics.fmean(run['train_minutes'] for run in group) / args.steps:.3f} | "
                f"{mean_spread([run['correct'] for run in group])} | "
                + " | ".join(
                    mean_spread([v for run in group for key, v in run["by_k"].items() if int(key) == k]) for k in ks
                )
                + f" | {pct(min(alpha)) if alpha else '-'} (lowest) |"
            )
        steps = sorted({step for run in runs for step in run.get("curve", {}).get("step", [])})
        lines += [
            "",
            f"Validation correct during training (greedy, {CURVE_SAMPLES} validation stories: k = 2, 3, training "
            "names), mean over the seeds:",
            "",
            "| model | " + " | ".join(f"step {step:,}" for step in steps) + " |",
            "|---|" + "---|" * len(steps),
        ]
        for model in dict.fromkeys(run["model"] for run in runs):
            points: dict[int, list[float]] = {}
            for run in runs:
                if run["model"] == model and "curve" in run:
                    for step, value in zip(run["curve"]["step"], run["curve"]["eval_correct"]):
                        points.setdefault(step, []).append(value)
            lines.append(
                f"| {model} | "
                + " | ".join(pct(statistics.fmean(points[s])) if s in points else "-" for s in steps)
                + " |"
            )
    elif args.experiment == "kinship":
        ks = sorted({int(k) for run in runs for k in run.get("by_k", {})})
        lines += [
            f"Data: `kinship`, {args.samples:,} stories (train k = 2, 3 with names a..m; test k = 2..10 with "
            "names n..z), greedy answers judged against the composed relation.",
            "",
            "| model | parameters | s/step | test correct | " + " | ".join(f"k={k}" for k in ks) + " | alpha-cov 3/4 |",
            "|---|---|---|---|" + "---|" * len(ks) + "---|",
        ]
        for run in runs:
            if "error" in run:
                lines.append(f"| {run['name']} | {run['parameters']:,} | | cannot run: {run['error']} |")
                continue
            by_k = {int(k): v for k, v in run["by_k"].items()}
            alpha = run.get("alpha_covariance", {})
            lines.append(
                f"| {run['name']} | {run['parameters']:,} | {60 * run['train_minutes'] / args.steps:.3f} | "
                f"{pct(run['correct'])} | "
                + " | ".join(pct(by_k.get(k)) for k in ks)
                + f" | {' / '.join(pct(alpha[k]) for k in sorted(alpha)) or '-'} |"
            )
    else:
        lines += [
            f"Data: 5-symbol `prop-35` ({args.samples:,} formulas before splitting); test: first "
            f"{args.test_samples} samples of the 5- and the 10-symbol test sets, beam {args.beam}, first answer "
            "judged by the checker.",
            "",
            "| model | parameters | s/step | 5 sym correct | 5 sym exact | 10 sym correct | 10 sym exact "
            "| alpha-cov 3/4/5 |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for run in runs:
            five, ten = run["5 symbols"], run["10 symbols"]
            alpha = five.get("alpha_covariance", {})
            cells = [
                "cannot run" if "error" in part else pct(part[key])
                for part, key in ((five, "correct"), (five, "exact"), (ten, "correct"), (ten, "exact"))
            ]
            lines.append(
                f"| {run['name']} | {run['parameters']:,} | {60 * run['train_minutes'] / args.steps:.3f} | "
                + " | ".join(cells)
                + f" | {' / '.join(pct(alpha[k]) for k in sorted(alpha)) or '-'} |"
            )
    lines += ["", "| model | how |", "|---|---|"] + [f"| {run['name']} | {run['how']} |" for run in runs]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=["kinship", "kinship-shuffled", "prop"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: OUT/data (built there when missing)")
    parser.add_argument("--samples", type=int, default=20_000, help="stories / formulas before splitting")
    parser.add_argument("--test-samples", type=int, default=200, help="prop: samples per test set")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--beam", type=int, default=3, help="prop: beams")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=[], metavar="RUN", help="run only these models")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="train every model with each seed")
    parser.add_argument("--collect", action="store_true", help="write the results of the finished runs only")
    args = parser.parse_args()
    args.data_dir = args.data_dir or args.out / "data"
    args.command = "python " + " ".join(sys.argv)
    torch.set_num_threads(args.threads)
    experiments = {"kinship": experiment_kinship, "kinship-shuffled": experiment_kinship_shuffled}
    runs, title = experiments.get(args.experiment, experiment_prop)(args)
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    if args.only:
        return 0
    results = {"experiment": args.experiment, "command": args.command, "machine": machine, "runs": runs}
    write_text_atomic(args.out / "results.json", json.dumps(results, indent=1, default=str))
    write_text_atomic(args.out / "RESULTS.md", markdown(title, runs, args, machine))
    print(markdown(title, runs, args, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
