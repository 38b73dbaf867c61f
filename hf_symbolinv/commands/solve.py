"""``symbolinv solve``: a model's answers to inputs in the user's own names, with the checker's verdicts.

Inputs are read and checked by the reader the web page uses (:mod:`hf_symbolinv.logic.reading`) before torch is
imported, so a syntax error is answered at once; then each model is loaded once and answers every good input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .common import Subparsers, positive_int


def add_solve_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "solve",
        help="ask a model for an answer and check it",
        description="Print the model's answers to one or more formulas (Polish or infix, propositional or LTL, any "
        "symbol names; read as the web page reads them), the checker's verdict on each, and, when the model's first "
        "answer is incorrect, a correct answer from the exact solver, marked as the solver's. Assignments print as "
        "'a = true, b = false' and 'a 1 b 0', traces in infix and in Polish, whatever the names.",
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="[MODEL] INPUT",
        help="a saved model folder or a shipped model's name (clutrr, active-logical; or use --model; default: a "
        "trained model that ships with the package, chosen by "
        "each input: the one whose measured table is best for the input's size and symbol count), then one or more "
        "inputs, e.g. '& a | b ! c' 'G F req -> F grant' '(a U b) & (c R d)' (quote each; each model is loaded once)",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="the saved model folder that answers (then every positional argument is an input); needed where the "
        "first argument is both a folder and a formula",
    )
    parser.add_argument(
        "--task",
        choices=("prop", "ltl"),
        default=None,
        help="without MODEL: answer as this task (a formula without temporal operators is propositional unless "
        "--task ltl)",
    )
    parser.add_argument(
        "--beam",
        type=positive_int,
        default=3,
        metavar="N",
        help="beam width of the model's search (default: 3, as the shipped models' cards are measured; at least "
        "--top-n)",
    )
    parser.add_argument(
        "--top-n",
        type=positive_int,
        default=1,
        metavar="N",
        help="how many of the model's answers to print, best first, each checked (default: 1)",
    )
    parser.add_argument(
        "--symbols",
        default=None,
        metavar="REGEX",
        help="which names are symbols (a regular expression; default: single lowercase letters in text without "
        "spaces, any name in text with spaces)",
    )
    parser.add_argument(
        "--no-fallback",
        action="store_true",
        help="print only the model's answers: leave out the exact solver's answer when the model's first answer is "
        "not correct",
    )
    parser.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    folder, texts = _solve_arguments(args.inputs, args.model)
    if folder is not None and args.task is not None:
        raise ValueError("--task chooses among the shipped models: it cannot be given with a MODEL")
    rule = _symbol_rule(args.symbols)
    task = _folder_task(folder) if folder is not None else args.task
    if folder is not None and task not in ("prop", "ltl"):
        return _solve_other(folder, texts, args)
    # Read every input first (no torch yet): a syntax error is answered at once, and a bad input among good ones
    # is named while the good ones are still answered.
    from ..logic.reading import InputError, read_formula

    status = 0
    readings: list[tuple[str, Any]] = []
    for text in texts:
        try:
            readings.append((text, read_formula(text, task, rule)))
        except InputError as error:
            message = str(error)
            if "need spaces between tokens" in message:
                message += "; or say which names are symbols with --symbols REGEX"
            if len(texts) == 1:
                raise ValueError(message) from None
            readings.append((text, InputError(f"{message} (quote an INPUT with spaces)")))
    if all(isinstance(read, InputError) for _, read in readings):
        for text, error in readings:
            print(f"input: {text}\nerror: {error}", file=sys.stderr)
        return 2

    from ..evaluation.solve import Solver
    from ..pretrained import model_for
    from ..utils.threads import set_torch_threads

    set_torch_threads(getattr(args, "threads", None))
    solver = Solver(folder)  # each model is loaded once, whatever the number of inputs
    for text, read in readings:
        if len(texts) > 1:
            print(f"input: {text}")
        if isinstance(read, InputError):
            print(f"error: {read}", file=sys.stderr)
            status = 2
            continue
        source = folder if folder is not None else model_for(read.task, read.size, len(read.names))
        try:
            solution = solver.solve(
                read.polish,
                beam=max(args.beam, args.top_n),
                top_n=args.top_n,
                symbols=args.symbols,
                folder=source,
                fallback=not args.no_fallback,
            )
        except ValueError as error:
            print(f"error: {_first_line(error)}", file=sys.stderr)
            status = 2
            continue
        print_solution(read, solution)
    return status


def print_solution(read: Any, solution: Any) -> None:
    """What ``solve`` prints for one formula: how it was read (in both notations, the user's operators), the model
    that answered, its answers in one format, the exact solver's verdict and, where needed, its answer."""
    other, other_text = ("infix", read.infix) if read.notation == "polish" else ("Polish", read.polish_spaced)
    article = "an" if read.task == "ltl" else "a"
    task_name = "LTL" if read.task == "ltl" else "propositional"
    notation = "Polish" if read.notation == "polish" else "infix"
    print(f"read as {article} {task_name} formula in {notation} notation; in {other}: {other_text}")
    for note in read.notes:
        print(f"note: {note}")
    print(f"answered by: {_model_name(solution.model)}")
    for rank, answer in enumerate(solution.answers, 1):
        _print_answer(f"{rank}.", answer, read.task)
    if solution.satisfiable is False:
        print("the formula is unsatisfiable (the exact solver says so): no answer can be correct")
    elif solution.satisfiable is None and read.task == "ltl":
        print("the exact solver could not tell within its budget whether any trace satisfies the formula")
    if solution.fallback is not None:
        first = solution.answers[0].verdict if solution.answers else "missing"
        print(f"the model's first answer is {first}; the exact solver's answer (not the model's):")
        _print_answer("solver:", solution.fallback, read.task)


def _print_answer(label: str, answer: Any, task: str) -> None:
    verdict = f"[{answer.verdict}{', from the exact solver' if answer.by_solver else ''}]"
    pad = " " * (len(label) + 1)
    if answer.readable is None:
        print(f"{label} {answer.text}    {verdict}")
        return
    if task == "ltl":
        print(f"{label} trace {answer.readable}    {verdict}")
        print(f"{pad}in Polish: {answer.polish}")
    else:
        print(f"{label} {answer.readable}    {verdict}")
        print(f"{pad}as the model writes it: {answer.polish}")


def _model_name(folder: Path) -> str:
    from ..pretrained import SHIPPED, shipped_model

    for name in SHIPPED:
        try:
            if shipped_model(name).resolve() == Path(folder).resolve():
                return f"{name} (a model that ships with the package)"
        except (OSError, ValueError):
            continue
    return str(folder)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _symbol_rule(pattern: str | None) -> Any:
    if not pattern:
        return None
    from ..utils.symbols import SymbolRule

    return SymbolRule(pattern=pattern)


def _folder_task(folder: Path) -> str | None:
    """The task of a saved folder, from its config.json (no model is loaded): its vocabulary."""
    import json

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # loading it names what is wrong
    vocabulary = config.get("vocabulary") if isinstance(config, dict) else None
    return vocabulary if isinstance(vocabulary, str) else None


def _solve_other(folder: Path, texts: list[str], args: argparse.Namespace) -> int:
    """A model of another task: a route with its own way of answering (trees) answers every input with the model
    loaded once; generated sequences go through the Solver."""
    from ..models.registry import folder_route
    from ..utils.threads import set_torch_threads

    set_torch_threads(getattr(args, "threads", None))
    route_solve = folder_route(folder).solve
    if route_solve is not None:
        return route_solve(folder, texts)
    from ..evaluation.solve import Solver

    solver = Solver(folder)
    status = 0
    for text in texts:
        if len(texts) > 1:
            print(f"input: {text}")
        try:
            solution = solver.solve(text, beam=max(args.beam, args.top_n), top_n=args.top_n, symbols=args.symbols)
        except ValueError as error:
            if len(texts) == 1:
                raise
            print(f"error: {_first_line(error)}", file=sys.stderr)
            status = 2
            continue
        print(f"answered by: {_model_name(solution.model)}")
        for rank, answer in enumerate(solution.answers, 1):
            print(f"{rank}. {answer.text}    [{answer.verdict}]")
    return status


def _solve_arguments(inputs: list[str], model: str | None = None) -> tuple[Path | None, list[str]]:
    """``[MODEL] INPUT ...`` (or ``--model MODEL INPUT ...``): the first argument is a MODEL when there are more and
    it names a folder (or a path, which is then refused if it is missing); every other argument is an input. A first
    argument that is a folder here and also reads as a formula is ambiguous: refused, naming ``--model``."""
    from ..utils.files import resolve_model_folder

    if model is not None:
        return resolve_model_folder(model), inputs
    first = inputs[0]
    if len(inputs) > 1 and (Path(first).is_dir() or os.sep in first or Path(first).exists()):
        if os.sep not in first and _reads_as_formula(first):
            kind = "a folder" if Path(first).is_dir() else "a file"
            raise ValueError(
                f"{first!r} is both {kind} here and a formula: pass the model as --model {first} (then every "
                "argument is an input), or run where no such path is to read it as a formula"
            )
        return resolve_model_folder(first), inputs[1:]
    from ..pretrained import SHIPPED, SHIPPED_TREES, shipped_model

    if len(inputs) > 1 and (first in SHIPPED or first in SHIPPED_TREES):  # a shipped model by name: `solve clutrr`
        return shipped_model(first), inputs[1:]
    return None, inputs


def _reads_as_formula(text: str) -> bool:
    from ..logic.reading import InputError, read_formula

    try:
        read_formula(text)
    except (InputError, ValueError):
        return False
    return True
