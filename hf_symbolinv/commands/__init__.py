"""The ``symbolinv`` command line: ``cli.py`` (the parser and ``main``), a module per command (``train``, ``evaluate``,
solve, convert) and ``demo.py``. Handlers import torch and transformers themselves, so that
``symbolinv --help`` stays fast."""

from .cli import build_parser, main

__all__ = ["build_parser", "main"]
