"""Tasks 1 and 2 of the multiset-automata paper (§5) at CPU scale: DeepSets against complex DeepSets.

Both models read a multiset of digits 1-9 and are trained, with mean squared error, to output either
the sum of the digits (task ``sum``) or the units digit of that sum (task ``units``). The training sets
have 1 to 50 elements; the test sets have 5, 10, ..., 95, so most test sizes are larger than any
training set. A prediction is correct when it rounds to the target. The paper's finding: both models
get the sum right at every size; only the complex model gets the units digit (DeepSets stays at
chance, about 10%), because a product of rotations wraps around and a real sum does not.

    python examples/multiset_digits.py --out benchmarks/results/multiset_digits

writes ``results.json``, ``RESULTS.md`` and ``accuracy.png`` (accuracy against test size, as the
paper's Fig. 3) into ``--out``. Every finished (task, model) run is kept in ``--out/runs/`` together
with the training state of the current one (after every epoch), so rerunning the same command after
an interruption resumes where it stopped and skips the finished runs; ``--quick`` is a seconds-long
run for tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from hf_symbolinv.models.symbolinv.pooling import complex_multiset_pool
from hf_symbolinv.utils.files import write_atomic, write_text_atomic

# The digit tasks of §5 (sum of a multiset of digits; units digit of that sum). Both models take a padded
# ``(batch, max_set_size)`` LongTensor of digits with 0 as padding. The embeddings have 11 rows (row 0
# belongs to the padding, which is masked out, and row 10 is never used): that is what gives the paper's
# parameter counts, 4,161 and 1,801.
DIGIT_EMBEDDINGS = 11
MAX_DIGIT = 9


def check_digits(digits: torch.Tensor) -> torch.Tensor:
    """Validate a padded ``(batch, max_set_size)`` tensor of digits 0..9 (0 = padding); return it as long.

    Raises ValueError naming the shape, dtype, or first offending value and its ``[set, position]``.
    """
    if not isinstance(digits, torch.Tensor):
        raise ValueError(f"digits must be a torch.Tensor, got {type(digits).__name__}")
    if digits.dim() != 2:
        raise ValueError(f"digits must have shape (batch, max_set_size); got shape {tuple(digits.shape)}")
    if digits.dtype.is_floating_point or digits.dtype.is_complex or digits.dtype == torch.bool:
        raise ValueError(f"digits must be an integer tensor; got dtype {digits.dtype}")
    bad = (digits < 0) | (digits > MAX_DIGIT)
    if bad.any():
        row, column = (int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"digits must be 1..{MAX_DIGIT} (0 = padding); got {int(digits[row, column])} at set {row}, "
            f"position {column}"
        )
    return digits.long()


class DeepSets(nn.Module):
    """The DeepSets digit-sum baseline (Zaheer et al. 2017) as the paper ran it: a real sum over the set.

    Embedding(11, 100) -> Linear(100, 30) + tanh per element -> sum over the present elements ->
    Linear(30, 1). The sum makes it order invariant and lets it count exactly (it extrapolates the sum of
    digits to larger sets), but a linear map of a real sum cannot wrap around, so it cannot learn the
    units digit of the sum. 4,161 parameters.
    """

    def __init__(self, embedding_dim: int = 100, hidden_dim: int = 30) -> None:
        super().__init__()
        self.embedding = nn.Embedding(DIGIT_EMBEDDINGS, embedding_dim)
        self.hidden = nn.Linear(embedding_dim, hidden_dim)
        self.output = nn.Linear(hidden_dim, 1)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        """``(batch, max_set_size)`` digits (0 = padding) -> ``(batch,)`` predictions."""
        digits = check_digits(digits)
        # An element's features depend on its digit alone: compute them once per embedding row and look
        # them up, the same function as embedding every element but several times cheaper to train.
        features = nn.functional.embedding(digits, torch.tanh(self.hidden(self.embedding.weight)))
        # Mask rather than trust a zero padding row: tanh(bias) of a padding element is not zero.
        present = (digits != 0).unsqueeze(-1).to(features.dtype)
        return self.output((features * present).sum(dim=1)).squeeze(-1)


class ComplexDeepSets(nn.Module):
    """Complex DeepSets (the paper's §5): a diagonal complex multiset automaton with ``num_states`` states.

    Each digit has, per state, a log-magnitude ``r`` and a pair ``(a, b)`` whose direction is its unit
    complex weight (angle ``atan2(b, a)``): three Embedding(11, 50). The weights are multiplied over the
    set (``Σ r``, ``cos Σ θ``, ``sin Σ θ`` through :func:`complex_multiset_pool`, sums rather than means so
    that the size counts), and Linear(150, 1) reads the result. Rotations wrap around, so the model can
    count modulo 10 and get the units digit of the sum right at any set size. 1,801 parameters.

    ``r``, ``a`` and ``b`` start from N(0, ``init_std``²) rather than the embeddings' N(0, 1). A small
    ``(a, b)`` makes each optimizer step turn the angle further (by about step / |(a, b)|), which is what
    lets the states find the rotations by multiples of 2π/10 (the pair grows as training goes on, so the
    turns get finer by themselves); a small ``r`` keeps ``Σ r`` of a 50-digit set from swamping the
    output at the start. Trained on the units digit as in ``examples/multiset_digits.py`` (at most 30
    epochs), 11 of 16 seeds stalled short of 100% from N(0, 1), 3 of 16 from N(0, 0.1²).
    """

    def __init__(self, num_states: int = 50, init_std: float = 0.1) -> None:
        super().__init__()
        self.log_magnitude = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.real = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.imaginary = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.output = nn.Linear(3 * num_states, 1)
        for embedding in (self.log_magnitude, self.real, self.imaginary):
            nn.init.normal_(embedding.weight, std=init_std)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        """``(batch, max_set_size)`` digits (0 = padding) -> ``(batch,)`` predictions."""
        digits = check_digits(digits)
        batch, size = digits.shape
        flat = digits.reshape(-1)
        # Only the direction of (a, b) matters, so the angle is all the pooling needs; computed once per
        # embedding row and looked up, as it depends on the digit alone.
        angles = nn.functional.embedding(flat, torch.atan2(self.imaginary.weight, self.real.weight))
        set_of_element = torch.arange(batch, device=digits.device).repeat_interleave(size)
        pooled = complex_multiset_pool(
            self.log_magnitude(flat), angles, set_of_element, batch, present=flat != 0, mean=False
        )
        return self.output(pooled).squeeze(-1)


TASKS = {"sum": "task 1: sum of the digits", "units": "task 2: units digit of the sum"}
MODELS: dict[str, tuple[str, type[nn.Module]]] = {
    "deepsets": ("DeepSets", DeepSets),
    "complex": ("Complex DeepSets", ComplexDeepSets),
}
PAPER_PARAMETERS = {"deepsets": 4161, "complex": 1801}
# Defaults follow the paper's data (100k sets of 1-50 digits, 99/1 train/dev, tests of 5..95) and its
# schedule (lr ×0.5 after 2 epochs without a better dev loss, early stopping after 10); at most 50 epochs
# keeps the whole run within a few CPU minutes. Adam's lr is 1e-2: at 1e-3 the complex model gets the
# units digit right up to 65 digits but not from 70 on (seed 0, 50 epochs; from the embeddings' default
# N(0, 1) start it stays near chance). ``--quick`` shrinks everything for tests.
FULL = dict(
    train_sets=100_000,
    max_train_size=50,
    dev_fraction=0.01,
    test_sizes=list(range(5, 100, 5)),
    test_sets=1000,
    batch_size=128,
    lr=1e-2,
    lr_patience=2,
    patience=10,
    max_epochs=50,
    bucket=True,
)
QUICK = dict(
    train_sets=4000,
    max_train_size=10,
    dev_fraction=0.05,
    test_sizes=[5, 10, 20],
    test_sets=200,
    batch_size=64,
    lr=1e-2,
    lr_patience=2,
    patience=3,
    max_epochs=3,
    bucket=True,
)
# RESULTS.md is rewritten on every run, except a section under this heading, written by hand.
NOTES_HEADING = "## Notes (by hand)"
# The settings a finished or half-finished run depends on; a rerun must match them to reuse it.
RESULT_SETTINGS = ("seed", *FULL)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for results.json, RESULTS.md, the plot and runs/")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--quick", action="store_true", help="a tiny run (small data, 3 epochs) for tests")
    parser.add_argument("--train-sets", type=int, help=f"training + dev sets (default {FULL['train_sets']:,})")
    parser.add_argument(
        "--max-train-size", type=int, help=f"training sets have 1..N digits (default {FULL['max_train_size']})"
    )
    parser.add_argument("--dev-fraction", type=float, help=f"default {FULL['dev_fraction']}")
    parser.add_argument("--test-sizes", type=int, nargs="+", help="set sizes to test (default 5 10 ... 95)")
    parser.add_argument("--test-sets", type=int, help=f"test sets per size (default {FULL['test_sets']})")
    parser.add_argument("--batch-size", type=int, help=f"default {FULL['batch_size']}")
    parser.add_argument("--lr", type=float, help=f"Adam learning rate (default {FULL['lr']})")
    parser.add_argument(
        "--lr-patience",
        type=int,
        help=f"halve the learning rate after N epochs without a better dev loss (default {FULL['lr_patience']})",
    )
    parser.add_argument(
        "--patience", type=int, help=f"stop after N epochs without a better dev loss (default {FULL['patience']})"
    )
    parser.add_argument("--max-epochs", type=int, help=f"default {FULL['max_epochs']}")
    parser.add_argument(
        "--bucket",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="batch sets of similar size together (faster)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1: these models are too small to gain from more)"
    )
    parser.add_argument(
        "--plot", action=argparse.BooleanOptionalAction, default=True, help="write accuracy.png (needs matplotlib)"
    )
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="tqdm bars")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    problems = [
        f"--{name.replace('_', '-')} must be positive"
        for name in ("train_sets", "max_train_size", "test_sets", "batch_size", "max_epochs", "patience", "lr_patience")
        if getattr(args, name) < 1
    ]
    if not 0 < args.dev_fraction < 1:
        problems.append("--dev-fraction must be between 0 and 1")
    elif max(1, round(args.train_sets * args.dev_fraction)) >= args.train_sets:
        problems.append("--train-sets is too small to split into training and dev sets")
    if min(args.test_sizes) < 1:
        problems.append("--test-sizes must be positive")
    if args.lr <= 0:
        problems.append("--lr must be positive")
    if problems:
        parser.error("; ".join(problems))
    return args


# ---------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------
def random_multisets(
    count: int,
    min_size: int,
    max_size: int,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` multisets of digits 1-9 with sizes uniform in ``min_size..max_size``: a padded
    ``(count, max_size)`` tensor (0 = padding) and the sizes."""
    sizes = torch.randint(min_size, max_size + 1, (count,), generator=generator)
    digits = torch.randint(1, 10, (count, max_size), generator=generator)
    digits[torch.arange(max_size) >= sizes[:, None]] = 0
    return digits, sizes


def task_targets(digits: torch.Tensor, task: str) -> torch.Tensor:
    total = digits.sum(dim=1)
    return (total if task == "sum" else total % 10).float()


def make_data(args: argparse.Namespace) -> dict[str, Any]:
    """Training and dev sets (one draw split 99/1) and one test set per size, from the seed alone."""
    digits, sizes = random_multisets(args.train_sets, 1, args.max_train_size, torch.Generator().manual_seed(args.seed))
    dev_count = max(1, round(args.train_sets * args.dev_fraction))
    test_generator = torch.Generator().manual_seed(run_seed(args.seed, "test"))  # not another seed's training draw
    tests = {size: random_multisets(args.test_sets, size, size, test_generator)[0] for size in args.test_sizes}
    return {"train": (digits[:-dev_count], sizes[:-dev_count]), "dev": digits[-dev_count:], "test": tests}


def size_bucketed_batches(sizes: torch.Tensor, batch_size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Index batches of sets of about the same size, in random order.

    Each batch is then cut to its largest set; a random batch almost always holds a 50-digit set, so
    bucketing halves the work (the mean size is 25.5) without changing what an epoch sees.
    """
    shuffled = torch.randperm(len(sizes), generator=generator)
    by_size = shuffled[torch.sort(sizes[shuffled], stable=True).indices]  # random order within a size
    batches = by_size.split(batch_size)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator)]


# ---------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------
def run_seed(seed: int, *parts: object) -> int:
    """A seed for one run (and epoch) that does not depend on which runs went before: resuming or
    running a subset of the tasks and models gives the same numbers."""
    return zlib.crc32("/".join(map(str, (seed, *parts))).encode())


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def predict(model: nn.Module, digits: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return torch.cat([model(chunk) for chunk in digits.split(batch_size)])


def accuracy(model: nn.Module, digits: torch.Tensor, task: str) -> float:
    return (predict(model, digits).round() == task_targets(digits, task)).float().mean().item()


def train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: dict[str, Any],
    task: str,
    batch_size: int,
    generator: torch.Generator,
    progress: bool,
    description: str,
    bucket: bool = True,
) -> float:
    """One pass over the training sets; returns the mean training loss."""
    digits, sizes = data["train"]
    targets = task_targets(digits, task)
    model.train()
    total, count = 0.0, 0
    if bucket:
        batches = size_bucketed_batches(sizes, batch_size, generator)
    else:
        batches = torch.randperm(len(sizes), generator=generator).split(batch_size)
    for batch in tqdm(batches, desc=description, leave=False, disable=not progress, mininterval=0.5):
        longest = int(sizes[batch].max())
        loss = F.mse_loss(model(digits[batch, :longest]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(batch)
        count += len(batch)
    return total / count


def fresh_state(args: argparse.Namespace, task: str, model_key: str, settings: dict) -> dict[str, Any]:
    torch.manual_seed(run_seed(args.seed, task, model_key))
    model = MODELS[model_key][1]()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    return {
        "settings": settings,
        "epoch": 0,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "best_model": model.state_dict(),
        "best_dev_loss": float("inf"),
        "best_epoch": 0,
        "epochs_since_best": 0,
        "epochs_since_decay": 0,
        "history": [],
        "train_seconds": 0.0,
    }


def train_run(
    args: argparse.Namespace, task: str, model_key: str, data: dict[str, Any], state_path: Path, settings: dict
) -> tuple[nn.Module, dict[str, Any]]:
    """Train one model on one task to early stopping, resuming from ``state_path`` if it is there.

    The learning rate halves after ``lr_patience`` epochs without a better dev loss (counted again from
    each decay, as Keras's ReduceLROnPlateau); training stops after ``patience`` epochs without one, or
    at ``max_epochs``. Returns the weights with the best dev loss, and the training record.
    """
    if state_path.exists():
        state = torch.load(state_path, weights_only=True)
        check_settings(state["settings"], settings, state_path)
        print(f"  resuming after epoch {state['epoch']}", flush=True)
    else:
        state = fresh_state(args, task, model_key, settings)
    model = MODELS[model_key][1]()
    model.load_state_dict(state["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    optimizer.load_state_dict(state["optimizer"])
    dev_digits = data["dev"]
    dev_targets = task_targets(dev_digits, task)

    epochs = tqdm(
        total=args.max_epochs,
        initial=state["epoch"],
        desc=f"{task} {model_key}",
        unit="epoch",
        disable=not args.progress,
    )
    while state["epoch"] < args.max_epochs and state["epochs_since_best"] < args.patience:
        started = time.perf_counter()
        epoch = state["epoch"] + 1
        generator = torch.Generator().manual_seed(run_seed(args.seed, task, model_key, epoch))
        train_loss = train_epoch(
            model, optimizer, data, task, args.batch_size, generator, args.progress, f"epoch {epoch}", args.bucket
        )
        dev_loss = F.mse_loss(predict(model, dev_digits), dev_targets).item()
        learning_rate = optimizer.param_groups[0]["lr"]
        if dev_loss < state["best_dev_loss"]:
            state.update(
                best_dev_loss=dev_loss,
                best_epoch=epoch,
                epochs_since_best=0,
                epochs_since_decay=0,
                best_model={k: v.clone() for k, v in model.state_dict().items()},
            )
        else:
            state["epochs_since_best"] += 1
            state["epochs_since_decay"] += 1
            if state["epochs_since_decay"] >= args.lr_patience:
                for group in optimizer.param_groups:
                    group["lr"] *= 0.5
                state["epochs_since_decay"] = 0
        state["history"].append({"epoch": epoch, "train_loss": train_loss, "dev_loss": dev_loss, "lr": learning_rate})
        state.update(
            epoch=epoch,
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
            train_seconds=state["train_seconds"] + time.perf_counter() - started,
        )
        write_atomic(state_path, lambda temporary: torch.save(state, temporary))
        epochs.update()
        epochs.set_postfix(dev=f"{dev_loss:.3g}", best=f"{state['best_dev_loss']:.3g}", lr=f"{learning_rate:.2g}")
    epochs.close()
    model.load_state_dict(state["best_model"])
    record = {key: state[key] for key in ("epoch", "best_epoch", "best_dev_loss", "train_seconds", "history")}
    record["stopped_early"] = state["epochs_since_best"] >= args.patience
    return model, record


def check_settings(found: dict, wanted: dict, path: Path) -> None:
    if found != wanted:
        differences = ", ".join(
            f"{key}: {found.get(key)!r} there, {wanted.get(key)!r} now"
            for key in sorted(set(found) | set(wanted))
            if found.get(key) != wanted.get(key)
        )
        raise SystemExit(
            f"{path} was made with other settings ({differences}); use another --out, or delete "
            f"that file to start this run again"
        )


def run_one(
    args: argparse.Namespace, task: str, model_key: str, data: dict[str, Any], runs: Path, settings: dict
) -> dict[str, Any]:
    """The result of one (task, model) run: reused from ``runs/`` when finished before, else trained."""
    result_path = runs / f"{task}-{model_key}.json"
    if result_path.exists():
        result = json.loads(result_path.read_text(encoding="utf-8"))
        check_settings(result["settings"], settings, result_path)
        print(f"{task} / {MODELS[model_key][0]}: finished before, reusing {result_path.name}", flush=True)
        return result
    print(f"{task} / {MODELS[model_key][0]}: training", flush=True)
    state_path = runs / f"{task}-{model_key}.state.pt"
    model, record = train_run(args, task, model_key, data, state_path, settings)
    started = time.perf_counter()
    accuracies = {str(size): accuracy(model, digits, task) for size, digits in data["test"].items()}
    result = {
        "task": task,
        "model": model_key,
        "name": MODELS[model_key][0],
        "parameters": parameter_count(model),
        "accuracy": accuracies,
        "min_accuracy": min(accuracies.values()),
        "eval_seconds": time.perf_counter() - started,
        **record,
        "settings": settings,
    }
    write_atomic(runs / f"{task}-{model_key}.weights.pt", lambda temporary: torch.save(model.state_dict(), temporary))
    write_text_atomic(result_path, json.dumps(result, indent=1))
    state_path.unlink(missing_ok=True)  # the result (and the best weights) replace the training state
    print(
        f"  {record['epoch']} epochs (best {record['best_epoch']}, dev MSE {record['best_dev_loss']:.3g}); "
        f"test accuracy min {100 * result['min_accuracy']:.1f}% over sizes "
        f"{min(data['test'])}-{max(data['test'])}",
        flush=True,
    )
    return result


# ---------------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------------
def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def markdown_report(report: dict[str, Any]) -> str:
    settings, runs = report["settings"], report["runs"]
    lines = [
        "# Multiset digit tasks (multiset-automata paper, §5, tasks 1 and 2), CPU scale",
        "",
        f"Command: `{report['command']}`  ",
        f"Machine: {report['machine']}  ",
        f"Wall time: {report['wall_seconds']:.0f} s for the whole command (Python's start-up and imports not "
        f"counted)"
        + (f" (runs reused from an earlier invocation: {', '.join(report['reused'])})" if report["reused"] else "")
        + "  ",
        f"Data: {settings['train_sets']:,} random multisets of digits 1-9 with 1-{settings['max_train_size']} "
        f"elements (uniform), split {100 * (1 - settings['dev_fraction']):.0f}/{100 * settings['dev_fraction']:.0f} "
        f"train/dev; {settings['test_sets']:,} test sets per size; seed {settings['seed']}.  ",
        f"Training: MSE, Adam lr {settings['lr']:g}, batch {settings['batch_size']} (sets of similar size "
        f"batched together), lr ×0.5 after {settings['lr_patience']} epochs without a better dev loss, early "
        f"stopping after {settings['patience']}, at most {settings['max_epochs']} epochs; the weights with "
        f"the best dev loss are tested. Correct = prediction rounded to the nearest integer equals the target.",
        "",
        "| model | parameters | paper |",
        "|---|---|---|",
    ]
    counts = {run["model"]: run["parameters"] for run in runs}
    lines += [f"| {MODELS[key][0]} | {counts[key]:,} | {PAPER_PARAMETERS[key]:,} |" for key in MODELS if key in counts]
    lines += [
        "",
        "| task | model | epochs (best) | best dev MSE | train s | min accuracy | mean accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        values = list(run["accuracy"].values())
        lines.append(
            f"| {run['task']} | {run['name']} | {run['epoch']} ({run['best_epoch']}) | "
            f"{run['best_dev_loss']:.3g} | {run['train_seconds']:.0f} | {percent(min(values))} | "
            f"{percent(sum(values) / len(values))} |"
        )
    for task in TASKS:
        task_runs = [run for run in runs if run["task"] == task]
        if not task_runs:
            continue
        lines += [
            "",
            f"## Accuracy per test size, {TASKS[task]}",
            "",
            "| test size | " + " | ".join(run["name"] for run in task_runs) + " |",
            "|---|" + "---|" * len(task_runs),
        ]
        for size in task_runs[0]["accuracy"]:
            lines.append(f"| {size} | " + " | ".join(percent(run["accuracy"][size]) for run in task_runs) + " |")
    lines += [
        "",
        "Paper (Fig. 3): on the sum, DeepSets and the complex model are at 100% at every test size; on "
        "the units digit, the complex model is at 100% at every size and DeepSets at chance (about 10%).",
        "",
    ]
    return "\n".join(lines)


def plot_accuracy(report: dict[str, Any], path: Path) -> None:
    """Accuracy against test size, one panel per task, as the paper's Fig. 3."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in TASKS if any(run["task"] == task for run in report["runs"])]
    figure, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.4), squeeze=False)
    for axis, task in zip(axes[0], tasks):
        for run in (run for run in report["runs"] if run["task"] == task):
            sizes = [int(size) for size in run["accuracy"]]
            axis.plot(
                sizes, [100 * value for value in run["accuracy"].values()], marker="o", markersize=3, label=run["name"]
            )
        axis.axvline(report["settings"]["max_train_size"], color="grey", linestyle=":", linewidth=1)
        if task == "units":
            axis.axhline(10, color="grey", linestyle="--", linewidth=1, label="chance")
        axis.set_title(TASKS[task].capitalize(), fontsize=10)
        axis.set_xlabel("test set size (dotted: largest training set)")
        axis.set_ylabel("accuracy (%)")
        axis.set_ylim(-3, 103)
        axis.legend(fontsize=8)
    figure.tight_layout()
    write_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=80))
    plt.close(figure)


def keep_notes(path: Path, report: str) -> str:
    """``report`` followed by the hand-written notes section of the existing ``path``, if it has one."""
    previous = path.read_text(encoding="utf-8") if path.exists() else ""
    start = previous.find(NOTES_HEADING)
    return report if start < 0 else report.rstrip("\n") + "\n\n" + previous[start:]


def machine_description(threads: int) -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {threads} thread(s)"


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    runs_folder = out / "runs"
    runs_folder.mkdir(parents=True, exist_ok=True)
    settings = {name: getattr(args, name) for name in RESULT_SETTINGS}

    for key in args.models:
        name, model_class = MODELS[key]
        print(f"{name}: {parameter_count(model_class()):,} parameters (paper {PAPER_PARAMETERS[key]:,})")
    data = make_data(args)
    print(
        f"data: {len(data['train'][1]):,} training, {len(data['dev']):,} dev sets; test sizes "
        f"{args.test_sizes[0]}..{args.test_sizes[-1]}, {args.test_sets:,} sets each",
        flush=True,
    )

    results, reused = [], []
    for task in args.tasks:
        for key in args.models:
            finished_before = (runs_folder / f"{task}-{key}.json").exists()
            results.append(run_one(args, task, key, data, runs_folder, settings))
            if finished_before:
                reused.append(f"{task}/{key}")

    command = "python examples/multiset_digits.py " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    report = {
        "command": command,
        "machine": machine_description(args.threads),
        "torch": torch.__version__,
        "settings": settings,
        "reused": reused,
        "runs": results,
        "wall_seconds": time.perf_counter() - started,
    }
    if args.plot:
        plot_accuracy(report, out / "accuracy.png")
    report["wall_seconds"] = time.perf_counter() - started
    write_text_atomic(out / "results.json", json.dumps(report, indent=1))
    write_text_atomic(out / "RESULTS.md", keep_notes(out / "RESULTS.md", markdown_report(report)))
    for run in results:
        print(f"{run['task']:>5} {run['name']:<17} min accuracy {percent(run['min_accuracy']):>6} over test sizes")
    print(f"wall time {report['wall_seconds']:.1f} s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
