"""The DTM papers' active <-> logical trees as released (``train.json``, ``validation.json``), at CPU scale.

Models: the Differentiable Tree Machine (``dtm-small``) and the Differentiable Tree Experts (``dte-small``), taking
trees of depth up to 9 counted from the root at 0 (the papers' 10, counted from 1: their structural split's deepest).
Each trains on ``train.json`` and is checked on ``validation.json``. The papers' test, lexical and structural splits are
not released here; in their place this script judges:

* ``train`` (the first 1,250 training rows) and ``validation``;
* ``structural``: each validation row with one or two more adjectives in front of one noun phrase, in the source and
  the target alike (:func:`dataset_builders.dtm.lengthen_dtm_row`: training adjectives, trees up to depth 9), as the
  papers' ``ood_long`` adds them;
* ``lexical``: each validation row with every content word replaced by a word no training row holds.

    python benchmarks/dtm_trees.py train dtm --seed 0       # one run (background it; one thread)
    python benchmarks/dtm_trees.py evaluate                  # every finished run
    python benchmarks/dtm_trees.py collect                   # RESULTS.md and results.json
    python benchmarks/dtm_trees.py ship dtm-s0               # as hf_symbolinv/pretrained/active-logical
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import experiment_runs

REPO = experiment_runs.REPO

DATA = REPO.parent / "shared" / "data" / "dtm_active_logical"
OUT = REPO / "benchmarks" / "results" / "dtm_trees"
SPLITS = ("train", "validation", "lexical", "structural")
#: Interpreter steps of a run unless :data:`RUN_STEPS` says otherwise.
DEFAULT_STEPS = 8
#: Runs trained at the training trees' own depth (7: 255 tree positions, a step about 4.6 times faster than at depth
#: 9's 1,023) and grown to depth 9 for evaluation and shipping (``resize_max_depth``: the same answers on every tree
#: of depth 7, and deeper trees taken).
TRAIN_DEPTH = {
    "dtm-d7": 7,
    "dte-d7": 7,
    "dtm16-d7": 7,
    "dtm16-d7-zero": 7,
    "dtm16-d7-long": 7,
    "dtm16-d7-mse": 7,
    "dtm16-d7-mse10": 7,
    "dtm16-d7-mse100": 7,
}
#: Steps of the runs that do not run :data:`DEFAULT_STEPS`: the DTM authors' setting for this task is 16.
RUN_STEPS = {
    "dtm16-d7": 16,
    "dtm16-d7-zero": 16,
    "dtm16-d7-long": 16,
    "dtm16-d7-mse": 16,
    "dtm16-d7-mse10": 16,
    "dtm16-d7-mse100": 16,
}
#: Runs whose tree encoder starts at zero (``tree_encoder_init``: a position no training tree fills is never read);
#: the others start from small random weights (the default).
ZERO_ENCODER = {"dtm16-d7-zero"}
#: Runs that add the DTM authors' squared-error term to the cross-entropy (``mse_weight``): a blend of trees pays it.
MSE_WEIGHT = {"dtm16-d7-mse": 1.0, "dtm16-d7-mse10": 10.0, "dtm16-d7-mse100": 100.0}
#: The deepest tree (from the root at 0) every judged and shipped model takes: the papers' structural split's 10.
EVALUATION_DEPTH = 9
RUNS = {
    "dtm": "dtm-small",
    "dte": "dte-small",
    "dtm-continued": "dtm-small",
    "dtm-continued2": "dtm-small",
    "dtm-continued3": "dtm-small",
    "dtm-continued4": "dtm-small",
    "dte-continued": "dte-small",
    "dte-continued2": "dte-small",
    "dtm-d7": "dtm-small",
    "dte-d7": "dte-small",
    "dtm16-d7": "dtm-small",
    "dtm16-d7-zero": "dtm-small",
    "dtm16-d7-long": "dtm-small",
    "dtm16-d7-mse": "dtm-small",
    "dtm16-d7-mse10": "dtm-small",
    "dtm16-d7-mse100": "dtm-small",
    "dtm16-d7-chosen": "dtm-small",
    "dtm16-d7-chosen-top1": "dtm-small",
}
#: Runs that continue another (of the same seed) rather than start from a preset.
CONTINUES = {
    "dtm-continued": "dtm",
    "dtm-continued2": "dtm-continued",
    "dtm-continued3": "dtm-continued2",
    "dtm-continued4": "dtm-continued3",
    "dte-continued": "dte",
    "dte-continued2": "dte-continued",
    "dtm16-d7-chosen": "dtm16-d7-mse10",
    "dtm16-d7-chosen-top1": "dtm16-d7-chosen",
}
#: What a continuation changes on the model it continues (``--set`` with ``--init-from``: settings that leave every
#: weight as it is). The squared-error run answers with blended steps; made to choose its steps (``hardness``) it
#: keeps a program of whole car/cdr/cons steps; made to read only each tree's top two levels (``controller_depth``),
#: that program cannot depend on what more adjectives add below them.
CONTINUE_SETTINGS = {"dtm16-d7-chosen": ["hardness=0.5"], "dtm16-d7-chosen-top1": ["controller_depth=1"]}
#: Steps of the stretches whose run folders are gone (reports in results.json keep only the last one's).
STRETCH_STEPS = {"dtm": 600, "dtm-continued": 250, "dtm-continued2": 300, "dtm-continued3": 600}
#: Options of a run beyond its start: the fifth stretch continues a model already far along, where the first
#: stretches' 1e-3 made its loss jump from 0.13 to 3 after 450 steps.
OPTIONS = {
    name: ["--lr", "3e-4"]
    for name in ("dtm-continued4", "dte-continued", "dte-continued2", "dtm16-d7-chosen", "dtm16-d7-chosen-top1")
}
#: The DTM authors' schedule for this task (their README's command: lr 1e-4, 10,000 warm-up steps of 20,000).
OPTIONS["dtm16-d7-long"] = ["--lr", "1e-4", "--warmup-ratio", "0.5"]
#: The run (seed 0) that the shipped ``active-logical`` was written from. Run folders are not kept under version
#: control, so a continuation of it starts from the shipped folder where the run's own folder is gone.
SHIPPED_RUN = "dtm16-d7"
SHIPPED = REPO / "hf_symbolinv" / "pretrained" / "active-logical"
#: The Terminating DTE paper's Table 1, active <-> logical (DTM reproduced by its authors, DTE): train, test, OOD
#: lexical, OOD structural.
PUBLISHED = {"dtm": (1.00, 1.00, 1.00, 1.00), "dte": (1.00, 1.00, 1.00, 1.00)}
for _name in RUNS:
    PUBLISHED[_name] = PUBLISHED["dte" if _name.startswith("dte") else "dtm"]


def run_settings(name: str) -> list[str]:
    """The ``--set`` settings of a run that starts from a preset."""
    depth = TRAIN_DEPTH.get(name, EVALUATION_DEPTH)
    settings = [f"max_depth={depth}", f"num_steps={RUN_STEPS.get(name, DEFAULT_STEPS)}"]
    settings.append(f"tree_encoder_init={'zero' if name in ZERO_ENCODER else 'normal'}")
    return settings + ([f"mse_weight={MSE_WEIGHT[name]:g}"] if name in MSE_WEIGHT else [])


def continue_option(name: str) -> str:
    """A continuation's ``--set`` as written in the results and cards (empty for one that changes no setting)."""
    return f"`--set {' '.join(CONTINUE_SETTINGS[name])}`" if name in CONTINUE_SETTINGS else ""


def command(name: str, seed: int, data: Path, out: Path, steps: int, minutes: float) -> list[str]:
    # A continuation: the run it continues, of the same seed, trained further (a new cosine schedule from its model).
    if name in CONTINUES:
        previous = out / "runs" / f"{CONTINUES[name]}-s{seed}" / "model"
        if not previous.exists() and CONTINUES[name] == SHIPPED_RUN and seed == 0:
            previous = SHIPPED
        start = ["--init-from", str(previous)]
        start += ["--set", *CONTINUE_SETTINGS[name]] if name in CONTINUE_SETTINGS else []
    else:
        start = ["--preset", RUNS[name], "--set", *run_settings(name)]
    start += OPTIONS.get(name, [])
    return experiment_runs.train_command(
        "tree", start, name, seed, data, out, steps, minutes, batch_size=16, eval_samples=256
    )


def train(args: argparse.Namespace) -> None:
    experiment_runs.run_training(command(args.name, args.seed, args.data, args.out, args.steps, args.time_limit))


def _rename_content_words(row: dict, words: set[str]) -> dict:
    """The row with every symbol (content word) replaced by a word no training row holds, alike in source and
    target."""
    from hf_symbolinv.tasks.trees import is_tree_symbol, tree_symbol_names
    from hf_symbolinv.utils.trees import format_bracketed, parse_bracketed

    names = {name: f"unseen{index}x" for index, name in enumerate(tree_symbol_names(row["input"]))}
    assert not set(names.values()) & words

    def rename(tree):  # a leaf, None, or (label, left, right)
        if tree is None:
            return None
        if isinstance(tree, str):
            return names.get(tree, tree) if is_tree_symbol(tree) else tree
        return (tree[0], rename(tree[1]), rename(tree[2]))

    return {key: format_bracketed(rename(parse_bracketed(row[key]))) for key in ("input", "target")}


def evaluation_splits(data: Path) -> dict[str, list[dict]]:
    """The four splits judged (see the module docstring), the same on every call."""
    from dataset_builders.dtm import dtm_adjectives, lengthen_dtm_row, load_dtm
    from hf_symbolinv.tasks.trees import tree_symbol_names

    dataset = load_dtm(data)
    train_rows = [dict(row) for row in dataset["train"]]
    validation = [dict(row) for row in dataset["validation"]]
    words = {word for row in train_rows for word in tree_symbol_names(row["input"])}
    adjectives = dtm_adjectives(train_rows)
    rng = random.Random(0)
    structural = []
    for index, row in enumerate(validation):
        longer = lengthen_dtm_row(row, 1 + index % 2, adjectives, rng)
        if longer is not None:
            structural.append(longer)
    return {
        "train": train_rows[:1250],
        "validation": validation,
        "lexical": [_rename_content_words(row, words) for row in validation],
        "structural": structural,
    }


def grown(model, tokenizer):
    """A model and its tokenizer taking trees of depth :data:`EVALUATION_DEPTH` (grown where trained shallower)."""
    if model.config.max_depth < EVALUATION_DEPTH:
        model.resize_max_depth(EVALUATION_DEPTH)
        tokenizer = tokenizer.with_max_depth(EVALUATION_DEPTH)
    return model, tokenizer


def evaluate(args: argparse.Namespace) -> None:
    import torch

    from hf_symbolinv.evaluation.tree import evaluate_tree_model
    from hf_symbolinv.routes.tree import load_tree_folder

    torch.set_num_threads(1)
    splits = None
    for run in experiment_runs.runs_to_evaluate(args.out, args.again, args.only):
        splits = splits or evaluation_splits(args.data)
        model, tokenizer = load_tree_folder(run / "model")
        trained_depth = model.config.max_depth
        model, tokenizer = grown(model, tokenizer)
        report = {"parameters": sum(p.numel() for p in model.parameters()), "by_split": {}}
        report["trained_max_depth"] = trained_depth
        for name in SPLITS:
            rows = splits[name]
            result = evaluate_tree_model(
                model, tokenizer, "tree", [r["input"] for r in rows], [r["target"] for r in rows], batch_size=32
            )
            wrong = [
                {"input": r["input"], "expected": r["target"], "given": answer}
                for r, answer in zip(rows, result["answers"])
                if answer != r["target"]
            ][:3]
            report["by_split"][name] = {"count": len(rows), "correct": result["correct"], "wrong_examples": wrong}
        state = experiment_runs.last_trainer_state(run / "checkpoints")
        report["steps"] = state["global_step"] if state else None
        experiment_runs.write_report(run, report)


def collect(args: argparse.Namespace) -> None:
    reports = experiment_runs.read_reports(args.out)
    machine = experiment_runs.machine_line()
    lines = [
        "# Active <-> logical (the DTM papers' released trees) at CPU scale",
        "",
        f"Machine: {machine}.  ",
        "Data: `train.json` (10,000) to train, `validation.json` (1,250) to check; `structural` = the validation rows "
        "with one or two more adjectives in one noun phrase (depth up to 9 from 0, the papers' 10), `lexical` = "
        "the validation rows with every content word unseen. Accuracy = the whole answer tree equals the reference, "
        "in %.",
        "",
        "| model | seeds | parameters | steps | train (1,250) | validation | lexical | structural | paper (train / "
        "test / lexical / structural) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model, seeds in reports.items():
        runs = list(seeds.values())
        cells = [experiment_runs.mean_cell([r["by_split"][name]["correct"] for r in runs]) for name in SPLITS]
        paper = " / ".join(f"{value:.2f}" for value in PUBLISHED[model])
        steps = ", ".join(str(r["steps"]) for r in runs)
        lines.append(
            f"| {model} | {len(runs)} | {runs[0]['parameters']:,} | {steps} | " + " | ".join(cells) + f" | {paper} |"
        )
    lines += [
        "",
        "Paper: the Terminating DTE paper's Table 1 (DTM and DTE: 1.00 ± 0.00 on train, test, OOD lexical and OOD "
        "structural for active <-> logical; d_model 256, 16 experts, runs below 90% validation excluded, 5 runs).",
        "",
        "Runs: `python benchmarks/dtm_trees.py train NAME --seed S` = `symbolinv train --task tree --preset "
        f"dtm-small|dte-small --set max_depth=D num_steps=N --batch-size 16 --steps STEPS` (AdamW lr 1e-3; D = "
        f"{EVALUATION_DEPTH} and N = {DEFAULT_STEPS} unless said otherwise); a "
        "continuation (`*-continued*`, `*-chosen*`) is `--init-from` the model of the stretch it continues instead of "
        f"`--preset`, with a new cosine schedule ({', '.join(sorted(OPTIONS))}: lr 3e-4) and, for "
        + ", ".join(f"{name} {continue_option(name)}" for name in CONTINUE_SETTINGS)
        + ". "
        f"{', '.join(sorted(TRAIN_DEPTH))}: trained at `max_depth=7` (every training tree fits), grown to "
        f"{EVALUATION_DEPTH} to be judged (`resize_max_depth`).",
    ]
    results = {"machine": machine, "published_table_1": PUBLISHED, "runs": reports}
    experiment_runs.write_results(args.out, lines, results)


CARD = """# Active <-> logical trees: {model} (shipped with hf_symbolinv)

A {architecture} trained on the DTM papers' released active <-> logical data (`train.json`, 10,000 pairs, both
directions mixed): given a sentence tree in active form it answers the logical form, and the other way round. Trees
are written as in the papers' files (a node of one child is allowed: `( N dog )`) or as the package writes them
(`(N dog _)`); content words are interchangeable symbols (any lowercase word, hyphens allowed), so unseen words are
read as well as seen ones. It takes trees of depth up to 9 counted from the root at 0 (the papers count from 1: their
structural split's 10).

    symbolinv solve active-logical "(S (NP (DET the) (AP (N dog))) (VP (V saw) (NP (DET a) (AP (N cat)))))"

```python
import torch
from transformers import pipeline
from hf_symbolinv.pretrained import shipped_model

path = str(shipped_model("active-logical"))  # stored in float16: compute in float32
pipe = pipeline("tree-transduction", model=path, trust_remote_code=True, dtype=torch.float32)
pipe("( LF ( V saw ) ( ARGS ( NP ( DET the ) ( AP ( N dog ) ) ) ( NP ( DET a ) ( AP ( N cat ) ) ) ) )")
```

## Training

`python benchmarks/dtm_trees.py train {first} --seed {seed} --steps {first_steps}`, that is `symbolinv train --task tree
--preset {preset} --set {settings} --data DTM_FOLDER --steps {first_steps} --batch-size 16 --seed {seed}`
(AdamW lr 1e-3), on 2 shared CPU cores, one thread; {parameters:,} parameters, stored in float16. Checked on
`validation.json`.
{growth}{history}

## Evaluation

`symbolinv evaluate active-logical --data DTM_FOLDER --split NAME --report FILE` (the report's `correct`: the whole
answer tree equals the reference). Accuracy in %:

| train (first 1,250) | validation | lexical (every content word unseen) | structural (1 or 2 more adjectives) |
|---|---|---|---|
| {cells} |

The papers' test, lexical and structural splits are not released with the data: `lexical` and `structural` here are
the validation rows with unseen words and with one or two more adjectives in one noun phrase (the project's
`benchmarks/dtm_trees.py`). The Terminating DTE paper's Table 1 reports 1.00 on every split for the DTM and the DTE
(d_model 256, 16 experts, far more steps); {verdict}
"""


def stretches(name: str) -> list[str]:
    """The runs of a chain of continuations ending with ``name``, first (started from a preset) to last."""
    chain = [name]
    while chain[-1] in CONTINUES:
        chain.append(CONTINUES[chain[-1]])
    return chain[::-1]


def stretch_steps(out: Path, chain: list[str], seed: str, reports: dict[str, dict[int, dict]]) -> list[int | None]:
    """The steps each stretch of ``chain`` (of seed ``seed``) trained: from its report, else from its run folder's
    last checkpoint, else as recorded in :data:`STRETCH_STEPS` (runs whose folders are gone)."""
    steps = []
    for stretch in chain:
        count = reports.get(stretch, {}).get(int(seed), {}).get("steps")
        if count is None:
            state = experiment_runs.last_trainer_state(out / "runs" / f"{stretch}-s{seed}" / "checkpoints")
            count = state["global_step"] if state else STRETCH_STEPS.get(stretch)
        steps.append(count)
    return steps


def stretch_history(chain: list[str], steps: list[int | None], seed: str) -> str:
    """The card's account of a run that continues others: each stretch's command and steps, first to last."""
    if len(chain) == 1:
        return ""
    commands = ", then ".join(
        f"`train {stretch} --steps {count}`"
        + (f" ({continue_option(stretch)})" if stretch in CONTINUE_SETTINGS else "")
        + (" (lr 3e-4)" if stretch in OPTIONS else "")
        for stretch, count in zip(chain, steps)
    )
    total = sum(count for count in steps if count is not None)
    return (
        f" This model is the last of {len(chain)} stretches of one run (seed {seed}): {commands}, each after the first "
        f"`symbolinv train --init-from` the previous model (a new cosine schedule): {total:,} steps in all."
    )


def ship(args: argparse.Namespace) -> None:
    """Write a finished run's model in float16, with its card, as the shipped model ``active-logical``."""
    from hf_symbolinv.routes.tree import load_tree_folder
    from hf_symbolinv.utils.files import save_model_folder

    run, report, model_name, seed = experiment_runs.read_finished_run(args.out, args.run)
    model, tokenizer = grown(*load_tree_folder(run / "model"))
    correct = [report["by_split"][name]["correct"] for name in SPLITS]
    reached = min(correct) >= 0.99
    chain = stretches(model_name)
    steps = stretch_steps(args.out, chain, seed, experiment_runs.read_reports(args.out))
    card = CARD.format(
        model=model_name,
        first=chain[0],
        first_steps=steps[0],
        architecture="Differentiable Tree Experts model"
        if model_name.startswith("dte")
        else "Differentiable Tree Machine",
        seed=seed,
        preset=RUNS[model_name],
        settings=" ".join(run_settings(chain[0])),
        growth=""
        if report.get("trained_max_depth", EVALUATION_DEPTH) == EVALUATION_DEPTH
        else f"Trained on trees of depth up to {report['trained_max_depth']} (the training file's deepest; a step "
        f"costs in proportion to the tree positions), then grown to depth {EVALUATION_DEPTH} "
        f"(`model.resize_max_depth({EVALUATION_DEPTH})`: the new, deeper positions get zero weights in the tree "
        "encoder, so the model reads a tree as before).",
        parameters=report["parameters"],
        cells=" | ".join(f"{100 * value:.1f}" for value in correct),
        history=stretch_history(chain, steps, seed),
        verdict="this model reaches 99% on every split here."
        if reached
        else "this model, trained briefly on a CPU, **does not reach** the issue's 99% on every split.",
    )
    save_model_folder(model.half(), tokenizer, args.destination, card, with_code=False)  # shipped: no code
    print(f"shipped {run} as {args.destination}")


def main() -> None:
    parser, actions = experiment_runs.experiment_parser(
        __doc__.split("\n\n")[0],
        DATA,
        OUT,
        RUNS,
        (train, evaluate, collect, ship),
        steps=600,
        minutes=80.0,
        destination=SHIPPED,
    )
    actions["evaluate"].add_argument(
        "--only", nargs="*", default=None, metavar="RUN", help="these runs (NAME-sSEED) only"
    )
    experiment_runs.parse_and_run(parser, "DTM")


if __name__ == "__main__":
    main()
