"""``symbolinv demo``: its options, run by :func:`hf_symbolinv.routes.demo.run_demo`."""

from __future__ import annotations

import argparse

from .common import Subparsers, positive_int


def add_demo_parser(subparsers: Subparsers) -> None:
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
    parser.set_defaults(handler=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    from ..routes.demo import run_demo

    run_demo(output_dir=args.output, steps=args.steps, seed=args.seed, quick=args.quick)
    return 0
