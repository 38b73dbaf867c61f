"""``symbolinv train``: a new model from a preset (any registered family) or a saved one (``--init-from``), trained
on a dataset by the route of its family (see :mod:`hf_symbolinv.models.registry`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from ..tasks import task_names
from .common import Subparsers, field_value, fraction, non_negative_int, positive_float, positive_int

if TYPE_CHECKING:
    from ..routes import TrainArguments


def add_train_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model of any family with the Hugging Face Trainer",
        description="Train a model of any registered family on a dataset built by `symbolinv data build`: the loss "
        "inside the model, semantic accuracy (checker) at evaluation, checkpoints that resume. The final model (with "
        "tokenizer and model card) goes to OUTPUT/model. Each family's presets say which tasks they are for; an "
        "unknown --preset lists them all.",
    )
    parser.add_argument("--task", choices=task_names(), required=True)
    start = parser.add_mutually_exclusive_group(required=True)
    start.add_argument(
        "--preset",
        help="a new model with these settings, e.g. prop-best, ltl-small, prop-vanilla (an unknown name lists every "
        "preset)",
    )
    start.add_argument(
        "--init-from", metavar="MODEL", help="fine-tune a saved model (e.g. the output of `symbolinv convert`) instead"
    )
    parser.add_argument(
        "--data", required=True, metavar="DIR", help="dataset folder with train (and validation) splits"
    )
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument(
        "--embedding-type",
        choices=["streams", "fixed", "alpha_renaming", "random"],
        help="override the preset's embedding (baselines; aggregated attention is dropped for them)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        type=field_value,
        nargs="*",
        action="extend",  # a second --set adds to the first rather than silently replacing it
        default=[],
        metavar="FIELD=VALUE",
        help="override config fields, e.g. d_model=32 encoder_layers=2 (repeatable)",
    )
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=positive_int, default=None, help="optimizer steps (default 1000)")
    length.add_argument(
        "--epochs",
        type=positive_float,
        default=None,
        help="passes over the train split instead of --steps (the fine-tuning recipe uses 1)",
    )
    parser.add_argument(
        "--targets",
        choices=["taught", "dataset"],
        default="taught",
        help="taught: the targets as the task teaches them (prop: a complete model, each symbol in order of "
        "appearance 0 if the formula can still be satisfied, else 1, rather than the dataset's minimal assignment); "
        "dataset: the target column as written",
    )
    parser.add_argument(
        "--max-train-samples",
        type=positive_int,
        default=None,
        metavar="N",
        help="train on the first N samples of the train split only",
    )
    parser.add_argument(
        "--curriculum",
        type=non_negative_int,
        default=0,
        metavar="STEPS",
        help="draw the first STEPS steps' batches from the smallest inputs, a share of the train split growing from "
        "a tenth to all of it (default 0: every batch at random)",
    )
    parser.add_argument(
        "--augment",
        choices=["none", "commute"],
        default="none",
        help="commute: each time a training sample is drawn, swap the operands of its formula's commutative "
        "operators (& | <-> xor) at random, so that the model meets the same solved formulas in new forms (the "
        "target follows the new form); none (default): as written",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--grad-accum", type=positive_int, default=1)
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    warmup = parser.add_mutually_exclusive_group()
    warmup.add_argument(
        "--warmup-steps",
        type=positive_int,
        default=None,
        help="learning-rate warm-up in steps (default: 1000, the reference code's, or a fifth of a shorter run)",
    )
    warmup.add_argument("--warmup-ratio", type=fraction, default=None, help="warm-up as a fraction of the steps")
    parser.add_argument("--eval-steps", type=positive_int, default=None, help="default: steps / 4")
    parser.add_argument(
        "--eval-samples", type=positive_int, default=256, help="validation samples judged at each evaluation"
    )
    parser.add_argument("--beam", type=positive_int, default=1, help="beams for the evaluations during training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-resume", action="store_true", help="start afresh even if OUTPUT has checkpoints")
    fast = parser.add_argument_group("speed (for GPUs)")
    fast.add_argument(
        "--bf16", action="store_true", help="bf16 mixed precision (autocast; the weights and the optimizer stay fp32)"
    )
    fast.add_argument(
        "--compile",
        nargs="?",
        const="inductor",
        default=None,
        metavar="BACKEND",
        help="run the training step compiled whole (torch.compile with fullgraph; backend default inductor): "
        "batches padded to buckets of 8 positions, one graph per bucket (counted as compiled_graphs in the log); "
        "one process only",
    )
    fast.add_argument(
        "--group-by-length",
        action="store_true",
        help="draw batches of samples with similar stream counts and lengths, so that padding wastes little",
    )
    fast.add_argument(
        "--workers",
        type=non_negative_int,
        default=0,
        help="data-loading and tokenizing processes (default 0: in the main process)",
    )
    fast.add_argument(
        "--eval-batch-size", type=positive_int, default=None, help="evaluation batch size (default: --batch-size)"
    )
    fast.add_argument(
        "--time-limit",
        type=positive_float,
        default=None,
        metavar="MINUTES",
        help="stop after this many minutes with a checkpoint; the same command then continues the run (SIGTERM stops "
        "the same way at any time)",
    )
    parser.set_defaults(handler=run_train)


def run_train(args: argparse.Namespace) -> int:
    """The options as :class:`hf_symbolinv.routes.TrainArguments`, trained by :func:`hf_symbolinv.routes.train`."""
    from ..routes import train

    train(train_arguments_of(args))
    return 0


def train_arguments_of(args: argparse.Namespace) -> TrainArguments:
    """The parsed options of ``symbolinv train`` as the API's arguments."""
    from ..routes import TrainArguments

    fields = {field.name: getattr(args, field.name) for field in dataclasses.fields(TrainArguments)}
    return TrainArguments(**{**fields, "overrides": dict(args.overrides)})


def train_command_line(arguments: TrainArguments) -> list[str]:
    """The ``symbolinv train`` arguments that train as ``arguments`` do (options at the command's defaults left
    out): the command a run's log or card shows for a training started from Python. Read from the command's own
    options, so a new option needs no change here."""
    subparsers = argparse.ArgumentParser().add_subparsers()
    add_train_parser(subparsers)
    argv = ["train"]
    for action in subparsers.choices["train"]._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value, option = getattr(arguments, action.dest), action.option_strings[-1]
        if action.dest == "overrides":
            argv += ["--set", *(f"{name}={_field_text(v)}" for name, v in value.items())] if value else []
        elif isinstance(action, argparse._StoreTrueAction):
            argv += [option] if value else []
        elif value is not None and (action.required or value != action.default):
            argv += [option, str(value)]
    return argv


def _field_text(value: Any) -> str:
    """A ``--set`` value that ``field_value`` reads back as ``value``: JSON, or a string as it is."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except json.JSONDecodeError:
            return value  # read back as the same string
    return json.dumps(value)
