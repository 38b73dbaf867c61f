"""``symbolinv solve``: a model's answers to inputs in the user's own names, with the checker's verdicts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..utils.files import resolve_model_folder
from .common import Subparsers, positive_int


def add_solve_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "solve",
        help="ask a model for an answer and check it",
        description="Print the model's answers to one or more inputs (any symbol names), the checker's verdict "
        "and, for LTL, the trace in readable infix.",
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="[MODEL] INPUT",
        help="a saved model folder (default: a trained model that ships with the package, chosen by each input: "
        "the one whose measured table is best for the input's size and symbol count), then one or more inputs, "
        "e.g. '& a | b ! c' '& req X grant' (Polish notation; each model is loaded once)",
    )
    parser.add_argument(
        "--task",
        choices=("prop", "ltl"),
        default=None,
        help="without MODEL: answer as this task (a formula without temporal operators is propositional unless "
        "--task ltl)",
    )
    parser.add_argument("--beam", type=positive_int, default=3)
    parser.add_argument("--top-n", type=positive_int, default=1)
    parser.add_argument("--symbols", default=None, metavar="REGEX", help="which names are symbols")
    parser.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    from ..evaluation.solve import Solver
    from ..models.registry import folder_route

    folder, texts = _solve_arguments(args.inputs)
    if folder is not None and args.task is not None:
        raise ValueError("--task chooses among the shipped models: it cannot be given with a MODEL")
    solver = Solver(folder)  # each model is loaded once, whatever the number of inputs
    # A route with its own way of answering (trees) answers there; generated sequences go through the Solver.
    route_solve = folder_route(folder).solve if folder is not None else None
    status = 0
    for text in texts:
        if len(texts) > 1:
            print(f"input: {text}")
        if route_solve is not None:
            status = max(status, route_solve(folder, text))
            continue
        try:
            source = solver.model_folder(text, args.task, args.symbols)
        except ValueError as error:
            if len(texts) == 1:
                raise
            print(f"error: {error} (quote an INPUT with spaces)", file=sys.stderr)
            status = 2
            continue
        try:
            solution = solver.solve(text, beam=args.beam, top_n=args.top_n, symbols=args.symbols, folder=source)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            status = 2
            continue
        for rank, answer in enumerate(solution.answers, 1):
            print(f"{rank}. {answer.text}    [{answer.verdict}]")
            if answer.trace is not None:
                print(f"   trace: {answer.trace}")
        if solution.satisfiable is False:
            print("the formula is unsatisfiable (the exact solver says so): no answer can be correct")
    return status


def _solve_arguments(inputs: list[str]) -> tuple[Path | None, list[str]]:
    """``[MODEL] INPUT ...``: the first argument is a MODEL when there are more and it names a folder (or a path,
    which is then refused if it is missing); every other argument is an input."""
    first = inputs[0]
    if len(inputs) > 1 and (Path(first).is_dir() or os.sep in first or Path(first).exists()):
        return resolve_model_folder(first), inputs[1:]
    return None, inputs
