"""The copy task: a string -> the same string, every character an interchangeable symbol; with a scalable
vocabulary, its data generation, renamings and metrics.

Every character of a copy example is an interchangeable symbol, so the task isolates the one thing the
Symbol-Invariant Transformer changes: how symbols are embedded. Plain Python (no torch); the model-facing parts
take a ``predict`` callable that maps input strings to outputs.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..utils.metrics import alpha_covariance_by_renaming, edit_distance
from . import Judgement, Task, register_task

#: Every name a copy example may use: the papers' symbols are the lowercase letters.
LETTERS = string.ascii_lowercase


@dataclass(frozen=True)
class CopySpec:
    """Which strings a copy set holds: distinct-character and length ranges (inclusive) and the
    alphabet the characters are drawn from."""

    distinct: tuple[int, int]
    length: tuple[int, int]
    alphabet: str = LETTERS

    def __post_init__(self) -> None:
        low_k, high_k = self.distinct
        low_n, high_n = self.length
        if not 1 <= low_k <= high_k:
            raise ValueError(f"distinct must be an increasing range of positive counts, got {self.distinct}")
        if not 1 <= low_n <= high_n:
            raise ValueError(f"length must be an increasing range of positive lengths, got {self.length}")
        if high_k > len(set(self.alphabet)):
            raise ValueError(f"{high_k} distinct characters do not fit in the alphabet {self.alphabet!r}")
        if low_k > high_n:
            raise ValueError(f"no string of length <= {high_n} has {low_k} distinct characters")


def random_copy_string(rng: random.Random, distinct: int, length: int, alphabet: str = LETTERS) -> str:
    """A string of exactly ``length`` characters using exactly ``distinct`` characters of ``alphabet``."""
    if not 1 <= distinct <= length:
        raise ValueError(f"need 1 <= distinct <= length, got distinct={distinct}, length={length}")
    chars = rng.sample(sorted(set(alphabet)), distinct)
    # Each chosen character appears at least once; the rest of the positions are free.
    body = chars + [rng.choice(chars) for _ in range(length - distinct)]
    rng.shuffle(body)
    return "".join(body)


def sample_copy_strings(rng: random.Random, count: int, spec: CopySpec) -> list[str]:
    """``count`` strings: distinct count uniform in its range, then length uniform among the feasible."""
    strings = []
    for _ in range(count):
        distinct = rng.randint(*spec.distinct)
        length = rng.randint(max(spec.length[0], distinct), spec.length[1])
        strings.append(random_copy_string(rng, distinct, length, spec.alphabet))
    return strings


def grid_copy_strings(
    rng: random.Random,
    distinct_values: Iterable[int],
    length_values: Iterable[int],
    per_cell: int,
    alphabet: str = LETTERS,
) -> dict[tuple[int, int], list[str]]:
    """The evaluation grid: ``per_cell`` strings for each feasible (distinct, length) cell."""
    lengths = list(length_values)
    return {
        (k, n): [random_copy_string(rng, k, n, alphabet) for _ in range(per_cell)]
        for k in distinct_values
        for n in lengths
        if k <= n
    }


# ---------------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------------
def exact_match(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Share of predictions equal to their reference."""
    _check_same_length(predictions, references)
    return sum(p == r for p, r in zip(predictions, references)) / len(references)


def mean_edit_distance(predictions: Sequence[str], references: Sequence[str]) -> float:
    _check_same_length(predictions, references)
    return sum(edit_distance(p, r) for p, r in zip(predictions, references)) / len(references)


def _check_same_length(predictions: Sequence[str], references: Sequence[str]) -> None:
    if len(predictions) != len(references) or not references:
        raise ValueError(f"need as many predictions as references (>0), got {len(predictions)} and {len(references)}")


# ---------------------------------------------------------------------------------------------------
# Renamings and alpha-covariance
# ---------------------------------------------------------------------------------------------------
def rename(text: str, mapping: dict[str, str]) -> str:
    """Apply a character renaming; characters outside ``mapping`` stay as they are."""
    return "".join(mapping.get(ch, ch) for ch in text)


def sample_renamings(
    rng: random.Random, text: str, pool: str, count: int, include_identity: bool = True
) -> list[dict[str, str]]:
    """Up to ``count`` distinct renamings of ``text``: random permutations of ``pool``.

    Full permutations (not just injections of the used characters) make every renaming invertible
    on any output, including a wrong one using characters absent from the input. Two permutations
    that rename the used characters alike give the same variant, so they count once.
    """
    alphabet = sorted(set(pool))
    used = sorted(set(text))
    if not set(used) <= set(alphabet):
        raise ValueError(f"{text!r} uses characters outside the renaming pool {pool!r}")
    possible = 1
    for i in range(len(used)):
        possible *= len(alphabet) - i
    target = min(count, possible)
    renamings: list[dict[str, str]] = []
    seen: set[tuple[str, ...]] = set()
    if include_identity:
        renamings.append({ch: ch for ch in alphabet})
        seen.add(tuple(used))
    while len(renamings) < target:
        image = rng.sample(alphabet, len(alphabet))
        mapping = dict(zip(alphabet, image))
        key = tuple(mapping[ch] for ch in used)
        if key not in seen:
            seen.add(key)
            renamings.append(mapping)
    return renamings


def mean_alpha_covariance(
    predict: Callable[[list[str]], list[str]],
    texts: Sequence[str],
    pool: str,
    variants: int,
    rng: random.Random,
) -> float:
    """Mean alpha-covariance over ``texts``, each with up to ``variants`` renamings into ``pool``.

    All variants of all texts go through ``predict`` in one call (so it can batch); each
    prediction is mapped back with the inverse of its own renaming. Texts with a single possible
    variant carry no information and are skipped.
    """

    def renamings_of(text: str) -> list[dict[str, str]]:
        renamings = sample_renamings(rng, text, pool, variants)
        return renamings if len(renamings) >= 2 else []

    def undo(prediction: str, mapping: dict[str, str]) -> str:
        return rename(prediction, {new: old for old, new in mapping.items()})

    scores = [s for s in alpha_covariance_by_renaming(predict, texts, renamings_of, rename, undo) if s is not None]
    if not scores:
        raise ValueError("no text has two or more distinct renamings into the pool")
    return sum(scores) / len(scores)


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = None) -> Judgement:
    """Correct iff the prediction equals the input; the edit distance says how far it is."""
    distance = edit_distance(prediction, source)
    return Judgement(correct=distance == 0, exact=distance == 0, edit_distance=distance)


TASK = register_task(
    Task(
        name="copy",
        vocabulary="copy",
        description="copy (a string -> the same string, every character an interchangeable symbol)",
        example="abcab",
        intended_use="A controlled benchmark of vocabulary generalisation: copying strings over alphabets larger "
        "than the training alphabet.",
        judge=judge,
        input_size=len,
        symbol_names=lambda source: sorted(set(source)),
        symbol_pattern=r"\S",
    )
)
