"""Filling in the model card templates (``model_cards/template.md``, ``model_cards/folnet.md``,
``model_cards/dte.md``) for a trained model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tasks import get_task

INVARIANCE = {
    "streams": "This model is invariant to renaming by construction: renaming the symbols of an input renames "
    "the output the same way (up to float rounding), and it runs on symbol names and symbol counts "
    "it never saw in training. Each symbol has its own stream with shared weights, and the streams "
    "are combined only by commutative means.",
    "fixed": "This is a fixed-embedding baseline: it is **not** invariant to renaming, and it cannot run inputs "
    "with symbols beyond the rows it was built with.",
    "alpha_renaming": "This baseline was trained with random renamings of its fixed symbol rows: it is encouraged, "
    "not guaranteed, to be invariant, and it cannot run symbols beyond its rows.",
    "random": "This baseline uses random dual-part symbol embeddings (resampled in training): it generalises to "
    "new symbols in part, but is not guaranteed invariant; its answers depend on the random draw.",
}


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
    """The model card of a trained model (any family), from its config and (optionally) its evaluation."""
    about = get_task(task)
    if config.model_type == "folnet":
        return _folnet_card(
            config, about, model_ref, preset, training_data, report, split, parameters, extra_limitations
        )
    if config.model_type == "dte":
        return _dte_card(config, about, model_ref, training_data, report, split, parameters, extra_limitations)
    embedding_description = {
        "streams": "one stream per symbol",
        "fixed": "fixed-embedding baseline",
        "alpha_renaming": "alpha-renaming baseline",
        "random": "random-embedding baseline",
    }[config.embedding_type]
    return render_card(
        "template",
        title=f"Symbol-Invariant Transformer: {task}"
        if config.embedding_type == "streams"
        else f"{embedding_description.capitalize()}: {task}",
        task=task,
        task_description=about.description,
        embedding_description=embedding_description,
        intended_use=about.intended_use,
        model_ref=model_ref,
        example_input=about.example,
        preset=preset or "custom",
        embedding_type=config.embedding_type,
        stream_attention=config.stream_attention,
        stream_aggregation=(
            f"complex multiset pooling ({config.num_aggregation_states} states)"
            if config.stream_aggregation == "complex"
            else "mean"
        )
        if any(code.endswith("A") for code in config.attention_codes)
        else "none (no aggregated attention)",
        d_model=config.d_model,
        layers=f"{config.encoder_layers}+{config.decoder_layers}",
        heads=config.encoder_attention_heads,
        ffn=config.encoder_ffn_dim,
        position_encodings=f"{config.encoder_position_encoding}, {config.decoder_position_encoding}",
        loss=config.loss_type,
        parameters=f"{parameters:,}" if parameters is not None else "see config",
        training_data=training_data or "Not recorded.",
        evaluation=evaluation_table(report, split),
        invariance=INVARIANCE[config.embedding_type],
        extra_limitations=extra_limitations,
    )


FOLNET_INVARIANCE = {
    True: "This model is invariant to renaming by construction: every symbol has the same token embedding (one "
    "shared unary atom), symbols are told apart only by the binary atoms same_symbol(x, y) and their positions, "
    "and output symbols are chosen by pointing at input positions. Renaming the symbols of an input renames the "
    "output the same way (up to float rounding); it runs on symbol names and symbol counts it never saw in "
    "training.",
    False: "This FOLNet has one embedding row per symbol slot: it is **not** invariant to renaming, and it cannot "
    "run symbols beyond the rows it was built with.",
}


def _folnet_card(
    config: Any,
    about: Any,
    model_ref: str,
    preset: str | None,
    training_data: str | None,
    report: Mapping[str, Any] | None,
    split: str,
    parameters: int | None,
    extra_limitations: str,
) -> str:
    invariant = bool(config.symbol_invariant)
    relations = ["clipped relative distance"]
    if invariant:
        relations.append("same symbol")
    if config.token_arities is not None:
        relations.append("parse-tree relation")
    return render_card(
        "folnet",
        title=f"FOLNet{' (renaming-invariant)' if invariant else ''}: {about.name}",
        task=about.name,
        task_description=about.description,
        variant="the renaming-invariant relational variant" if invariant else "one embedding per token",
        intended_use=about.intended_use,
        model_ref=model_ref,
        example_input=about.example,
        preset=preset or "custom",
        operators=", ".join(config.operators),
        unary_dim=config.unary_dim,
        heads=config.num_heads,
        head_dim=config.head_dim,
        binary_dim=config.binary_dim,
        layers=f"{config.num_layers}+{config.decoder_layers}",
        ffn=f"{config.ffn_dim} / {config.binary_ffn_dim}",
        max_relative_distance=config.max_relative_distance,
        base_relations=", ".join(relations),
        parameters=f"{parameters:,}" if parameters is not None else "see config",
        training_data=training_data or "Not recorded.",
        evaluation=evaluation_table(report, split),
        invariance=FOLNET_INVARIANCE[invariant],
        extra_limitations=extra_limitations,
    )


DTE_ARCHITECTURES = {
    ("dtm", "oracle"): "Differentiable Tree Machine (one transformer layer per step)",
    ("dte", "oracle"): "Differentiable Tree Experts (one mixture of experts shared by every step)",
    ("dte", "sluggish"): "Terminating Differentiable Tree Experts (the number of steps is learned)",
    ("dtm", "sluggish"): "Differentiable Tree Machine with the sluggish termination",
}


def _dte_card(
    config: Any,
    about: Any,
    model_ref: str,
    training_data: str | None,
    report: Mapping[str, Any] | None,
    split: str,
    parameters: int | None,
    extra_limitations: str,
) -> str:
    architecture = DTE_ARCHITECTURES[(config.controller, config.termination)]
    experts = f"sparse, top {config.top_k}" if config.top_k < config.num_experts else "dense"
    return render_card(
        "dte",
        title=f"{architecture.split(' (')[0]}: {about.name}",
        task=about.name,
        task_description=about.description,
        architecture=architecture,
        intended_use=about.intended_use,
        model_ref=model_ref,
        example_input=about.example,
        controller="a transformer layer per step"
        if config.controller == "dtm"
        else f"mixture of {config.num_experts} experts ({experts}) and a router",
        termination="oracle (a fixed number of steps)"
        if config.termination == "oracle"
        else "sluggish (damper and explorer predictors)",
        steps=config.num_steps,
        max_depth=config.max_depth,
        num_roles=2 ** (config.max_depth + 1) - 1,
        filler_dim=config.filler_dim,
        max_symbols=config.max_symbols,
        d_model=config.d_model,
        heads=config.num_heads,
        ffn=config.ffn_dim,
        parameters=f"{parameters:,}" if parameters is not None else "see config",
        training_data=training_data or "Not recorded.",
        evaluation=evaluation_table(report, split),
        extra_limitations=extra_limitations,
    )
