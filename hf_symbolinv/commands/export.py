"""``symbolinv export``: a shipped model written as a self-contained Hub folder, its family's code beside the
weights (the shipped folders inside the package hold no code: the package's classes load them)."""

from __future__ import annotations

import argparse
from typing import Any

from ..pretrained import DEFAULT_FOR_TASK, SHIPPED


def add_export_parser(subparsers: Any) -> None:
    names = ", ".join([*sorted(SHIPPED), *sorted(DEFAULT_FOR_TASK)])
    parser = subparsers.add_parser(
        "export",
        help="write a shipped model as a self-contained folder for the Hub",
        description="Write a shipped model (weights as stored, config, tokenizer, generation config, card) with its "
        "family's code into DIR, so that it loads with trust_remote_code=True where hf_symbolinv is not installed, "
        "and can be uploaded to the Hugging Face Hub as it is. DIR must be new, empty, or a folder an earlier "
        "export wrote.",
    )
    parser.add_argument("name", metavar="NAME", help=f"the shipped model, or a task for its default ({names})")
    parser.add_argument("destination", metavar="DIR", help="the folder to write")
    parser.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    from ..pretrained import export_model

    folder = export_model(args.name, args.destination)
    print(f"exported {args.name} to {folder}")
    return 0
