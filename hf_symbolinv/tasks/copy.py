"""The copy task: a string -> the same string, every character an interchangeable symbol."""

from __future__ import annotations

from ..evaluation.metrics import edit_distance
from . import Judgement, Task, register_task


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
