"""The ``tree`` route's evaluation: the answer is the tree the model holds after its
last step, read position by position; it is judged by the task's judge (``tree``: the same tree as the
reference; ``nnf``: a formula in negation normal form equivalent to the source, by the logic engine) and
compared with the reference tree (exact).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..tasks import get_task


def predict_trees(
    model: Any, tokenizer: Any, sources: Sequence[str], batch_size: int = 64, num_steps: int | None = None
) -> tuple[list[str], int]:
    """The model's answers to ``sources`` (in the tokenizer's written form) and the number of steps it ran
    (``num_steps``, or the model's own: the config's, or the damper's choice of a model with learned termination)."""
    import torch

    answers: list[str] = []
    steps = 0
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(sources), batch_size):
            encoded = tokenizer(list(sources[start : start + batch_size]))
            names = encoded.pop("symbol_names")
            encoded = {key: value.to(model.device) for key, value in encoded.items()}
            with torch.no_grad():
                output = model(**encoded, num_steps=num_steps)
            steps = output.num_steps
            answers.extend(tokenizer.batch_decode(output.label_logits, output.symbol_probs, names))
    finally:
        model.train(was_training)
    return answers, steps


@dataclass(frozen=True)
class TreeAnswer:
    """A tree model's answer to one input: the answer tree, the task's verdict on it without a reference (``tree``:
    unknown, its judge needs one; ``nnf``: the logic engine's), and the steps the model ran."""

    answer: str
    verdict: str
    steps: int


def answer_tree(model: Any, tokenizer: Any, task: str, source: str) -> TreeAnswer:
    """The model's answer to one tree (what ``symbolinv solve`` prints and the web page shows), judged without a
    reference; a ``ValueError`` (or ``SyntaxError``) names what is wrong with a tree the reader cannot read."""
    (answer,), steps = predict_trees(model, tokenizer, [source])
    return TreeAnswer(answer, get_task(task).judge(source, answer, None, None).state, steps)


def evaluate_tree_model(
    model: Any,
    tokenizer: Any,
    task: str,
    sources: Sequence[str],
    targets: Sequence[str],
    sizes: Sequence[int] | None = None,
    batch_size: int = 64,
    num_steps: int | None = None,
) -> dict[str, Any]:
    """Accuracy of a tree model on ``sources``/``targets``: ``correct`` (the task's judge), ``exact`` (the
    reference tree), ``invalid`` (an answer that is no tree or formula), ``correct_by_size`` when ``sizes`` are
    given (a structural measure per row), the steps run and the answers themselves."""
    # Plain lists: a dataset's columns (``datasets.Column``) index and add differently.
    sources, targets = list(sources), list(targets)
    sizes = list(sizes) if sizes is not None else None
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if not sources:
        raise ValueError("nothing to evaluate: no sources")
    judge = get_task(task).judge
    answers, steps = predict_trees(model, tokenizer, sources, batch_size=batch_size, num_steps=num_steps)
    verdicts = [judge(source, answer, target, None) for source, answer, target in zip(sources, answers, targets)]
    count = len(verdicts)
    report: dict[str, Any] = {
        "count": count,
        "correct": sum(v.correct for v in verdicts) / count,
        "exact": sum(v.exact for v in verdicts) / count,
        "invalid": sum(v.invalid for v in verdicts) / count,
        "unknown": sum(v.unknown for v in verdicts) / count,
        "num_steps": steps,
    }
    if sizes is not None:
        by_size: dict[int, list[bool]] = defaultdict(list)
        for size, verdict in zip(sizes, verdicts):
            by_size[int(size)].append(verdict.correct)
        report["correct_by_size"] = {size: sum(v) / len(v) for size, v in sorted(by_size.items())}
    report["answers"] = answers
    return report


__all__ = ["TreeAnswer", "answer_tree", "evaluate_tree_model", "predict_trees"]
