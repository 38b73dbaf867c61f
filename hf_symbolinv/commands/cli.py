"""The ``symbolinv`` command line.

Each subcommand is a pair of functions: ``add_<name>_parser(subparsers)`` declares its arguments
and sets ``handler``; ``run_<name>(args)`` does the work and returns an exit status. To add one,
write both and append the first to ``SUBCOMMANDS``. Handlers import their heavy dependencies
(torch, transformers) themselves so that ``symbolinv --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from .arguments import non_negative_int, positive_float, positive_int
from .model import add_convert_parser, add_evaluate_parser, add_solve_parser, add_train_parser

_Subparsers = Any  # argparse's _SubParsersAction is private


# ---------------------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------------------
def add_demo_parser(subparsers: _Subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="train a small SIT and a fixed-embedding baseline on the copy task and compare them",
        description=(
            "Generate a copy-task dataset locally, train a small Symbol-Invariant Transformer and a "
            "same-size fixed-embedding baseline on CPU (a few minutes), compare them (accuracy with the "
            "training symbol count and with more symbols, edit distance, alpha-covariance), and save the "
            "SIT with a model card and an accuracy heatmap."
        ),
    )
    parser.add_argument(
        "--output",
        "-o",
        default="symbolinv-demo",
        metavar="DIR",
        help="where to save the model, heatmap and results (default: ./symbolinv-demo)",
    )
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="training steps per model (default: 600; 250 with --quick)",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed for data and models (default: 0)")
    parser.add_argument("--quick", action="store_true", help="tiny data and models, for a smoke test in under a minute")
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo as demo

    demo(output_dir=args.output, steps=args.steps, seed=args.seed, quick=args.quick)
    return 0


# ---------------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------------
def add_data_parser(subparsers: _Subparsers) -> None:
    try:
        from dataset_builders import CONFIG_NAMES  # a tuple of names: the package imports nothing heavy
    except ImportError:  # the builders ship beside the package; without them only `data` fails
        CONFIG_NAMES = ()

    parser = subparsers.add_parser(
        "data",
        help="build the papers' benchmark datasets locally, or push a built one to the Hub",
        description="Build the benchmark datasets (LTL, propositional, copy) as Hugging Face datasets, "
        "or publish one to the Hub.",
    )
    actions = parser.add_subparsers(title="actions", dest="data_command", metavar="ACTION")
    actions.required = True
    build = actions.add_parser(
        "build",
        help="generate a configuration into a directory that load_dataset(DIR) reads",
        description=(
            "Generate a dataset configuration (in parallel; the result depends only on the parameters, not on "
            "--workers) and write Parquet shards plus a dataset card to DIR. Rerunning an interrupted build "
            "with the same arguments continues where it stopped. Configurations: "
            + ", ".join(CONFIG_NAMES)
            + ". Load the result with datasets.load_dataset(DIR)."
        ),
    )
    build.add_argument("name", metavar="NAME", help="the configuration: " + ", ".join(CONFIG_NAMES))
    build.add_argument("--out", "-o", required=True, metavar="DIR", help="directory to write the dataset to")
    build.add_argument(
        "--num-samples",
        type=positive_int,
        default=None,
        metavar="N",
        help="samples before splitting (grids: samples per cell); default: the paper's size",
    )
    build.add_argument(
        "--num-symbols",
        type=non_negative_int,
        default=None,
        metavar="K",
        help="symbols of the formulas (grids: the largest symbol count; copy: most distinct characters)",
    )
    build.add_argument(
        "--max-size", type=positive_int, default=None, metavar="M", help="largest formula size (copy: longest string)"
    )
    build.add_argument(
        "--max-depth",
        type=positive_int,
        default=None,
        metavar="D",
        help="tree configurations only: the deepest node of any input or target, root 0 (default 8, at most 12, "
        "the deepest a DTE model takes; the model's max_depth must be at least this)",
    )
    build.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default: 0)")
    build.add_argument(
        "--overwrite", action="store_true", help="replace a dataset of other parameters already in --out"
    )
    build.add_argument(
        "--workers", type=positive_int, default=None, metavar="W", help="worker processes (default: all cores)"
    )
    build.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="LTL only: wall-clock time-out per formula; time-outs are dropped (default: 10)",
    )
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.set_defaults(handler=run_data_build)
    push = actions.add_parser(
        "push",
        help="publish a built dataset directory to the Hugging Face Hub",
        description="Load a directory written by `symbolinv data build` and push it to the Hub as one "
        "configuration of a dataset repository (needs a Hub token: `hf auth login`).",
    )
    push.add_argument("directory", metavar="DIR", help="a directory written by `symbolinv data build`")
    push.add_argument("repo_id", metavar="REPO_ID", help="the Hub dataset repository, e.g. user/symbolinv-ltl")
    push.add_argument(
        "--config",
        default=None,
        metavar="NAME",
        help="configuration name on the Hub (default: the name it was built as)",
    )
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.set_defaults(handler=run_data_push)


def run_data_build(args: argparse.Namespace) -> int:
    import dataset_builders

    if args.name not in dataset_builders.CONFIG_NAMES:
        print(
            f"error: unknown configuration {args.name!r}; choose one of: {', '.join(dataset_builders.CONFIG_NAMES)}",
            file=sys.stderr,
        )
        return 2
    options: dict[str, Any] = {
        "num_samples": args.num_samples,
        "num_symbols": args.num_symbols,
        "max_size": args.max_size,
        "seed": args.seed,
        "workers": args.workers,
        "overwrite": args.overwrite,
        "progress": not args.quiet,
    }
    if args.timeout is not None:
        if not args.name.startswith("ltl-"):
            print("error: --timeout applies to the LTL configurations only", file=sys.stderr)
            return 2
        options["timeout"] = args.timeout
    if args.max_depth is not None:
        if args.name not in dataset_builders.TREE_CONFIG_NAMES:
            print(
                f"error: --max-depth applies to the tree configurations only "
                f"({', '.join(dataset_builders.TREE_CONFIG_NAMES)}), not {args.name}",
                file=sys.stderr,
            )
            return 2
        from ..models.dte.configuration_dte import MAX_TREE_DEPTH  # here: it imports transformers

        if args.max_depth > MAX_TREE_DEPTH:
            print(
                f"error: --max-depth {args.max_depth}: no DTE model takes trees deeper than {MAX_TREE_DEPTH}",
                file=sys.stderr,
            )
            return 2
        options["max_depth"] = args.max_depth
    try:
        dataset = dataset_builders.build(args.name, args.out, **options)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    sizes = ", ".join(f"{name} {len(split)}" for name, split in dataset.items())
    print(f"wrote {args.name} to {args.out} ({sizes}); load it with datasets.load_dataset({str(args.out)!r})")
    return 0


def run_data_push(args: argparse.Namespace) -> int:
    import dataset_builders

    if not dataset_builders.is_built_dataset(args.directory):
        print(
            f"error: {args.directory} is not a built dataset (no README.md and data/*.parquet); build it with "
            "`symbolinv data build NAME --out DIR`",
            file=sys.stderr,
        )
        return 2
    name = dataset_builders.push_dataset(
        args.directory, args.repo_id, config_name=args.config, private=args.private or None
    )
    print(f"pushed {args.directory} to https://huggingface.co/datasets/{args.repo_id} as configuration {name!r}")
    return 0


# ---------------------------------------------------------------------------------------------------
# Parser and entry point
# ---------------------------------------------------------------------------------------------------
#: One parser-building function per subcommand, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[_Subparsers], None]] = [
    add_demo_parser,
    add_data_parser,
    add_train_parser,
    add_evaluate_parser,
    add_solve_parser,
    add_convert_parser,
]


def _is_input_error(error: Exception) -> bool:
    """Whether ``error`` is about the user's input; any other SyntaxError is a bug and keeps its traceback."""
    if not isinstance(error, SyntaxError):
        return True
    from ..logic import LogicSyntaxError

    return isinstance(error, LogicSyntaxError)


def build_parser() -> argparse.ArgumentParser:
    """The ``symbolinv`` parser with every subcommand of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(
        prog="symbolinv",
        description="Symbol-Invariant Transformers: models whose symbols are interchangeable.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback when a command fails")
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        metavar="N",
        help="CPU threads for torch (default: OMP_NUM_THREADS if set; 1 for solve, whose one small input gains "
        "nothing from more and loses much on a busy machine; else torch's default)",
    )
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    subparsers.required = True
    for add_parser in SUBCOMMANDS:
        add_parser(subparsers)
    return parser


#: Commands that run one small input at a time: extra threads only spin against the machine's other work (one beam-3
#: answer of the shipped prop-small model beside two busy processes on 2 cores: 2.7 s with 2 threads, 20-34 ms with
#: 1; ``benchmarks/solve_threads.py``).
SINGLE_THREAD_COMMANDS = ("solve",)


def _set_threads(threads: int | None, command: str) -> None:
    import os

    if threads is None and ("OMP_NUM_THREADS" in os.environ or command not in SINGLE_THREAD_COMMANDS):
        return  # torch's own choice honours OMP_NUM_THREADS
    import torch

    torch.set_num_threads(threads or 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the chosen subcommand, return its exit status."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        # `solve MODEL --symbols R INPUT`: argparse stops a list of positionals at the first option; the inputs
        # after it are still inputs. Anything else unknown is an error, as parse_args makes it.
        if args.command == "solve":
            args.inputs += [extra for extra in extras if not extra.startswith("-")]
            extras = [extra for extra in extras if extra.startswith("-")]
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    _set_threads(args.threads, args.command)
    previous_format = warnings.formatwarning
    if not getattr(args, "debug", False):
        # A warning to a user is one line; the package's source line under it is for --debug.
        warnings.formatwarning = lambda message, category, *rest, **kwargs: f"warning: {message}\n"
    try:
        return _run(args)
    finally:
        warnings.formatwarning = previous_format


def _run(args: argparse.Namespace) -> int:
    """The chosen subcommand, its failures turned into one line and exit status 2."""
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit as stop:
        # Handlers stop with a message (exit status 1 by Python's rule); every command error exits with 2.
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            return 2
        raise
    except (ValueError, SyntaxError) as error:
        # The package's own checks (a config field, a checkpoint, a tokenizer, a dataset, a path) raise
        # ValueError with a message that names the problem, and the logic engine a LogicSyntaxError (a
        # SyntaxError) naming the formula and position: one line, no traceback.
        if getattr(args, "debug", False) or not _is_input_error(error):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        # A destination in use, a read-only or missing path: one line naming it, no traceback.
        if getattr(args, "debug", False):
            raise
        if error.strerror and error.filename:
            print(f"error: {error.strerror}: {error.filename}", file=sys.stderr)
        else:
            print(f"error: {error}", file=sys.stderr)
        return 2
