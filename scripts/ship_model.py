"""The release step: a finished training run written as a shipped model of the package (float16 weights, config,
tokenizer, generation config and card; no code: the package's classes load it, ``symbolinv export`` adds the code
for the Hub).

    python scripts/ship_model.py --run benchmarks/results/learning_small/runs/prop-sit --name prop-small \\
        --destination hf_symbolinv/pretrained/prop-small
    python scripts/ship_model.py --campaign ltl-small --name ltl-small --destination hf_symbolinv/pretrained/ltl-small

``--run``: a run of ``benchmarks/learning.py small`` (its ``report.json`` beside the model); ``--campaign``: a
finished campaign of ``benchmarks/gpu_campaign.py`` (before its resumable state is dropped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY / "benchmarks"))  # the experiment scripts import each other by bare name

from learning import machine, minutes, run_steps  # noqa: E402

SHIPPED_CARD = """---
library_name: transformers
pipeline_tag: text2text-generation
tags:
- symbolinv
- symbol-invariant-transformer
- {task}
---

# Symbol-Invariant Transformer: {name}, trained on {trained_on} (shipped with hf_symbolinv)

A small **Symbol-Invariant Transformer** (one stream per symbol) for {what}: a formula of at most 20 nodes in
Polish notation in, {answer} out (`{example}`). {solve_note}
Every answer should be checked; `symbolinv solve` prints the checker's verdict.

```python
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline
from hf_symbolinv.pretrained import shipped_model

path = shipped_model("{name}")
model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch.float32)  # stored in float16
tokenizer = AutoTokenizer.from_pretrained(path)
pipe = pipeline("symbolic-generation", model=model, tokenizer=tokenizer)
pipe("{example_input}", num_beams=3)
```

## Model

| | |
|---|---|
| preset | `{preset}` |
| embedding | `streams` |
| stream attention | `{attention}` |
| width / layers / heads / FFN | {width} / {layers}+{layers} / {heads} / {ffn} |
| position encodings (encoder, decoder) | {positions} |
| loss | {loss} |
| parameters | {parameters:,} (stored in float16: {megabytes:.1f} MB) |

## Training

{training}

## Evaluation

Beam 3, the first answer judged by the checker (the float32 weights before the cast; {evaluated_on}). "1-3 symbols": the
first {count_low:,} formulas of the `{task}-small` test split; "4-8 symbols": {count_high:,} formulas with 4 to 8
symbols from `symbolinv data build {task}-small-8sym` (symbol counts that training never shows):

| | 1-3 symbols | 4-8 symbols |
|---|---|---|
| correct | **{correct_low:.1f}%** | **{correct_high:.1f}%** |
| exact (the dataset's own answer) | {exact_low:.1f}% | {exact_high:.1f}% |
| invalid | {invalid_low:.1f}% | {invalid_high:.1f}% |

Correct by symbol count: {by_symbols}. Alpha-covariance (the answers of renamed inputs, renamed back, agree):
{alpha}. {baselines}

## Invariance guarantee

Renaming the symbols of an input renames the answer the same way, and the model reads formulas with more
symbols, or other names, than it saw in training.
"""
CPU_TRAINING = """\
Data: `symbolinv data build {task}-small --out data/{task}-small` (seed 0: formulas of at most 20 nodes over at
most 3 symbols; train 80,000, validation 10,000, test 10,000). On 2 CPU cores ({machine}):

```bash
symbolinv train --task {task} --preset {name} --data data/{task}-small --output runs/{name} \\
    --steps {steps} --eval-steps 500 --eval-samples 200
```

(the same command run again resumes an interrupted run). The package's recipe: AdamW (lr 1e-3, betas
0.9/0.95, weight decay 0.1), cosine schedule with 1,000 warm-up steps, cross-entropy over the cosine logits,
batch 64, {steps} steps ({train_minutes} minutes here, beside another training run).{note} The weights were then
cast to float16."""
CAMPAIGN_TRAINING = """\
Data: `symbolinv data build {task}-small --out data/{task}-small` (seed 0: formulas of at most 20 nodes over at
most 3 symbols; train 80,000, validation 10,000, test 10,000). On one GPU ({machine}), in calls of a few minutes
that each resumed the run from the state the previous one left (the project's `benchmarks/gpu_campaign.py`,
campaign `{campaign}`):

```bash
python benchmarks/gpu_campaign.py {campaign} --train-minutes 7   # again until the log says the run is finished
```

which runs `symbolinv train --task {task} --preset {preset}{sets} --steps {steps} --batch-size {batch}
--bf16 --group-by-length --time-limit 7` (the same command run again resumes). The package's recipe: AdamW (lr
1e-3, betas 0.9/0.95, weight decay 0.1), cosine schedule with 1,000 warm-up steps, cross-entropy over the cosine
logits, batch {batch}, {steps:,} steps ({train_minutes} minutes of training on the GPU, shared with four other
runs). The weights were then cast to float16. Trained on 2 CPU cores instead (`symbolinv train --preset
{preset}`, 7,000 steps of batch 64, about 40 minutes), the `{preset}` preset reaches the figures in the project's
`benchmarks/results/learning_small/RESULTS.md`."""
#: What the card says of the automatic choice (hf_symbolinv.pretrained.model_for): measured tables, not thresholds.
SOLVE_NOTE = (
    "`symbolinv solve` and the web page ask it, when no model is given, for the formulas its table (`evaluation.json`, "
    "written by `benchmarks/paper_distribution.py --write-choice`) says it answers best of the shipped models; give "
    "this folder as MODEL to use it for any formula."
)
EXAMPLES = {
    "prop": ("propositional satisfiability", "a satisfying partial assignment", "& a | ! b c", "&a|!bc -> a1b0"),
    "ltl": ("LTL satisfiability", "a satisfying trace (a lasso)", "& a X b", "&aXb -> a;b;{1}"),
}


def ship(args: argparse.Namespace) -> int:
    """Cast a finished run's model to float16 and write it, with its card, as a shipped model of the package: a run
    of ``small`` (``--run``) or a finished campaign of ``gpu_campaign.py`` (``--campaign``, before its checkpoint is
    dropped)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from hf_symbolinv.utils.files import save_model_folder

    if args.campaign is not None:
        import gpu_campaign

        campaign = gpu_campaign.CAMPAIGNS[args.campaign]
        state = gpu_campaign.state_folder(args.campaign)
        entry = gpu_campaign.log_entries(state)[-1]
        report, model_dir, task = entry["test_beam3"], gpu_campaign.kept_checkpoint(state), campaign.task
        calls = gpu_campaign.log_entries(state)
        sets = campaign.extra[1:] if campaign.extra[:1] == ("--set",) else ()
        training = CAMPAIGN_TRAINING.format(
            task=task,
            preset=campaign.preset,
            campaign=args.campaign,
            machine=entry["device"],
            sets=f" --set {' '.join(sets)}" if sets else "",
            steps=campaign.steps,
            batch=campaign.batch_size,
            train_minutes=minutes(sum(call["call_minutes"] for call in calls)),
        )
        trained_on, evaluated_on, preset = "one GPU", entry["device"], campaign.preset
        baselines = (
            "The fixed-embedding and alpha-renaming baselines, at d_model 64 on 2 CPU cores, are in the project's "
            "`benchmarks/results/learning/`."
        )
    else:
        report = json.loads((args.run / "report.json").read_text())
        model_dir, task = args.run / "model", report["task"]
        steps = run_steps(report, args.steps)
        training = CPU_TRAINING.format(
            task=task,
            name=args.name,
            machine=args.machine,
            steps=steps,
            train_minutes=minutes(report["train_minutes"]),
            note=f" {args.note}" if args.note else "",
        )
        trained_on, evaluated_on, preset = "2 CPU cores", args.machine, args.name
        # OUT of `small`, whose table holds the baselines, unless they were trained into another results folder
        results = (args.baselines or args.run.resolve().parent.parent).resolve()
        folder = results.relative_to(REPOSITORY) if results.is_relative_to(REPOSITORY) else results.name
        baselines = (
            "The fixed-embedding and alpha-renaming baselines of the same architecture, trained "
            + ("with the same recipe for the steps their table names" if args.baselines else "the same way")
            + f", are in the project's `{folder}/`."
        )
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = model.config
    parameters = sum(p.numel() for p in model.parameters())
    low, high = report["1-3 symbols"], report["4-8 symbols"]
    alpha = {**low["alpha_covariance"], **high["alpha_covariance"]}
    by_symbols = {**low["by_symbols"], **high["by_symbols"]}
    what, answer, example_input, example = EXAMPLES[task]
    card = SHIPPED_CARD.format(
        task=task,
        name=args.name,
        preset=preset,
        trained_on=trained_on,
        training=training,
        evaluated_on=evaluated_on,
        baselines=baselines,
        what=what,
        answer=answer,
        example=example,
        example_input=example_input,
        solve_note=SOLVE_NOTE,
        attention=config.stream_attention,
        width=config.d_model,
        layers=config.encoder_layers,
        heads=config.encoder_attention_heads,
        ffn=config.encoder_ffn_dim,
        positions=f"{config.encoder_position_encoding}, {config.decoder_position_encoding}",
        loss={"adacos": "AdaCos", "cross_entropy": "cross-entropy over cosine logits (fixed scale)"}[config.loss_type]
        if config.feature_normalization
        else "cross-entropy",
        parameters=parameters,
        megabytes=2 * parameters / 2**20,
        count_low=low["count"],
        count_high=high["count"],
        correct_low=100 * low["correct"],
        correct_high=100 * high["correct"],
        exact_low=100 * low["exact"],
        exact_high=100 * high["exact"],
        invalid_low=100 * low["invalid"],
        invalid_high=100 * high["invalid"],
        by_symbols=", ".join(f"{k}: {100 * v:.1f}%" for k, v in sorted(by_symbols.items(), key=lambda kv: int(kv[0]))),
        alpha=", ".join(f"{k} symbols {100 * v:.0f}%" for k, v in sorted(alpha.items())) or "not measured",
    )
    # Without the model code: the package's classes load it (`symbolinv export` writes a folder with the code).
    save_model_folder(model.half(), tokenizer, args.destination, card, with_code=False)
    print(f"shipped {args.campaign or args.run} as {args.destination}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a finished run folder of `learning.py small` (OUT/runs/NAME)")
    parser.add_argument("--campaign", help="a finished campaign of gpu_campaign.py instead of --run")
    parser.add_argument("--name", required=True, help="the shipped model's name (prop-small, ltl-small)")
    parser.add_argument("--destination", type=Path, required=True, help="the folder (hf_symbolinv/pretrained/NAME)")
    parser.add_argument("--machine", default=None, help="the machine, as the card names it")
    parser.add_argument(
        "--baselines", type=Path, default=None, help="the results folder with the baselines (default: the run's)"
    )
    parser.add_argument("--note", default=None, help="how the run differed from the command, for the card")
    args = parser.parse_args()
    if (args.run is None) == (args.campaign is None):
        parser.error("give --run or --campaign")
    args.machine = args.machine or machine()
    return ship(args)


if __name__ == "__main__":
    sys.exit(main())
