"""``symbolinv evaluate``: a saved model of any family judged on a split, by the route of its family."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..utils.files import resolve_model_folder
from .common import Subparsers, positive_int

#: ``evaluate --alpha-symbols``: the symbol counts at which alpha-covariance is measured unless told otherwise.
DEFAULT_ALPHA_SYMBOLS = [3, 4, 5]


def add_evaluate_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a model as the papers do",
        description="Correct (checker), exact, invalid, unknown, top-N, alpha-covariance per symbol count, a heatmap "
        "over (symbols x size) as JSON and PNG, and mean edit distance for the copy task.",
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a saved model folder (or a training OUTPUT with model/), or the name of a shipped one (e.g. clutrr)",
    )
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
        default=DEFAULT_ALPHA_SYMBOLS,
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
    parser.set_defaults(handler=run_evaluate)


def output_paths(folder: Path, split: str, report: str | None, heatmap: str | None) -> tuple[Path, Path]:
    """Where the report and the heatmap go: where asked, else beside the model, except for a model shipped with the
    package, whose folder is part of the installed package and is left as it shipped (the current folder instead)."""
    from ..pretrained import PRETRAINED_DIR

    shipped = folder.resolve().parent == PRETRAINED_DIR
    default_dir, prefix = (Path.cwd(), f"{folder.name}-") if shipped else (folder, "")
    report_path = Path(report) if report else default_dir / f"{prefix}eval-{split}.json"
    heatmap_path = Path(heatmap) if heatmap else default_dir / f"{prefix}heatmap-{split}.png"
    return report_path, heatmap_path


def run_evaluate(args: argparse.Namespace) -> int:
    from ..models.registry import folder_route
    from ..pretrained import SHIPPED, SHIPPED_TREES, shipped_model
    from ..utils.files import check_output_file

    # A shipped model by name (`symbolinv evaluate clutrr ...`) unless a folder of that name is here.
    shipped = args.model in {**SHIPPED, **SHIPPED_TREES} and not Path(args.model).exists()
    folder = shipped_model(args.model) if shipped else resolve_model_folder(args.model)
    report_path, heatmap_path = output_paths(folder, args.split, args.report, args.heatmap)
    # Before the evaluation, and all of them: a report written and then a heatmap refused leaves half a result.
    check_output_file(report_path, "--report")
    check_output_file(report_path.with_name(report_path.stem + "-heatmap.json"), "--report")
    check_output_file(heatmap_path, "--heatmap")
    route = folder_route(folder)
    ignored = [
        "--" + name.replace("_", "-")
        for name, default in route.evaluate_options_not_taken.items()
        if getattr(args, name) != default
    ]
    if ignored:  # e.g. a tree model runs its own steps: none of these would change what it does
        raise ValueError(f"{', '.join(ignored)} do(es) not apply to a {route.name} model ({folder}); leave it out")
    return route.evaluate(args, folder, report_path, heatmap_path)
