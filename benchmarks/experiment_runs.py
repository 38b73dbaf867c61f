"""The skeleton shared by the train / evaluate / collect / ship benchmark scripts (``clutrr_experiments.py``,
``dtm_trees.py``): each run is one ``symbolinv train`` subprocess writing ``OUT/runs/NAME-sSEED``, evaluated into its
``report.json``; ``collect`` writes ``RESULTS.md`` and ``results.json`` beside the runs.

Not a script: the scripts import it as a sibling module (they run as ``python benchmarks/NAME.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def train_command(
    task: str,
    start: Sequence[str],
    name: str,
    seed: int,
    data: Path,
    out: Path,
    steps: int,
    minutes: float,
    batch_size: int,
    eval_samples: int,
) -> list[str]:
    """The ``symbolinv train`` command line of run ``NAME-sSEED``; ``start`` says what it starts from (``--preset``
    with its ``--set`` settings, or ``--init-from``)."""
    return [
        sys.executable,
        "-m",
        "hf_symbolinv.commands",
        "train",
        "--task",
        task,
        *start,
        "--data",
        str(data),
        "--output",
        str(out / "runs" / f"{name}-s{seed}"),
        "--steps",
        str(steps),
        "--batch-size",
        str(batch_size),
        "--eval-samples",
        str(eval_samples),
        "--seed",
        str(seed),
        "--time-limit",
        f"{minutes:g}",
    ]


def run_training(command: list[str]) -> None:
    """Run one training command with one thread and this checkout's package; exit with its status."""
    print(" ".join(command), flush=True)
    # This checkout first, then whatever the caller had on the path (packages installed to an extra folder).
    path = os.pathsep.join(part for part in (str(REPO), os.environ.get("PYTHONPATH", "")) if part)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    raise SystemExit(subprocess.call(command, env=env, cwd=REPO))


def runs_to_evaluate(out: Path, again: bool, only: Sequence[str] | None = None) -> Iterator[Path]:
    """The finished runs under ``out/runs`` without a report (every finished run with ``again``), only those named
    in ``only`` when given; announces each."""
    for run in sorted((out / "runs").glob("*-s*")):
        if not (run / "model" / "config.json").is_file() or ((run / "report.json").is_file() and not again):
            continue
        if only and run.name not in only:
            continue
        print(f"evaluating {run.name}", flush=True)
        yield run


def write_report(run: Path, report: dict) -> None:
    """Write a run's ``report.json`` atomically."""
    from hf_symbolinv.utils.files import write_text_atomic

    write_text_atomic(run / "report.json", json.dumps(report, indent=1))


def read_reports(out: Path) -> dict[str, dict[int, dict]]:
    """Every run's report, by model name then seed: those recorded in ``out/results.json`` (run folders are not kept
    under version control, so a new checkout has none), replaced by the run folders' own where present."""
    reports: dict[str, dict[int, dict]] = {}
    recorded = out / "results.json"
    if recorded.is_file():
        for model, seeds in json.loads(recorded.read_text()).get("runs", {}).items():
            reports[model] = {int(seed): report for seed, report in seeds.items()}
    for path in sorted((out / "runs").glob("*-s*/report.json")):
        model, seed = path.parent.name.rsplit("-s", 1)
        reports.setdefault(model, {})[int(seed)] = json.loads(path.read_text())
    return reports


def last_trainer_state(checkpoints: Path) -> dict | None:
    """The ``trainer_state.json`` of a run's last checkpoint (by step: ``checkpoint-1000`` after ``checkpoint-750``),
    or None where there is none."""
    from hf_symbolinv.training.checkpoints import checkpoint_step

    states = sorted(checkpoints.glob("checkpoint-*/trainer_state.json"), key=lambda path: checkpoint_step(path.parent))
    return json.loads(states[-1].read_text()) if states else None


def read_finished_run(out: Path, run_name: str) -> tuple[Path, dict, str, str]:
    """A finished run ``NAME-sSEED``: its folder, its report, its model name and its seed."""
    run = out / "runs" / run_name
    model_name, seed = run_name.rsplit("-s", 1)
    return run, json.loads((run / "report.json").read_text()), model_name, seed


def machine_line() -> str:
    """This machine, as the results files name it."""
    from hf_symbolinv.utils.machine import processor_name

    return f"{platform.machine()} {processor_name()}, {os.cpu_count()} cores shared with other jobs, one thread per run"


def mean_cell(values: list[float]) -> str:
    """Accuracies as a table cell in %: the mean, ± the standard deviation over several seeds; ``-`` for none."""
    if not values:
        return "-"
    mean = 100 * statistics.fmean(values)
    return f"{mean:.1f}" if len(values) == 1 else f"{mean:.1f} ± {100 * statistics.stdev(values):.1f}"


def write_results(out: Path, lines: list[str], results: dict) -> None:
    """Write ``results.json`` and ``RESULTS.md`` (the lines, then ``NOTES.md`` when there is one), print the latter."""
    from hf_symbolinv.utils.files import write_text_atomic

    write_text_atomic(out / "results.json", json.dumps(results, indent=1) + "\n")
    notes = out / "NOTES.md"
    text = "\n".join(lines) + "\n" + (("\n" + notes.read_text()) if notes.is_file() else "")
    write_text_atomic(out / "RESULTS.md", text)
    print(text)


Handler = Callable[[argparse.Namespace], None]


def experiment_parser(
    description: str,
    data: Path,
    out: Path,
    run_names: Sequence[str],
    handlers: tuple[Handler, Handler, Handler, Handler],
    steps: int,
    minutes: float,
    destination: Path,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The scripts' command line: ``train NAME``, ``evaluate``, ``collect``, ``ship NAME-sSEED`` with the handlers
    (train, evaluate, collect, ship) in that order; returns the parser and its sub-parsers by action, for a script's
    own options."""
    train, evaluate, collect, ship = handlers
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=data)
    parser.add_argument("--out", type=Path, default=out)
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("train")
    run.add_argument("name", choices=sorted(run_names))
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--steps", type=int, default=steps)
    run.add_argument("--time-limit", type=float, default=minutes, help="minutes (the run continues when started again)")
    run.set_defaults(handler=train)
    again = actions.add_parser("evaluate")
    again.add_argument("--again", action="store_true", help="re-evaluate runs that already have a report")
    again.set_defaults(handler=evaluate)
    actions.add_parser("collect").set_defaults(handler=collect)
    shipping = actions.add_parser("ship")
    shipping.add_argument("run", help="a finished run, NAME-sSEED")
    shipping.add_argument("--destination", type=Path, default=destination)
    shipping.set_defaults(handler=ship)
    return parser, {"train": run, "evaluate": again, "ship": shipping}


def parse_and_run(parser: argparse.ArgumentParser, data_name: str) -> None:
    """Parse the command line, refuse a missing ``--data`` folder in one line, run the action's handler."""
    args = parser.parse_args()
    if not args.data.is_dir():
        parser.error(f"--data {args.data}: no such folder (the released {data_name} data is not part of the package)")
    args.handler(args)
