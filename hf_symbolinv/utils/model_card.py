"""Filling in the model card templates of ``model_cards/`` for a trained model: the fields every card has here,
the family's own in its ``family.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tasks import get_task


def evaluation_table(report: Mapping[str, Any] | None, split: str = "test") -> str:
    """A Markdown table of an evaluation report (``EvaluationReport.to_dict()``)."""
    if not report:
        return "Not evaluated yet: run `symbolinv evaluate MODEL --data DIR`."
    rows = [
        ("samples", f"{report['count']}"),
        ("correct", _pct(report["correct"])),
        ("exact", _pct(report["exact"])),
        ("invalid", _pct(report["invalid"])),
        ("unknown", _pct(report["unknown"])),
    ]
    for n, value in sorted((int(k), v) for k, v in report.get("top_n", {}).items()):
        rows.append((f"top-{n} correct", _pct(value)))
    if report.get("mean_edit_distance") is not None:
        rows.append(("mean edit distance", f"{report['mean_edit_distance']:.3f}"))
    for k, value in sorted((int(k), v) for k, v in report.get("by_symbols", {}).items()):
        rows.append((f"correct, {k} symbols", _pct(value)))
    for k, value in sorted((int(k), v) for k, v in report.get("alpha_covariance", {}).items()):
        rows.append((f"alpha-covariance, {k} symbols", _pct(value)))
    lines = [f"On the `{split}` split:", "", "| metric | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def _pct(value: float) -> str:
    return f"{100 * value:.2f}%"


def render_card(name: str, **fields: Any) -> str:
    """The model card template ``model_cards/<name>.md`` with its ``{placeholders}`` filled: the one place
    that writes model cards (training, evaluation, the demo and the converter all come here)."""
    from model_cards import template

    try:
        return template(name).format(**fields)
    except KeyError as missing:
        raise ValueError(f"model card template {name!r} needs the field {missing}") from None


def fill_model_card(
    config: Any,
    task: str,
    model_ref: str = "path/to/model",
    preset: str | None = None,
    training_data: str | None = None,
    report: Mapping[str, Any] | None = None,
    split: str = "test",
    parameters: int | None = None,
    extra_limitations: str = "",
) -> str:
    """The model card of a trained model of any family, from its config and (optionally) its evaluation: the fields
    every card has, then the family's own (its ``family.py`` ``card``)."""
    from ..models.registry import get_family

    about = get_task(task)
    fields = dict(
        task=about.name,
        task_description=about.description,
        intended_use=about.intended_use,
        model_ref=model_ref,
        example_input=about.example,
        preset=preset or "custom",
        parameters=f"{parameters:,}" if parameters is not None else "see config",
        training_data=training_data or "Not recorded.",
        evaluation=evaluation_table(report, split),
        extra_limitations=extra_limitations,
    )
    return get_family(config.model_type).card(config, about.name, fields)
