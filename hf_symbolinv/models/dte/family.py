"""The tree family (DTM, DTE, Terminating DTE) as the package knows it (see :mod:`hf_symbolinv.models.registry`).

Its presets (``dtm-small``, ``dte-small``, ``dte-sparse-small``, ``tdte-small`` and their ``-paper`` widths) are
for the tree tasks (``tree``, ``nnf``), whose labels come from :func:`tree_tokenizer`; it is trained, evaluated
and asked by the ``tree`` route. Not a Hub file: the modeling files never import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..registry import Family, register_family, with_fixed_fields
from .configuration_dte import PRESETS, DTEConfig

#: The tasks the tree family is for.
TREE_TASKS = ("tree", "nnf")

DTE_ARCHITECTURES = {
    ("dtm", "oracle"): "Differentiable Tree Machine (one transformer layer per step)",
    ("dte", "oracle"): "Differentiable Tree Experts (one mixture of experts shared by every step)",
    ("dte", "sluggish"): "Terminating Differentiable Tree Experts (the number of steps is learned)",
    ("dtm", "sluggish"): "Differentiable Tree Machine with the sluggish termination",
}


def tree_tokenizer(task: str, max_depth: int, max_symbols: int) -> Any:
    """The DTE tokenizer of a task: ``tree`` (bracketed trees, the tree tasks' base labels and symbol rule) or
    ``nnf`` (propositional formulas in Polish notation, letters as symbols)."""
    from ...tasks.nnf import NNF_ARITIES
    from ...tasks.trees import TREE_BASE_LABELS, TREE_SYMBOL_PATTERN
    from .tokenization_dte import DTETreeTokenizer

    if task == "tree":
        return DTETreeTokenizer(
            list(TREE_BASE_LABELS), max_depth=max_depth, max_symbols=max_symbols, symbol_pattern=TREE_SYMBOL_PATTERN
        )
    if task == "nnf":
        return DTETreeTokenizer(
            list(NNF_ARITIES),
            max_depth=max_depth,
            max_symbols=max_symbols,
            symbol_pattern="[a-z]",
            input_format="polish",
            arities=NNF_ARITIES,
        )
    raise ValueError(f"task {task!r} is not a tree task; the DTE family takes task tree or nnf")


def new_config(preset: str, task: str, overrides: dict[str, Any], options: dict[str, Any]) -> DTEConfig:
    from ...tasks import get_task

    if task not in TREE_TASKS:
        raise ValueError(f"preset `{preset}` is for the tree tasks ({', '.join(TREE_TASKS)}), not task {task!r}")
    config = DTEConfig.from_preset(preset, **overrides)
    tokenizer = tree_tokenizer(task, config.max_depth, config.max_symbols)
    # The labels are the task's: overriding vocab_size or vocabulary would only break the model's checks.
    fixed = {"vocab_size": tokenizer.vocab_size, "vocabulary": get_task(task).vocabulary}
    return DTEConfig.from_preset(preset, **with_fixed_fields(task, overrides, fixed))


def new_tokenizer(config: Any, task: str) -> Any:
    return tree_tokenizer(task, config.max_depth, config.max_symbols)


def card(config: Any, task: str, fields: dict[str, Any]) -> str:
    from ...utils.model_card import render_card

    architecture = DTE_ARCHITECTURES[(config.controller, config.termination)]
    experts = f"sparse, top {config.top_k}" if config.top_k < config.num_experts else "dense"
    return render_card(
        "dte",
        **fields,
        title=f"{architecture.split(' (')[0]}: {task}",
        architecture=architecture,
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
    )


def load(folder: Path) -> tuple[Any, Any]:
    """The model and tokenizer of a saved folder of the family; a tokenizer of other labels than the model's
    is refused naming both."""
    import torch

    from ...tasks import task_for_vocabulary
    from .modeling_dte import DTEForTreeTransduction
    from .tokenization_dte import DTETreeTokenizer

    model = DTEForTreeTransduction.from_pretrained(folder, dtype=torch.float32).eval()  # whatever the folder stores
    tokenizer = DTETreeTokenizer.from_pretrained(folder)
    tokenizer.check_model_config(model.config)
    if model.config.vocabulary is not None:
        # The sizes agree; the labels, in order, must be the task's too (two swapped labels keep every size).
        task = task_for_vocabulary(model.config.vocabulary).name
        expected = tree_tokenizer(task, model.config.max_depth, tokenizer.max_symbols)
        ours, theirs = tokenizer.labels, expected.labels
        differ = [i for i, (mine, task_label) in enumerate(zip(ours, theirs)) if mine != task_label]
        if differ or tokenizer.symbol_pattern != expected.symbol_pattern:
            where = (
                f"label {differ[0]} is {ours[differ[0]]!r}, task {task!r} has {theirs[differ[0]]!r}"
                if differ
                else f"symbol pattern {tokenizer.symbol_pattern!r}, task {task!r} has {expected.symbol_pattern!r}"
            )
            raise ValueError(f"the tokenizer in {folder} does not match the model's task: {where}")
    return model, tokenizer


def register_auto() -> None:
    # Trees in, trees out: no task-specific Auto class fits, so the transducer is the family's AutoModel.
    from transformers import AutoConfig, AutoModel

    from .modeling_dte import DTEForTreeTransduction
    from .pipeline_dte import register_pipeline

    AutoConfig.register(DTEConfig.model_type, DTEConfig, exist_ok=True)
    DTEConfig.register_for_auto_class()
    AutoModel.register(DTEConfig, DTEForTreeTransduction, exist_ok=True)
    DTEForTreeTransduction.register_for_auto_class("AutoModel")
    register_pipeline()


FAMILY = Family(
    model_type=DTEConfig.model_type,
    name="Differentiable Tree Experts",
    presets=tuple(PRESETS),
    route="tree",
    config_class=DTEConfig,
    new_config=new_config,
    new_tokenizer=new_tokenizer,
    card=card,
    register_auto=register_auto,
    tasks=TREE_TASKS,
    # How a loaded model steps and learns, none of them a weight's shape or role: a model trained blended is
    # trained further with its steps chosen (hardness), its controller reading fewer levels, another loss weight.
    fine_tune_fields=("hardness", "controller_depth", "mse_weight", "dropout"),
    load=load,
)
register_family(FAMILY)
