"""Presets by name, kept for code written against earlier versions: each family now declares its presets and how a
new config is made from one in its ``family.py`` (see :mod:`hf_symbolinv.models.registry`)."""

from __future__ import annotations

from typing import Any


def preset_config_class(preset: str) -> type:
    """The config class of ``preset``'s family; ``ValueError`` naming the presets for an unknown one."""
    from .models.registry import family_of_preset

    return family_of_preset(preset).config_class


def new_model_config(preset: str, task: str, **overrides: Any) -> Any:
    """The config of a new model of ``preset`` for ``task``, with ``overrides`` (config fields); ``ValueError``
    naming the preset, the task or the field."""
    from .models.registry import family_of_preset

    family = family_of_preset(preset)
    family.check_task(task, f"preset `{preset}`")
    return family.new_config(preset, task, overrides, {})


def tree_tokenizer(task: str, max_depth: int, max_symbols: int) -> Any:
    """The DTE tokenizer of a tree task (``tree`` or ``nnf``)."""
    from .models.dte.family import tree_tokenizer as of_family

    return of_family(task, max_depth, max_symbols)


__all__ = ["new_model_config", "preset_config_class", "tree_tokenizer"]
