"""CPU-scale experiments on the propositional task, run with the project's own commands.

``convert`` (paper §5.8, Table 4): train a fixed-embedding ``prop`` model on 5-symbol data, convert
it into a SIT (``symbolinv convert``), fine-tune it for one epoch of a fine-tuning set
(``symbolinv train --init-from --epochs 1``), and compare with a SIT of the same architecture trained
from scratch for the same total number of steps. The converted model before fine-tuning is
evaluated as well.

``aggregation``: ``prop-best`` with ``stream_aggregation="mean"`` against ``"complex"`` (the complex
multiset pooling), same data, seed and number of steps.

    python benchmarks/prop_experiments.py convert --out benchmarks/results/prop_experiments_convert
    python benchmarks/prop_experiments.py aggregation --out benchmarks/results/prop_experiments_aggregation

Every run is evaluated with beam search on 5-symbol and 10-symbol test sets (the checker judges the
first answer) and its report saved as ``runs/NAME/report.json``; a rerun skips finished runs and
resumes an interrupted training from its last checkpoint. ``RESULTS.md`` and ``results.json`` are
written at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.commands.common import field_value
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.routes import TrainArguments
from hf_symbolinv.routes import train as train_model
from hf_symbolinv.utils.files import write_text_atomic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from convert_and_finetune import convert_and_finetune  # noqa: E402

# Small evaluations during training: the reported figures come from the final evaluation.
TRAIN_OPTIONS = {"eval_samples": 16, "beam": 1, "seed": 0}


def build_data(data_dir: Path, train_samples: int, test_samples: int, seed: int = 0) -> tuple[dict, dict]:
    """The 5-symbol ``prop-35`` dataset (built, or reused, in ``data_dir``) and the two test sets."""
    five = dataset_builders.build(
        "prop-35", data_dir / "prop-35", BuildOptions(num_samples=train_samples, seed=seed, progress=False)
    )
    ten = dataset_builders.build(
        "prop-35-10sym",
        data_dir / "prop-35-10sym",
        BuildOptions(num_samples=test_samples * 10, seed=seed + 1, progress=False),
    )
    return five, {
        "5 symbols": five["test"].select(range(min(test_samples, len(five["test"])))),
        "10 symbols": ten["test"].select(range(min(test_samples, len(ten["test"])))),
    }


def evaluate_tests(model, tokenizer, tests: dict, beam: int) -> dict:
    """Correct / exact / invalid per test set, alpha-covariance for 3-5 symbols on the 5-symbol set."""
    results = {}
    for name, test in tests.items():
        try:
            report = evaluate_model(
                model,
                tokenizer,
                "prop",
                list(test["input"]),
                list(test["target"]),
                num_symbols=list(test["num_symbols"]),
                sizes=list(test["size"]),
                num_beams=beam,
                alpha_symbol_counts=(3, 4, 5) if name == "5 symbols" else (),
                alpha_samples=30,
                max_perm=24,
                progress=False,
            )
            results[name] = {
                "correct": report.correct,
                "exact": report.exact,
                "invalid": report.invalid,
                "alpha_covariance": report.alpha_covariance,
            }
        except ValueError as error:  # a fixed-embedding model has no rows beyond its training symbols
            results[name] = {"error": str(error).split(":")[0]}
    return results


def evaluate_saved(model_dir: Path, tests: dict, beam: int) -> dict:
    """:func:`evaluate_tests` of a saved model, with its parameter count."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return {"parameters": sum(p.numel() for p in model.parameters()), **evaluate_tests(model, tokenizer, tests, beam)}


def run_once(
    out: Path,
    name: str,
    make_model: Callable[[], Path],
    tests: dict,
    beam: int,
    note: str,
    evaluate: Callable[[Path], dict] | None = None,
) -> dict:
    """Train (or convert) one model unless its report exists, then evaluate it (``evaluate``, default
    :func:`evaluate_saved` on ``tests``); the report is cached."""
    report_file = out / "runs" / name / "report.json"
    if report_file.exists():
        return json.loads(report_file.read_text())
    start = time.perf_counter()
    model_dir = make_model()
    seconds = time.perf_counter() - start
    print(f"[{name}] trained/converted in {seconds / 60:.1f} min; evaluating", flush=True)
    scores = evaluate(model_dir) if evaluate is not None else evaluate_saved(model_dir, tests, beam)
    report = {"name": name, "how": note, "train_minutes": seconds / 60, **scores}
    write_text_atomic(report_file, json.dumps(report, indent=1, default=str))
    print(f"[{name}] {json.dumps(report, default=str)}", flush=True)
    return report


def train(
    out: Path, name: str, data: Path, steps: int, batch_size: int, *, settings: list[str], task: str = "prop", **options
) -> Path:
    """Train one model (``options``: :class:`~hf_symbolinv.routes.TrainArguments` fields, ``preset`` among them);
    ``settings`` (FIELD=VALUE, as ``--set`` takes them) are its config overrides."""
    overrides = dict(field_value(setting) for setting in settings)
    output = out / "runs" / name
    arguments = TrainArguments(
        task=task,
        data=data,
        output=output,
        steps=steps,
        batch_size=batch_size,
        overrides=overrides,
        **TRAIN_OPTIONS,
        **options,
    )
    train_model(arguments)
    return output / "model"


def experiment_convert(args: argparse.Namespace, tests: dict) -> tuple[list[dict], str]:
    out, data, batch = args.out, args.data_dir / "prop-35", args.batch_size
    finetune_steps = -(-args.finetune_samples // batch)
    runs = [
        run_once(
            out,
            "vanilla",
            lambda: train(
                out,
                "vanilla",
                data,
                args.steps,
                batch,
                preset="prop",
                embedding_type="fixed",
                settings=["num_symbol_embeddings=5", *args.overrides],
            ),
            tests,
            args.beam,
            f"fixed embeddings (5 symbol rows), {args.steps} steps",
        ),
        run_once(
            out,
            "converted",
            lambda: convert_and_finetune(
                out / "runs" / "vanilla" / "model",
                out / "runs" / "converted",
                data,
                "prop",
                epochs=1.0,
                batch_size=batch,
                max_train_samples=args.finetune_samples,
                **TRAIN_OPTIONS,
            ),
            tests,
            args.beam,
            f"vanilla converted, then 1 epoch of {args.finetune_samples:,} samples ({finetune_steps} steps)",
        ),
        run_once(
            out,
            "converted-no-finetune",
            lambda: out / "runs" / "converted" / "converted",
            tests,
            args.beam,
            "vanilla converted, no fine-tuning",
        ),
        run_once(
            out,
            "scratch",
            lambda: train(
                out, "scratch", data, args.steps + finetune_steps, batch, preset="prop", settings=args.overrides
            ),
            tests,
            args.beam,
            f"SIT from scratch, {args.steps + finetune_steps} steps",
        ),
    ]
    title = "Converting a vanilla checkpoint and fine-tuning it (paper §5.8, Table 4), CPU scale"
    return runs, title


def experiment_aggregation(args: argparse.Namespace, tests: dict) -> tuple[list[dict], str]:
    out, data, batch = args.out, args.data_dir / "prop-35", args.batch_size
    chosen = [name for name in ("mean", "complex") if not args.only or name in args.only]
    runs = [
        run_once(
            out,
            aggregation,
            lambda aggregation=aggregation: train(
                out,
                aggregation,
                data,
                args.steps,
                batch,
                preset="prop-best",
                settings=[f"stream_aggregation={aggregation}", *args.overrides],
            ),
            tests,
            args.beam,
            f"prop-best, stream_aggregation={aggregation}, {args.steps} steps",
        )
        for aggregation in chosen
    ]
    return runs, "prop-best: mean against complex stream aggregation, CPU scale"


def cell(entry: dict, key: str) -> str:
    return "cannot run" if "error" in entry else f"{100 * entry[key]:.2f}%"


def markdown(title: str, runs: list[dict], args: argparse.Namespace, machine: str, minutes: float) -> str:
    lines = [
        f"# {title}",
        "",
        f"Command: `{args.command}`  ",
        f"Machine: {machine}  ",
        f"Data: 5-symbol `prop-35` training split; test: first {args.test_samples} samples of the 5-symbol and of "
        f"the 10-symbol test sets; beam search ({args.beam}), first answer judged by the checker. Training: "
        f"`symbolinv train` (AdamW lr 1e-3, weight decay 0.1, cosine schedule, 5% warm-up), batch "
        f"{args.batch_size}, seed 0. Wall time {minutes:.1f} min."
        + (f" Config overrides for every model: `{' '.join(args.overrides)}`." if args.overrides else ""),
        "",
        "| model | how | parameters | train min | 5 sym correct | 5 sym exact | 10 sym correct | 10 sym exact "
        "| alpha-cov 3/4/5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        five, ten = run["5 symbols"], run["10 symbols"]
        alpha = five.get("alpha_covariance", {})
        alpha_text = " / ".join(f"{100 * alpha[k]:.1f}" for k in sorted(alpha)) or "-"
        lines.append(
            f"| {run['name']} | {run['how']} | {run['parameters']:,} | {run['train_minutes']:.1f} | "
            f"{cell(five, 'correct')} | {cell(five, 'exact')} | {cell(ten, 'correct')} | "
            f"{cell(ten, 'exact')} | {alpha_text} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=["convert", "aggregation"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("benchmarks/results/replicate_prop/data"),
        help="where the prop-35 datasets are (built there when missing)",
    )
    parser.add_argument("--train-samples", type=int, default=50_000)
    parser.add_argument("--test-samples", type=int, default=200)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="convert: vanilla pre-training steps (default 600); aggregation: steps per model (default 400)",
    )
    parser.add_argument(
        "--finetune-samples",
        type=int,
        default=6400,
        help="convert: the fine-tuning epoch covers the first N training samples",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--beam", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        metavar="RUN",
        help="aggregation: run only these of mean / complex (run them as parallel processes; a last "
        "invocation without --only collects both)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="config overrides for every trained model, e.g. d_model=64 encoder_layers=3 (a smaller "
        "model that gets further in the same CPU time)",
    )
    args = parser.parse_args()
    args.steps = args.steps or (600 if args.experiment == "convert" else 400)
    args.command = "python " + " ".join(sys.argv)
    torch.set_num_threads(args.threads)
    started = time.time()
    _, tests = build_data(args.data_dir, args.train_samples, args.test_samples)
    experiment = experiment_convert if args.experiment == "convert" else experiment_aggregation
    runs, title = experiment(args, tests)
    minutes = (time.time() - started) / 60
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    results = {
        "experiment": args.experiment,
        "command": args.command,
        "machine": machine,
        "wall_minutes_this_invocation": minutes,
        "runs": runs,
    }
    write_text_atomic(args.out / "results.json", json.dumps(results, indent=1, default=str))
    write_text_atomic(args.out / "RESULTS.md", markdown(title, runs, args, machine, minutes))
    print(markdown(title, runs, args, machine, minutes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
