"""``python -m hf_symbolinv.web [--port N] [--host H] [MODEL ...]``: the same as ``symbolinv web``."""

from __future__ import annotations

import argparse
import sys

from ..commands.web import add_web_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hf_symbolinv.web", description="Serve the web demo.")
    add_web_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, OSError) as error:  # a model folder the page cannot use, a port in use: one line
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
