"""``symbolinv convert``: a fixed-embedding checkpoint turned into a symbol-invariant one."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import Subparsers


def add_convert_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="retrofit a checkpoint into the stream architecture",
        description="Convert a fixed-embedding model of this family into a SIT with the same tensors (paper §5.8: "
        "actual row <- the row of --actual, placeholder row <- the row of --placeholder, every other "
        "tensor one to one), or wrap a standard Hugging Face encoder-decoder checkpoint (BART, Marian, "
        "...) as a per-stream model. Prints the mapping; writes DST atomically. Fine-tune a converted SIT "
        "with `symbolinv train --init-from DST --epochs 1`; a wrapped model is used from Python.",
    )
    parser.add_argument("source", metavar="SRC", help="a saved model folder or a Hub model id")
    parser.add_argument("destination", metavar="DST", help="folder to write the converted model and tokenizer to")
    parser.add_argument("--actual", default="a", help="the symbol whose embedding becomes the actual row (default a)")
    parser.add_argument(
        "--placeholder", default="b", help="the symbol whose embedding becomes the placeholder row (default b)"
    )
    parser.add_argument(
        "--symbols",
        default=None,
        metavar="REGEX",
        help="which token strings are interchangeable symbols (full match); family models keep "
        "their tokenizer's rule by default",
    )
    parser.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    from ..models.symbolinv.conversion import convert_checkpoint
    from ..utils.files import check_model_destination

    source = Path(args.source)
    # A Hub id has one slash at most and no leading "." or "/"; anything else is meant as a local folder,
    # and "Repo id must be in the form ..." would hide that it is simply missing.
    local = source.exists() or args.source.startswith((".", "/", "~")) or args.source.count("/") > 1
    if local and not source.is_dir():
        what = "is a file, not a model folder" if source.exists() else "no such folder"
        raise ValueError(f"cannot read a model config from {args.source}: {what}")
    destination = Path(args.destination)
    if local and destination.resolve() == source.resolve():
        raise ValueError(f"{args.destination} is the source model; write the converted model elsewhere")
    check_model_destination(destination)  # before loading and converting, which may take long for a Hub model
    convert_checkpoint(
        args.source, args.destination, actual=args.actual, placeholder=args.placeholder, symbols=args.symbols
    )
    return 0
