"""Every family's presets by name, and a new model for a task from one: the one place that ties a preset to its
family and to a task's vocabulary (``symbolinv train --preset``, the benchmarks).

SIT presets (``prop-best``, ``ltl-vanilla``, ``kinship``, ...) are each for one vocabulary; FOLNet presets
(``folnet-small``, ``folnet-base``, ...) are sizes, given the task's vocabulary here: its base tokens, its
symbol slots, its Polish-notation arities (the parse-tree relations of the invariant variant) where it has
any, and the special token ids of the family's tokenizer. DTE presets (``dtm-small``, ``dte-small``,
``dte-sparse-small``, ``tdte-small`` and their ``-paper`` widths) are for the tree tasks (``tree``, ``nnf``),
whose labels come from :func:`tree_tokenizer`.
"""

from __future__ import annotations

from typing import Any

from .models.dte.configuration_dte import PRESETS as DTE_PRESETS
from .models.dte.configuration_dte import DTEConfig
from .models.folnet.configuration_folnet import PRESETS as FOLNET_PRESETS
from .models.folnet.configuration_folnet import FOLNetConfig
from .models.symbolinv.configuration_symbolinv import DEFAULT_MAX_SYMBOLS, SymbolInvConfig
from .models.symbolinv.configuration_symbolinv import PRESETS as SIT_PRESETS
from .models.symbolinv.vocabulary import EOS_ID, PAD_ID, START_ID, get_vocabulary
from .tasks import get_task

#: Preset name -> the config class of its family.
PRESET_CONFIGS: dict[str, type] = {
    **{name: SymbolInvConfig for name in SIT_PRESETS},
    **{name: FOLNetConfig for name in FOLNET_PRESETS},
    **{name: DTEConfig for name in DTE_PRESETS},
}
#: The tasks the tree family (DTE presets) is for.
TREE_TASKS = ("tree", "nnf")


def preset_config_class(preset: str) -> type:
    """The config class of ``preset``'s family; ``ValueError`` naming the presets for an unknown one."""
    if preset not in PRESET_CONFIGS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(sorted(PRESET_CONFIGS))}")
    return PRESET_CONFIGS[preset]


def new_model_config(preset: str, task: str, **overrides: Any) -> Any:
    """The config of a new model of ``preset`` for ``task``, with ``overrides`` (config fields).

    ``ValueError`` (naming the preset, the task or the field) for an unknown preset, a SIT preset of another
    vocabulary, or a bad field.
    """
    config_class = preset_config_class(preset)
    if config_class is DTEConfig:
        if task not in TREE_TASKS:
            raise ValueError(f"preset `{preset}` is for the tree tasks ({', '.join(TREE_TASKS)}), not task {task!r}")
        config = DTEConfig.from_preset(preset, **overrides)
        tokenizer = tree_tokenizer(task, config.max_depth, config.max_symbols)
        # The labels are the task's: overriding vocab_size or vocabulary would only break the model's checks.
        fixed = {"vocab_size": tokenizer.vocab_size, "vocabulary": get_task(task).vocabulary}
        return DTEConfig.from_preset(preset, **_with_fixed_fields(task, overrides, fixed))
    if task in TREE_TASKS:
        raise ValueError(f"task {task!r} is for the tree family: choose a DTE preset ({', '.join(DTE_PRESETS)})")
    vocabulary = get_vocabulary(get_task(task).vocabulary)
    if config_class is SymbolInvConfig:
        config = SymbolInvConfig.from_preset(preset, **overrides)
        if config.vocabulary != vocabulary.name:
            raise ValueError(f"preset `{preset}` is for the {config.vocabulary!r} vocabulary, not task {task!r}")
        return config
    arities = vocabulary.arity_list()
    fields: dict[str, Any] = dict(
        vocabulary=vocabulary.name,
        num_base_tokens=vocabulary.num_base_tokens,
        # Tree relations need inputs that are whole Polish-notation formulas: tasks without operators have none.
        token_arities=arities if any(arities) else None,
        pad_token_id=PAD_ID,
        bos_token_id=START_ID,  # the tokenizer's; the Trainer would otherwise "align" it with a warning
        eos_token_id=EOS_ID,
        decoder_start_token_id=START_ID,
    )
    # vocab_size is the model's own choice: the base tokens and as many symbol slots as it wants.
    overrides = {"vocab_size": vocabulary.num_base_tokens + DEFAULT_MAX_SYMBOLS, **overrides}
    return FOLNetConfig.from_preset(preset, **_with_fixed_fields(task, overrides, fields))


def _with_fixed_fields(task: str, overrides: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` with the fields the task and its tokenizer fix; an override of one of them to another value is
    refused, naming both values (it would otherwise be replaced without a word)."""
    for field, value in overrides.items():
        if field in fixed and value != fixed[field]:
            raise ValueError(
                f"--set {field}={value!r}: task {task!r} and its tokenizer fix {field} to {fixed[field]!r}; "
                "leave it out"
            )
    return {**overrides, **fixed}


def tree_tokenizer(task: str, max_depth: int, max_symbols: int) -> Any:
    """The DTE tokenizer of a task: ``tree`` (bracketed trees, the tree tasks' base labels and symbol rule) or
    ``nnf`` (propositional formulas in Polish notation, letters as symbols)."""
    from .models.dte import DTETreeTokenizer
    from .tasks.nnf import NNF_ARITIES
    from .tasks.trees import TREE_BASE_LABELS, TREE_SYMBOL_PATTERN

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


__all__ = ["PRESET_CONFIGS", "TREE_TASKS", "new_model_config", "preset_config_class", "tree_tokenizer"]
