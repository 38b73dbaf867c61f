"""``symbolinv web``: the web demo, a Gradio page for the shipped models and saved model folders.

Gradio is an optional extra; without it the command says in one line how to install it (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def port_number(raw: str) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {value}")
    return value


def add_web_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``symbolinv web`` (also those of ``python -m hf_symbolinv.web``)."""
    parser.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="saved model folders to offer beside the shipped models (propositional or LTL, CLUTRR stories, or "
        "tree models); a folder whose config has embedding_type fixed is also shown answering each renamed input",
    )
    parser.add_argument("--port", type=port_number, default=None, metavar="N", help="port to serve on (default: 7860)")
    parser.add_argument(
        "--host",
        default=None,
        metavar="H",
        help="address to serve on (default: 127.0.0.1, this machine only; 0.0.0.0 for every interface)",
    )
    parser.set_defaults(handler=run_web)


def add_web_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "web",
        help="serve the web demo (needs the web extra: pip install 'hf_symbolinv[web]')",
        description="Serve a web page (Gradio) that answers propositional and LTL formulas typed in any names, "
        "family stories (CLUTRR, in either form) and bracketed trees with the shipped models and the saved model "
        "folders given, shows the checker's verdicts and renames the formula's symbols (a story's people) to show "
        "the answer renamed the same way. Runs until interrupted.",
    )
    add_web_arguments(parser)


def run_web(args: argparse.Namespace) -> int:
    from ..web import INSTALL_HINT, gradio_available

    if not gradio_available():
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    try:
        from ..web.app import serve
    except ImportError as error:  # installed but unusable (a missing dependency of Gradio's)
        print(f"error: {INSTALL_HINT} ({error})", file=sys.stderr)
        return 2
    serve(args.host, args.port, args.models, threads=getattr(args, "threads", None))
    return 0
