"""Models that learn, on 2 CPU cores: the small-formula table and the learning curves of the LTL study.

``small``: the SIT presets ``prop-small`` and ``ltl-small`` against the fixed-embedding and alpha-renaming
baselines of the same architecture (``--embedding-type``: per-stream attention only) at equal steps, trained
with ``symbolinv train`` on ``prop-small`` / ``ltl-small`` (formulas of at most 20 nodes over at most 3
symbols) and tested with beam search on their test splits (1-3 symbols) and on ``*-small-8sym`` (the rows with
4-8 symbols, which training never shows): correct, exact, alpha-covariance.

``curves``: a stock ``BartForConditionalGeneration`` (cross-entropy over ordinary logits, the same token ids),
``ltl-vanilla`` and ``ltl-best`` at the same small size (d_model 64, 2 + 2 layers) on ``ltl-small``, with
validation loss and validation correct logged during training; and what moves the curves: the loss (AdaCos
against cross-entropy over the cosine logits at the fixed scale) and the warm-up (1,000 steps against 5%).

    python benchmarks/learning.py small --out benchmarks/results/learning_small --data-dir data
    python benchmarks/learning.py curves --out benchmarks/results/learning_curves --data-dir data

A finished run becomes a shipped model with ``python scripts/ship_model.py`` (the release step).

Every run is ``symbolinv train`` (or the BART loop below, which uses the same Trainer, tokenizer and metrics)
into ``OUT/runs/NAME``, so an interrupted run resumes from its last checkpoint; a finished run's report is kept in
``OUT/runs/NAME/report.json`` and not redone. ``--only NAME ...`` runs some runs (start two processes to use
both cores); an invocation without ``--only`` runs what is left and writes ``RESULTS.md``, ``results.json`` and
``small.png`` or ``curves.png``. One folder holds one study (``benchmarks/README.md``: ``learning_<study>[_<run>]``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.routes import TrainArguments, train
from hf_symbolinv.training import default_warmup_steps
from hf_symbolinv.utils.files import write_text_atomic
from hf_symbolinv.utils.machine import processor_name
from hf_symbolinv.utils.progress import quiet_off_terminal

REPOSITORY = Path(__file__).resolve().parent.parent
#: The training recipe every run of this study shares (the package's defaults are what it found).
STEPS, BATCH, EVAL_EVERY, EVAL_SAMPLES = 7000, 64, 500, 200
CURVE_EVAL_EVERY = 250
#: Small-formula runs: name -> (task, preset, further :class:`TrainArguments` fields, description).
SMALL_RUNS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    f"{task}-{kind}": (task, f"{task}-small", extra, what)
    for task in ("prop", "ltl")
    for kind, extra, what in (
        ("sit", {}, "SIT"),
        ("fixed", {"embedding_type": "fixed"}, "fixed embeddings, 26 symbol rows"),
        ("alpha", {"embedding_type": "alpha_renaming"}, "alpha-renaming: 26 rows permuted at every step"),
    )
}
#: One size for the LTL curves: d_model 64, 2 + 2 layers (the stock model's 255k parameters).
SMALL_SIZE: dict[str, Any] = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 256,
    "decoder_ffn_dim": 256,
}
#: Curve runs: name -> (preset or "bart", further :class:`TrainArguments` fields, description); every run's
#: config overrides start from ``SMALL_SIZE``.
ADACOS = {"overrides": {"loss_type": "adacos"}}
CURVE_RUNS: dict[str, tuple[str, dict[str, Any], str]] = {
    "bart": ("bart", {}, "stock BartForConditionalGeneration, cross-entropy over ordinary logits"),
    "ltl-vanilla-adacos": ("ltl-vanilla", ADACOS, "ltl-vanilla, AdaCos (the paper's loss)"),
    "ltl-best-adacos": ("ltl-best", ADACOS, "ltl-best, AdaCos (the paper's loss)"),
    "ltl-best-ce": ("ltl-best", {}, "ltl-best, cross-entropy over cosine logits (the new default)"),
    "ltl-best-ce-warmup100": ("ltl-best", {"warmup_steps": 100}, "ltl-best, cross-entropy, 100 warm-up steps"),
    "ltl-best-adacos-warmup100": (
        "ltl-best",
        {**ADACOS, "warmup_steps": 100},
        "ltl-best, AdaCos, 100 warm-up steps (the recipe of the first GPU runs)",
    ),
}
CURVE_STEPS = 2000


def machine() -> str:
    """This machine as the training logs name it: the architecture and the processor, the cores, torch and its
    threads."""
    threads = torch.get_num_threads()
    return (
        f"{platform.machine()} {processor_name()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{threads} thread(s) per run"
    )


def train_options(
    task: str, preset: str, data: Path, output: Path, steps: int, eval_every: int = EVAL_EVERY, **fields: Any
) -> TrainArguments:
    """The study's shared recipe for one run, with the run's own ``fields`` (:class:`TrainArguments`')."""
    return TrainArguments(
        task=task,
        preset=preset,
        data=str(data),
        output=str(output),
        steps=steps,
        batch_size=BATCH,
        eval_steps=eval_every,
        eval_samples=EVAL_SAMPLES,
        **fields,
    )


def log_history(run_dir: Path) -> list[dict[str, Any]]:
    """The Trainer's log of the run's last checkpoint (training loss, validation loss and correct per step)."""
    checkpoints = sorted((run_dir / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.rpartition("-")[2]))
    if not checkpoints:
        return []
    return json.loads((checkpoints[-1] / "trainer_state.json").read_text())["log_history"]


def train_minutes(history: list[dict[str, Any]]) -> float | None:
    """The training time the Trainer measured (its last chunk's, for a run that was resumed)."""
    runtimes = [entry["train_runtime"] for entry in history if "train_runtime" in entry]
    return runtimes[-1] / 60 if runtimes else None


def curve(history: list[dict[str, Any]]) -> dict[str, list]:
    evals = [entry for entry in history if "eval_loss" in entry]
    train = [entry for entry in history if "loss" in entry]
    return {
        "step": [e["step"] for e in evals],
        "eval_loss": [e["eval_loss"] for e in evals],
        "eval_correct": [e.get("eval_correct") for e in evals],
        "eval_invalid": [e.get("eval_invalid") for e in evals],
        "train_step": [e["step"] for e in train],
        "train_loss": [e["loss"] for e in train],
    }


def load_for_evaluation(model_dir: Path) -> tuple[Any, Any]:
    """A saved model (or checkpoint) in float32 on the GPU when there is one, and its tokenizer."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    return model, AutoTokenizer.from_pretrained(model_dir)


def evaluate_groups(model_dir: Path, task: str, tests: dict[str, Any], beam: int) -> dict[str, Any]:
    """Correct / exact / invalid per test group, alpha-covariance at 3 symbols (and 4, 5 on the larger set)."""
    model, tokenizer = load_for_evaluation(model_dir)
    scores: dict[str, Any] = {"parameters": sum(p.numel() for p in model.parameters())}
    for group, split in tests.items():
        report = evaluate_model(
            model,
            tokenizer,
            task,
            list(split["input"]),
            list(split["target"]),
            num_symbols=list(split["num_symbols"]),
            sizes=list(split["size"]),
            num_beams=beam,
            alpha_symbol_counts=(3,) if group == "1-3 symbols" else (4, 5),
            alpha_pool=5,
            alpha_samples=50,
            max_perm=24,
            progress=False,
        )
        scores[group] = {
            key: report.to_dict()[key] for key in ("count", "correct", "exact", "invalid", "alpha_covariance")
        }
        scores[group]["by_symbols"] = report.by_symbols
    return scores


def small_tests(data_dir: Path, task: str, limit: int) -> dict[str, Any]:
    # Evaluations started side by side share these folders: one builds, the others wait for it.
    options, wait = BuildOptions(progress=False), dataset_builders.SHARED_WAIT_SECONDS
    small = dataset_builders.build(f"{task}-small", data_dir / f"{task}-small", options, wait_seconds=wait)
    wide = dataset_builders.build(f"{task}-small-8sym", data_dir / f"{task}-small-8sym", options, wait_seconds=wait)
    wide = wide["test"].filter(lambda row: row["num_symbols"] >= 4)
    return {
        "1-3 symbols": small["test"].select(range(min(limit, len(small["test"])))),
        "4-8 symbols": wide.select(range(min(limit, len(wide)))),
    }


def saved_report(args: argparse.Namespace, name: str) -> dict[str, Any] | None:
    """The report of a finished run (a rerun does not redo it), or None."""
    report_file = args.out / "runs" / name / "report.json"
    return json.loads(report_file.read_text()) if report_file.exists() else None


def save_report(args: argparse.Namespace, report: dict[str, Any]) -> dict[str, Any]:
    """Add the run's curve to ``report`` and write it as the run's report."""
    run_dir = args.out / "runs" / report["name"]
    report["curve"] = curve(log_history(run_dir))
    write_text_atomic(run_dir / "report.json", json.dumps(report, indent=1, default=str))
    return report


def train_run(arguments: TrainArguments, name: str) -> float:
    """Train as ``symbolinv train`` does with ``arguments``; the minutes it took (this invocation's share of a
    resumed run)."""
    start = time.perf_counter()
    try:
        train(arguments)
    except (ValueError, OSError) as error:  # what the command answers in one line
        raise SystemExit(f"training {name} failed: {error}") from error
    except SystemExit as stop:
        if isinstance(stop.code, str):
            raise SystemExit(f"training {name} failed: {stop.code}") from stop
        raise
    return (time.perf_counter() - start) / 60


def run_small(args: argparse.Namespace, name: str) -> dict[str, Any]:
    if (report := saved_report(args, name)) is not None:
        return report
    task, preset, extra, what = SMALL_RUNS[name]
    run_dir = args.out / "runs" / name
    if (run_dir / "model" / "config.json").is_file():  # a finished training is not resumed again
        minutes = train_minutes(log_history(run_dir))
    else:
        minutes = train_run(
            train_options(task, preset, args.data_dir / f"{task}-small", run_dir, args.steps, **extra), name
        )
    scores = evaluate_groups(run_dir / "model", task, small_tests(args.data_dir, task, args.test_samples), args.beam)
    report = {"name": name, "task": task, "how": what, "train_minutes": minutes, "machine": machine(), **scores}
    return save_report(args, report)


def train_bart(run_dir: Path, data: Path, steps: int) -> None:
    """A stock BART of the curves' size on the SIT tokenizer's ids (one id per token, as a fixed-embedding model
    sees them), trained by the same Trainer with the same recipe and judged by the same checker."""
    from datasets import load_dataset
    from transformers import BartConfig, BartForConditionalGeneration, DataCollatorForSeq2Seq, Seq2SeqTrainingArguments

    from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
    from hf_symbolinv.training import (
        SymbolInvTrainer,
        recipe_arguments,
        semantic_metrics,
        tokenize_dataset,
    )

    tokenizer = SymbolInvTokenizer.from_preset("ltl")
    dataset = load_dataset(str(data))
    held_out = dataset["validation"].select(range(EVAL_SAMPLES))
    columns = ["input_ids", "attention_mask", "labels"]
    train = tokenize_dataset(dataset["train"], tokenizer, task="ltl").select_columns(columns)
    evaluation = tokenize_dataset(held_out, tokenizer, task="ltl").select_columns(columns)
    config = BartConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=256,
        decoder_ffn_dim=256,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.convert_tokens_to_ids("<start>"),
        forced_eos_token_id=None,
    )
    model = BartForConditionalGeneration(config)
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)

    def without_symbol_mask(batch: Any) -> Any:  # the tokenizer's padding adds it; BART has no use for it
        batch.pop("symbol_mask", None)
        return batch

    arguments = Seq2SeqTrainingArguments(
        output_dir=str(run_dir / "checkpoints"),
        max_steps=steps,
        per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=BATCH,
        **recipe_arguments(warmup_steps=default_warmup_steps(steps)),
        eval_strategy="steps",
        eval_steps=CURVE_EVAL_EVERY,
        save_strategy="steps",
        save_steps=CURVE_EVAL_EVERY,
        save_total_limit=2,
        logging_steps=CURVE_EVAL_EVERY // 5,
        predict_with_generate=True,
        generation_num_beams=1,
        generation_max_length=128,
        report_to=[],
        seed=0,
    )
    trainer = SymbolInvTrainer(
        model=model,
        args=arguments,
        train_dataset=train,
        eval_dataset=evaluation,
        processing_class=tokenizer,
        data_collator=lambda features: without_symbol_mask(collator(features)),
        compute_metrics=semantic_metrics("ltl", tokenizer, held_out["input"], held_out["target"]),
    )
    resume = any((run_dir / "checkpoints").glob("checkpoint-*"))
    trainer.train(resume_from_checkpoint=True if resume else None)


def run_curve(args: argparse.Namespace, name: str) -> dict[str, Any]:
    if (report := saved_report(args, name)) is not None:
        return report
    preset, extra, what = CURVE_RUNS[name]
    run_dir = args.out / "runs" / name
    data = args.data_dir / "ltl-small"
    dataset_builders.build("ltl-small", data, BuildOptions(progress=False))
    if preset == "bart":
        start = time.perf_counter()
        train_bart(run_dir, data, args.curve_steps)
        minutes = (time.perf_counter() - start) / 60
    else:
        fields = {**extra, "overrides": {**SMALL_SIZE, **extra.get("overrides", {})}}
        minutes = train_run(
            train_options("ltl", preset, data, run_dir, args.curve_steps, CURVE_EVAL_EVERY, **fields), name
        )
    return save_report(args, {"name": name, "how": what, "train_minutes": minutes})


def minutes(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def run_steps(run: dict[str, Any], default: int) -> int:
    """The optimizer steps a run of ``small`` trained (its curve's last step), else ``default``."""
    steps = run.get("curve", {}).get("train_step") or []
    return int(steps[-1]) if steps else default


def small_markdown(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# Small formulas on 2 CPU cores: the SIT against its baselines",
        "",
        f"Command: `{args.command}`  ",
        "Machine: "
        + "; ".join(
            f"{where} ({', '.join(run['name'] for run in runs if run.get('machine', machine()) == where)})"
            for where in dict.fromkeys(run.get("machine", machine()) for run in runs)
        )
        + "  ",
        f"Training: `symbolinv train --preset {{prop,ltl}}-small` (the steps in the table, batch {BATCH}, the "
        "package's default recipe), baselines with `--embedding-type fixed|alpha_renaming` (the same architecture with "
        f"per-stream attention only). Test: beam {args.beam}, the first answer judged by the checker; 1-3 symbols: "
        f"the first {args.test_samples} rows of the test split; 4-8 symbols: the first {args.test_samples} rows with "
        "4 or more symbols of `*-small-8sym` (never seen in training). Alpha-covariance on 50 inputs per count.",
        "",
        "| task | model | parameters | steps | train min | 1-3 sym correct | 1-3 exact | 4-8 sym correct "
        "| 4-8 exact | alpha-cov 3 / 4 / 5 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        low, high = run["1-3 symbols"], run["4-8 symbols"]
        alpha = {**low["alpha_covariance"], **high["alpha_covariance"]}
        lines.append(
            f"| {run['task']} | {run['how']} | {run['parameters']:,} | {run_steps(run, args.steps):,} | "
            f"{minutes(run['train_minutes'])} | "
            f"{pct(low['correct'])} | {pct(low['exact'])} | {pct(high['correct'])} | {pct(high['exact'])} | "
            + " / ".join(pct(alpha.get(k, alpha.get(str(k)))) for k in (3, 4, 5))
            + " |"
        )
    return "\n".join(lines) + "\n"


def curves_markdown(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# LTL learning curves at equal size and budget",
        "",
        f"Command: `{args.command}`  ",
        f"Machine: {machine()}  ",
        "Data: `ltl-small` (80,000 training formulas of at most 20 nodes over at most 3 symbols). Every model "
        f"d_model 64, 2 + 2 layers, {args.curve_steps} steps of batch {BATCH}, lr 1e-3, "
        f"{default_warmup_steps(args.curve_steps)} warm-up steps; validation loss and greedy "
        f"correct on {EVAL_SAMPLES} validation formulas every {CURVE_EVAL_EVERY} steps (`curves.png`).",
        "",
        "| run | what | validation correct by step | last validation loss |",
        "|---|---|---|---|",
    ]
    for run in runs:
        c = run["curve"]
        points = ", ".join(f"{s}: {pct(v)}" for s, v in zip(c["step"], c["eval_correct"]))
        last = f"{c['eval_loss'][-1]:.3f}" if c["eval_loss"] else "-"
        lines.append(f"| {run['name']} | {run['how']} | {points} | {last} |")
    return "\n".join(lines) + "\n"


def plot(runs: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (loss_axis, correct_axis) = plt.subplots(1, 2, figsize=(11, 4))
    for run in runs:
        c = run["curve"]
        loss_axis.plot(c["step"], c["eval_loss"], marker="o", label=run["name"])
        correct_axis.plot(c["step"], [100 * (v or 0) for v in c["eval_correct"]], marker="o", label=run["name"])
    loss_axis.set(xlabel="step", ylabel="validation loss", title=title)
    correct_axis.set(xlabel="step", ylabel="validation correct (%, greedy)", ylim=(0, 100))
    correct_axis.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.png")
    figure.savefig(temporary, dpi=110)
    os.replace(temporary, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", choices=["small", "curves"])
    parser.add_argument("--out", type=Path, help="small, curves: the results folder")
    parser.add_argument("--data-dir", type=Path, help="small, curves: where the datasets are (built when missing)")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--beam", type=int, default=3)
    parser.add_argument("--test-samples", type=int, default=1000)
    parser.add_argument("--curve-steps", type=int, default=CURVE_STEPS, help="curves: steps per run")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=[], metavar="RUN", help="train and evaluate these runs only")
    parser.add_argument("--collect", action="store_true", help="write the results of the finished runs only")
    args = parser.parse_args()
    args.command = "python " + " ".join(sys.argv)
    quiet_off_terminal()  # as symbolinv does: no progress bars in a log
    torch.set_num_threads(args.threads)
    if args.out is None or args.data_dir is None:
        parser.error(f"{args.study} needs --out and --data-dir")
    table = SMALL_RUNS if args.study == "small" else CURVE_RUNS
    unknown = sorted(set(args.only) - set(table))
    if unknown:
        parser.error(f"unknown run(s) {', '.join(unknown)}; choose from {', '.join(table)}")
    others = sorted(p.name for p in (args.out / "runs").glob("*") if p.name not in table)
    if others:  # one study per folder: the other study's RESULTS.md would be replaced
        parser.error(f"{args.out} holds runs of another study ({', '.join(others)}); give {args.study} its own --out")
    run = run_small if args.study == "small" else run_curve
    if args.collect:  # the finished runs only: a table of what this machine had time for
        # A run this machine did not redo keeps its report from the results already there.
        written = args.out / "results.json"
        earlier = {run["name"]: run for run in json.loads(written.read_text())} if written.is_file() else {}
        reports = {name: args.out / "runs" / name / "report.json" for name in table}
        runs = [
            json.loads(report.read_text()) if report.is_file() else earlier[name]
            for name, report in reports.items()
            if report.is_file() or name in earlier
        ]
    else:
        runs = [run(args, name) for name in (args.only or table)]
    if args.only:
        return 0
    text = small_markdown(runs, args) if args.study == "small" else curves_markdown(runs, args)
    write_text_atomic(args.out / "RESULTS.md", text)
    write_text_atomic(args.out / "results.json", json.dumps(runs, indent=1, default=str))
    plot(
        runs, args.out / f"{args.study}.png", "ltl-small, 2 + 2 layers" if args.study == "curves" else "small formulas"
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
