"""The ``symbolinv`` command line: the parser and ``main``.

Each subcommand is a module of this package with a pair of functions: ``add_<name>_parser(subparsers)`` declares
its arguments and sets ``handler``; the handler does the work and returns an exit status, or raises a
``ValueError`` / ``OSError`` that :func:`main` turns into one line and exit status 2. To add one, write both and
append the first to ``SUBCOMMANDS``. Handlers import their heavy dependencies (torch, transformers) themselves so
that ``symbolinv --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence

from .. import __version__
from ..utils.progress import quiet_off_terminal
from .common import Subparsers, positive_int
from .convert import add_convert_parser
from .data import add_data_parser
from .demo_command import add_demo_parser
from .evaluate import add_evaluate_parser
from .export import add_export_parser
from .solve import add_solve_parser
from .train import add_train_parser
from .web import add_web_parser

#: One parser-building function per subcommand, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[Subparsers], None]] = [
    add_demo_parser,
    add_data_parser,
    add_train_parser,
    add_evaluate_parser,
    add_solve_parser,
    add_convert_parser,
    add_export_parser,
    add_web_parser,
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


#: Commands that run one small input at a time, on one torch thread unless told otherwise (see
#: :func:`hf_symbolinv.utils.threads.set_torch_threads`).
SINGLE_THREAD_COMMANDS = ("solve",)


def _set_threads(threads: int | None, command: str) -> None:
    if threads is None and command not in SINGLE_THREAD_COMMANDS:
        return  # torch's own choice, which honours OMP_NUM_THREADS
    from ..utils.threads import set_torch_threads

    set_torch_threads(threads)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the chosen subcommand, return its exit status."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    quiet_off_terminal()  # before datasets, the Hub or transformers are imported: each reads its switch once
    if extras:
        # `solve MODEL --symbols R INPUT`: argparse stops a list of positionals at the first option; the inputs
        # after it are still inputs. Anything else unknown is an error, as parse_args makes it.
        if args.command == "solve":
            args.inputs += [extra for extra in extras if not extra.startswith("-")]
            extras = [extra for extra in extras if extra.startswith("-")]
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command not in SINGLE_THREAD_COMMANDS:
        # solve sets its threads itself, after reading its inputs: a syntax error is answered before torch loads.
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
