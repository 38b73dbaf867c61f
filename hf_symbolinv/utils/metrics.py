"""Metrics shared by the tasks (plain Python): edit distance and alpha-covariance (paper Eq. 2)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

Input = TypeVar("Input")
Renaming = TypeVar("Renaming")


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


def alpha_covariance_by_renaming(
    predict: Callable[[list[Input]], list[Any]],
    inputs: Sequence[Input],
    renamings_of: Callable[[Input], list[Renaming]],
    rename: Callable[[Input, Renaming], Input],
    undo: Callable[[Any, Renaming], Hashable],
) -> list[float | None]:
    """Alpha-covariance (paper Eq. 2) of each input under its renamings, whatever an input is (text, ids).

    Every renamed variant of every input goes through ``predict`` in one call (so it can batch); each
    answer is mapped back with ``undo`` and the inverse of its own variant's renaming, so a non-invariant
    model scores below 1. Inputs with fewer than two variants carry no information: None.
    """
    jobs = [(index, renaming) for index, item in enumerate(inputs) for renaming in renamings_of(item)]
    answers = predict([rename(inputs[index], renaming) for index, renaming in jobs])
    undone: dict[int, list[Hashable]] = defaultdict(list)
    for (index, renaming), answer in zip(jobs, answers, strict=True):
        undone[index].append(undo(answer, renaming))
    return [alpha_covariance(undone[index]) if len(undone[index]) > 1 else None for index in range(len(inputs))]
