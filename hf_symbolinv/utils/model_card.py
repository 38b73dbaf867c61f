"""Model card text: a template of ``model_cards/`` filled in (:func:`render_card`) and an evaluation report as a
table (:func:`evaluation_table`). Plain text only: which family and task a card is about is the caller's
(``hf_symbolinv.routes.common.fill_model_card`` assembles a trained model's card; each family's ``family.py`` its
own fields)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
