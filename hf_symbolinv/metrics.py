"""Metrics shared by the tasks (plain Python): edit distance and alpha-covariance (paper Eq. 2)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def edit_distance(a: Sequence[object], b: Sequence[object]) -> int:
    """Levenshtein distance (insertions, deletions and substitutions all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def alpha_covariance(undone: Sequence[Hashable]) -> float:
    """For n renamed variants of one input, with U the distinct answers once each variant's renaming
    is undone: 1 − (|U| − 1) / (n − 1). 1 means every renaming gave the same answer."""
    n = len(undone)
    if n < 2:
        raise ValueError("alpha-covariance needs at least two renamed variants")
    return 1.0 - (len(set(undone)) - 1) / (n - 1)
