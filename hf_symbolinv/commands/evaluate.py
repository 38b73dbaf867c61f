"""``symbolinv evaluate``: a saved model of any family judged on a split, by the route of its family."""

from __future__ import annotations

import argparse

from .common import Subparsers, positive_int

#: The symbol counts whose renamings an evaluation checks by default: routes.EvaluateArguments' default, written
#: here too so that ``symbolinv --help`` imports no model code (tests/test_routes_api.py keeps the two equal).
DEFAULT_ALPHA_SYMBOLS = [3, 4, 5]

#: ``evaluate --alpha-symbols``: the symbol counts at which alpha-covariance is measured unless told otherwise.


def add_evaluate_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a model as the papers do",
        description="Correct (checker), exact, invalid, unknown, top-N, alpha-covariance per symbol count, a heatmap "
        "over (symbols x size) as JSON and PNG, and mean edit distance for the copy task.",
    )
    parser.add_argument("model", metavar="MODEL", help="a saved model folder (or a training OUTPUT with model/)")
    parser.add_argument("--data", required=True, metavar="DIR")
    parser.add_argument("--split", default="test")
    parser.add_argument("--beam", type=positive_int, default=3)
    parser.add_argument("--top-n", type=positive_int, default=1)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--limit", type=positive_int, default=None, help="evaluate the first N samples only")
    parser.add_argument(
        "--alpha-symbols",
        type=positive_int,
        nargs="*",
        default=list(DEFAULT_ALPHA_SYMBOLS),
        help="symbol counts for alpha-covariance (default 3 4 5; none: no alpha-covariance)",
    )
    parser.add_argument(
        "--alpha-pool", type=positive_int, default=5, help="rename into the first K symbols (default 5)"
    )
    parser.add_argument("--max-perm", type=positive_int, default=120, help="renamed variants per input (default 120)")
    parser.add_argument("--alpha-samples", type=positive_int, default=100, help="inputs per symbol count (default 100)")
    parser.add_argument(
        "--draws",
        type=positive_int,
        default=10,
        help="random-embedding models: evaluate the median-loss draw of this many (default 10)",
    )
    parser.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="JSON report (default: MODEL/eval-SPLIT.json; for a model shipped with the package, NAME-eval-SPLIT.json "
        "in the current folder)",
    )
    parser.add_argument(
        "--heatmap",
        default=None,
        metavar="PNG",
        help="default: MODEL/heatmap-SPLIT.png (for a shipped model, NAME-heatmap-SPLIT.png in the current folder)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--whole-story",
        action="store_true",
        help="CLUTRR models: ask the model each story whole instead of composing its chain two facts at a time",
    )
    parser.set_defaults(handler=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    """The options as :class:`hf_symbolinv.routes.EvaluateArguments`, evaluated by
    :func:`hf_symbolinv.routes.evaluate`."""
    import dataclasses

    from ..routes import EvaluateArguments, evaluate

    evaluate(
        EvaluateArguments(**{field.name: getattr(args, field.name) for field in dataclasses.fields(EvaluateArguments)})
    )
    return 0
