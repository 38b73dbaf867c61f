"""What the commands share: argument types (every numeric option has a range, checked by the parser: exit status 2,
one line naming the option, so that no out-of-range value reaches the work and fails later, or silently does
nothing) and ``--set`` overrides.

Errors are raised (``ValueError``, ``OSError``) and turned into one line and exit status 2 by ``cli.main``.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

#: argparse's _SubParsersAction is private.
Subparsers = Any


def _number(raw: str, kind: type) -> int | float:
    try:
        return kind(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'a whole number' if kind is int else 'a number'}, got {raw!r}"
        ) from None


def positive_int(raw: str) -> int:
    """Counts (steps, beams, samples, limits): 0 or a negative value is an error, not a default."""
    value = _number(raw, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(raw: str) -> int:
    """Counts where 0 means "none" (worker processes, supplementary samples)."""
    value = _number(raw, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(raw: str) -> float:
    """Rates, minutes, passes: a finite number above 0 (``inf`` and ``nan`` are refused)."""
    value = _number(raw, float)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {raw!r}")
    return value


def fraction(raw: str) -> float:
    """A fraction of a run: at least 0 and below 1."""
    value = _number(raw, float)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction at least 0 and below 1, got {raw!r}")
    return value


def field_value(pair: str) -> tuple[str, Any]:
    field, _, raw = pair.partition("=")
    if not field or not raw:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {pair!r}")
    try:
        return field, json.loads(raw)
    except json.JSONDecodeError:
        return field, raw
