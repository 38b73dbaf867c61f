"""CPU-scale reproduction of the Differentiable Tree Machine / (Terminating) Differentiable Tree Experts results:
the DTM, the DTE, the sparse DTE and the Terminating DTE (presets ``dtm-small``, ``dte-small``,
``dte-sparse-small``, ``tdte-small``) on ``car-cdr-seq`` and on ``active-logical``, and the sparse DTE on
``tree-reverse`` with 8 and with 16 steps; every run with several seeds, tested on the in-distribution test, the
lexical OOD split (content words never seen in training) and the structural OOD split.

    python benchmarks/dte_experiments.py --out benchmarks/results/dte_experiments --workers 2

``--tasks`` reruns some tasks only; the others keep the reports of the ``results.json`` already there.

The datasets are built first (``symbolinv data build`` configurations at ``max_depth`` 6). Each run's report is
saved as ``runs/NAME/report.json``; a rerun skips finished runs and resumes an interrupted training from its last
checkpoint; ``--workers N`` runs N processes (each takes the next run no other holds: a run's folder is
locked, so two processes never write one run). The last step collects ``RESULTS.md`` and ``results.json`` from
the reports there are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

MAX_DEPTH = 6
#: Per task: the dataset configuration's samples (80% train) and --max-size (the structural OOD goes up to it),
#: training steps, the oracle's steps, the Terminating DTE's most steps and the most distinct words of one tree
#: (a deep random tree of tree-reverse holds up to 18). car-cdr-seq: 10,000 training rows, as in the DTM data.
TASKS: dict[str, dict] = {
    "car-cdr-seq": dict(samples=12_500, max_size=3, train_steps=2000, num_steps=8, most_steps=12, max_symbols=16),
    "active-logical": dict(samples=12_500, max_size=3, train_steps=3000, num_steps=10, most_steps=14, max_symbols=16),
    "tree-reverse": dict(samples=3000, max_size=6, train_steps=400, num_steps=8, most_steps=None, max_symbols=24),
}
MODELS: dict[str, tuple[str, str]] = {
    "DTM": ("dtm-small", "a transformer encoder layer per step"),
    "DTE": ("dte-small", "8 experts shared by every step, dense"),
    "sparse DTE": ("dte-sparse-small", "8 experts, the best 2 per sample and step"),
    "TDTE": ("tdte-small", "the DTE with the sluggish termination (learned step count)"),
}


def planned_runs(
    seeds: list[int], tasks: tuple[str, ...] = tuple(TASKS), models: tuple[str, ...] = tuple(MODELS)
) -> list[dict]:
    """Every run of ``tasks`` and ``models``, seed by seed (so that a partial result already covers every
    model)."""
    runs = []
    for seed in seeds:
        for task in [name for name in ("car-cdr-seq", "active-logical") if name in tasks]:
            spec = TASKS[task]
            for model, (preset, _) in [(name, MODELS[name]) for name in models]:
                steps = spec["most_steps"] if model == "TDTE" else spec["num_steps"]
                runs.append(dict(task=task, model=model, preset=preset, num_steps=steps, seed=seed))
        for steps in (8, 16) if "tree-reverse" in tasks and "sparse DTE" in models else ():
            runs.append(
                dict(
                    task="tree-reverse",
                    model=f"sparse DTE, {steps} steps",
                    preset="dte-sparse-small",
                    num_steps=steps,
                    seed=seed,
                )
            )
    for run in runs:
        slug = run["model"].lower().replace(", ", "-").replace(" ", "-")
        run["name"] = f"{run['task']}-{slug}-s{run['seed']}"
    return runs


def build_data(data_dir: Path, tasks: tuple[str, ...]) -> None:
    from dataset_builders.params import BuildOptions
    from dataset_builders.trees import build_trees

    for task in tasks:
        spec = TASKS[task]
        build_trees(
            task,
            data_dir / task,
            BuildOptions(num_samples=spec["samples"], max_size=spec["max_size"], max_depth=MAX_DEPTH, progress=False),
        )


def lexical_check(data_dir: Path, task: str) -> dict:
    """How many content words of the lexical split training ever saw (0 by construction of the split)."""
    import datasets

    from hf_symbolinv.tasks.trees import tree_symbol_names

    data = datasets.load_dataset(str(data_dir / task))
    seen = {
        name for split in ("train", "validation") for text in data[split]["input"] for name in tree_symbol_names(text)
    }
    lexical = {name for text in data["test_ood_lexical"]["input"] for name in tree_symbol_names(text)}
    return {"lexical_words": len(lexical), "seen_in_training": len(lexical & seen), "training_words": len(seen)}


def run_one(run: dict, out: Path, data_dir: Path) -> dict | None:
    """Train and evaluate one run unless its report exists; None when another process holds it."""
    import datasets
    import torch
    from filelock import FileLock, Timeout
    from transformers import set_seed

    from dataset_builders.trees import structure
    from hf_symbolinv.evaluation.tree import evaluate_tree_model
    from hf_symbolinv.models.dte import DTEForTreeTransduction
    from hf_symbolinv.models.dte.family import tree_tokenizer
    from hf_symbolinv.models.registry import new_model_config
    from hf_symbolinv.training.tree import train_tree_model
    from hf_symbolinv.utils.files import write_text_atomic

    folder = out / "runs" / run["name"]
    report_file = folder / "report.json"
    if report_file.exists():
        return json.loads(report_file.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    try:
        lock = FileLock(str(folder / ".lock"), timeout=0).acquire()
    except Timeout:
        return None
    with lock:
        if report_file.exists():  # finished by another worker between the first look and the lock
            return json.loads(report_file.read_text())
        torch.set_num_threads(1)
        spec = TASKS[run["task"]]
        data = datasets.load_dataset(str(data_dir / run["task"]))
        config = new_model_config(
            run["preset"], "tree", max_symbols=spec["max_symbols"], max_depth=MAX_DEPTH, num_steps=run["num_steps"]
        )
        tokenizer = tree_tokenizer("tree", config.max_depth, config.max_symbols)
        set_seed(run["seed"])
        model = DTEForTreeTransduction(config)
        start = time.perf_counter()
        train_tree_model(
            model,
            tokenizer,
            data["train"],
            folder / "checkpoints",
            steps=spec["train_steps"],
            batch_size=16,
            seed=run["seed"],
            progress=False,
        )
        seconds = time.perf_counter() - start
        report = {
            **run,
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_steps": spec["train_steps"],
            "seconds_per_step": seconds / spec["train_steps"],
        }
        for split in ("test", "test_ood_lexical", "test_ood_structural"):
            rows = data[split]
            scores = evaluate_tree_model(
                model,
                tokenizer,
                "tree",
                rows["input"],
                rows["target"],
                sizes=[structure(run["task"], text) for text in rows["input"]],
            )
            scores.pop("answers")
            report[split] = scores
        write_text_atomic(report_file, json.dumps(report, indent=1))
        print(f"[{run['name']}] " + ", ".join(f"{s}: {report[s]['correct']:.3f}" for s in SPLITS), flush=True)
        return report


SPLITS = ("test", "test_ood_lexical", "test_ood_structural")


def mean_spread(values: list[float]) -> str:
    if not values:
        return "-"
    mean = 100 * statistics.fmean(values)
    spread = 100 * statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.1f} ± {spread:.1f}"


#: How the DTE paper states its tree-reversal result (Tables 3 and 4), beside ours, and how the two tasks differ.
CAR_CDR_AGAINST_THE_PAPERS = [
    "car-cdr-seq, as the papers build it. Our first `car-cdr-seq` wrote the operations as a cons-cell list "
    "(`(CARCDR (OPS CAR (OPS CDR _)) SENTENCE)`) and made its structural split longer lists (4-5 operations after "
    "1-3 in training): every model scored 0% there. The papers' data (the DTM's `car_cdr_seq`, which the DTE paper "
    'reuses) names 1-4 operations with one token at the root (its card: "1-4 combinations of CAR and CDR, as '
    'identified by the root filler token") and lengthens the adjective phrases for its structural split, so the '
    'operations stay in distribution (the DTE paper: "those operations encoded in the root are ID in the OOD split '
    "samples\"). Ours now does the same: the root label is Lisp's name of 1-4 operations (`CADR`: cdr, then car), "
    "drawn alike in every split, and the structural split has 3 adjectives in a noun phrase where training has 0-2 "
    "(a test checks both). The tree encoding was already the original DTM's: the controller reads each tree through "
    "one linear map of the flattened TPR (the newer code the DTE paper used defaults to a set transformer over "
    "(filler, role) pairs, not built here). Data and length follow the DTM's task in size: 10,000 training rows "
    "(theirs: 10,000), 2,000 steps of batch 16 (theirs: 20,000 at lr 1e-4). At 800 steps on 2,400 rows the DTM "
    "(seed 0) scored 90.3 / 87.7 / 62.7, its structural answers failing more the more operations they needed "
    "(1: 100%, 2: 66%, 3: 51%, 4: 35%): the agent had not yet learned to read trees it never saw, which the longer "
    "run above did.",
    "",
]
TREE_REVERSAL_AGAINST_THE_PAPER = [
    "Tree reversal, as the DTE paper states it: learned *partially* in distribution and *not at all* structurally.",
    "Its Table 3 (exact match, mean ± std over seeds): DTM 0.23 ± 0.17 test / 0.02 lexical / 0.00 structural, DTE "
    "0.37 ± 0.34 / 0.05 / 0.00, TDTE 0.02 / 0.00 / 0.00, sparse DTE 0.79 ± 0.20 / 0.39 / 0.00, sparse TDTE 0.14 / "
    "0.09 / 0.00; its Table 4 (56 steps, width 256, one run): DTM 0.79 / 0.05 / 0.00, DTE 1.00 / 1.00 / 0.00. Ours "
    "(the table above, sparse DTE, 8 and 16 steps, 400 steps of batch 16): 0.0 / 0.0 / 0.0, short of the paper's "
    "partial in-distribution figures at this budget and at its structural 0. The tasks differ: the paper reverses the "
    "active/logical sentence trees (its structural split adds an adjective), ours (`tree-reverse`) mirrors random "
    "binary trees (its structural split is deeper trees).",
]


def collect(out: Path, runs: list[dict], data_dir: Path, command: str | None, tasks: tuple[str, ...]) -> None:
    from hf_symbolinv.utils.files import write_text_atomic
    from hf_symbolinv.utils.machine import processor_name

    reports = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/report.json"))]
    reports = [report for report in reports if report["task"] in tasks]
    previous = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    kept = [report for report in previous.get("runs", []) if report["task"] not in tasks]
    reports = sorted([*reports, *kept], key=lambda report: report["name"])
    lexical = {task: lexical_check(data_dir, task) for task in tasks}
    lexical = {**{k: v for k, v in previous.get("lexical", {}).items() if k not in tasks}, **lexical}
    # Per task, the commands whose runs the reports hold (a rerun of some models adds its own).
    commands = {
        task: [lines] if isinstance(lines, str) else lines for task, lines in previous.get("commands", {}).items()
    }
    for task in tasks if command is not None else ():  # None: a --collect-only rerun, which ran nothing
        commands[task] = list(dict.fromkeys([*commands.get(task, []), command]))
    by_command: dict[str, list[str]] = {}
    for task in TASKS:
        for line in commands.get(task, []):
            by_command.setdefault(line, []).append(task)
    machine = f"{platform.machine()} {processor_name()}, {os.cpu_count()} cores"
    groups: dict[tuple[str, str], list[dict]] = {}
    for report in reports:
        groups.setdefault((report["task"], report["model"]), []).append(report)
    lines = [
        "# Differentiable Tree Experts at CPU scale",
        "",
        "Commands: " + "; ".join(f"`{line}` ({', '.join(names)})" for line, names in by_command.items()) + "  ",
        f"Machine: {machine}, torch {__import__('torch').__version__}; runs two or three at a time, one thread each, "
        "so s/step (training time per step) compares the models only roughly.  ",
        "Data: `dataset_builders.build_trees(CONFIG, DIR, BuildOptions(num_samples=N, max_size=M, "
        f"max_depth={MAX_DEPTH}))`, "
        + "; ".join(
            f"{task}: N {spec['samples']:,} ({spec['samples'] * 8 // 10:,} training rows; test and OOD splits of "
            f"{spec['samples'] // 10:,}), M {spec['max_size']}, {spec['train_steps']:,} training steps"
            for task, spec in TASKS.items()
        )
        + ".  ",
        "Training: batch 16, AdamW lr 1e-3 (the package's recipe: cosine schedule, 5% warm-up, clipping at 1.0). "
        "Models: presets `dtm-small`, `dte-small`, `dte-sparse-small`, `tdte-small` (d_model 64, filler 32, "
        "ffn 128, 4 heads, 8 experts), max_depth 6. Accuracy = the whole answer tree equals the reference "
        "(labels and words), in %, mean ± standard deviation over the seeds.",
        "",
        "| task | model | seeds | params | steps run | test | OOD lexical | OOD structural | s/step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, model), group in sorted(groups.items()):
        steps = sorted({g["test"]["num_steps"] for g in group})
        cells = [mean_spread([g[split]["correct"] for g in group]) for split in SPLITS]
        lines.append(
            f"| {task} | {model} | {len(group)} | {group[0]['parameters'] / 1e3:.0f}k | {', '.join(map(str, steps))} "
            f"| {' | '.join(cells)} | {statistics.fmean(g['seconds_per_step'] for g in group):.2f} |"
        )
    lines += [
        "",
        "Paper (the DTE paper's Table 1, DTM / DTE / TDTE): car-cdr-seq 1.00 / 1.00 / 1.00 in distribution, "
        "0.99 / 0.99 / 0.98 OOD lexical, 0.96 / 0.97 / 0.94 OOD structural; active-logical 1.00 on all three for "
        "the DTM and the DTE (TDTE 1.00 / 0.94 / 0.96).",
        "",
        "Steps: the oracle models run the task's fixed count; the Terminating DTE's damper chooses its own (of the "
        "most it may run), per seed:",
        "",
    ]
    for task, spec in TASKS.items():
        chosen = [str(g["test"]["num_steps"]) for g in sorted(groups.get((task, "TDTE"), []), key=lambda g: g["seed"])]
        if chosen:
            lines.append(
                f"- {task}: TDTE chose {', '.join(chosen)} of at most {spec['most_steps']} "
                f"(oracle: {spec['num_steps']})"
            )
    lines += ["", "Structural OOD by measure (adjectives for car-cdr-seq and active-logical, depth for "]
    lines[-1] += "tree-reverse), test splits together, mean over seeds:"
    lines += [""]
    for (task, model), group in sorted(groups.items()):
        by_size: dict[str, list[float]] = {}
        for g in group:
            for split in SPLITS:
                for size, value in g[split].get("correct_by_size", {}).items():
                    by_size.setdefault(size, []).append(value)
        cells = ", ".join(
            f"{size}: {100 * statistics.fmean(v):.0f}" for size, v in sorted(by_size.items(), key=lambda kv: int(kv[0]))
        )
        lines.append(f"- {task}, {model}: {cells}")
    lines += ["", "Lexical split: content words of its inputs that training ever saw (none, by construction):", ""]
    for task, check in lexical.items():
        lines.append(
            f"- {task}: {check['seen_in_training']} of its {check['lexical_words']} words "
            f"(training used {check['training_words']})"
        )
    planned = {run["name"] for run in runs}
    missing = sorted(planned - {r["name"] for r in reports})
    if missing:
        lines += ["", f"Not finished yet ({len(missing)}): {', '.join(missing)}"]
    lines += ["", *CAR_CDR_AGAINST_THE_PAPERS, *TREE_REVERSAL_AGAINST_THE_PAPER]
    write_text_atomic(out / "RESULTS.md", "\n".join(lines) + "\n")
    record = {"runs": reports, "lexical": lexical, "commands": commands}
    write_text_atomic(out / "results.json", json.dumps(record, indent=1))
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--collect-only", action="store_true", help="write RESULTS.md from the finished runs")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS), help="rerun these only")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS), help="these only")
    args = parser.parse_args()
    data_dir = args.out / "data"
    tasks = tuple(args.tasks)
    models = tuple(args.models)
    runs = planned_runs(args.seeds, tasks, models)
    if args.worker is not None:
        # Every worker walks the whole list and skips the runs another one holds or finished: the runs differ in
        # cost, so a fixed share would leave one worker idle.
        failed = []
        for run in runs:
            try:
                run_one(run, args.out, data_dir)
            except Exception as error:  # one failed run must not cost the others; the rerun retries it
                print(f"[{run['name']}] failed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
                failed.append(run["name"])
        return 1 if failed else 0
    # The command that produces the runs (a --collect-only rerun only gathers them).
    command = None if args.collect_only else "python benchmarks/dte_experiments.py " + shlex.join(sys.argv[1:])
    if not args.collect_only:
        build_data(data_dir, tasks)
        base = [sys.executable, __file__, "--out", str(args.out), "--seeds", *map(str, args.seeds), "--tasks", *tasks]
        base += ["--models", *models]
        workers = [
            subprocess.Popen([*base, "--workers", str(args.workers), "--worker", str(i)]) for i in range(args.workers)
        ]
        if any(worker.wait() for worker in workers):
            print("a worker failed; rerun the same command to continue", file=sys.stderr)
            return 1
    collect(args.out, runs, data_dir, command, tasks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
