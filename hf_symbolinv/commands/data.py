"""``symbolinv data build`` and ``symbolinv data push``: the datasets of ``dataset_builders/``."""

from __future__ import annotations

import argparse

from .common import Subparsers, non_negative_int, positive_float, positive_int


def add_data_parser(subparsers: Subparsers) -> None:
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
        raise ValueError(
            f"unknown configuration {args.name!r}; choose one of: {', '.join(dataset_builders.CONFIG_NAMES)}"
        )
    if args.timeout is not None and not args.name.startswith("ltl-"):
        raise ValueError("--timeout applies to the LTL configurations only")
    if args.max_depth is not None:
        if args.name not in dataset_builders.TREE_CONFIG_NAMES:
            raise ValueError(
                f"--max-depth applies to the tree configurations only "
                f"({', '.join(dataset_builders.TREE_CONFIG_NAMES)}), not {args.name}"
            )
        from ..models.dte.configuration_dte import MAX_TREE_DEPTH  # here: it imports transformers

        if args.max_depth > MAX_TREE_DEPTH:
            raise ValueError(f"--max-depth {args.max_depth}: no DTE model takes trees deeper than {MAX_TREE_DEPTH}")
    options = dataset_builders.BuildOptions(
        num_samples=args.num_samples,
        num_symbols=args.num_symbols,
        max_size=args.max_size,
        seed=args.seed,
        workers=args.workers,
        timeout=args.timeout,
        max_depth=args.max_depth,
        progress=not args.quiet,
        overwrite=args.overwrite,
    )
    dataset = dataset_builders.build(args.name, args.out, options)
    sizes = ", ".join(f"{name} {len(split)}" for name, split in dataset.items())
    print(f"wrote {args.name} to {args.out} ({sizes}); load it with datasets.load_dataset({str(args.out)!r})")
    return 0


def run_data_push(args: argparse.Namespace) -> int:
    import dataset_builders

    if not dataset_builders.is_built_dataset(args.directory):
        raise ValueError(
            f"{args.directory} is not a built dataset (no README.md and data/*.parquet); build it with "
            "`symbolinv data build NAME --out DIR`"
        )
    name = dataset_builders.push_dataset(
        args.directory, args.repo_id, config_name=args.config, private=args.private or None
    )
    print(f"pushed {args.directory} to https://huggingface.co/datasets/{args.repo_id} as configuration {name!r}")
    return 0
