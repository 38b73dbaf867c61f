"""One way to check a config of any family, derived from its fields' declarations.

A field's type annotation says what it holds: ``int``, ``float`` (an int is a float too), ``bool`` (a flag is never
1, a size never True), ``str``, ``Literal["a", "b"]`` (the allowed values), ``list[int]``, ``X | None`` (None
allowed). A field declared with :func:`architecture` changes what the weights compute: ``save_pretrained`` records
those fields with the weights and loading compares them (see ``loading.py``); ``required=True`` ones must be in a
checkpoint's config.json, because a default filled in for them would build another network than the one whose
weights are loaded. Cross-field rules stay with each config, in its ``validate_*`` methods (transformers' hook
names).

Each family folder holds this file as it is (Hub folders are self-contained); ``check_copies`` keeps the copies
equal.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from typing import Any, Literal, Union

#: The dtype names a config may carry (transformers resolves others inside torch, failing without naming the field).
DTYPE_NAMES = frozenset({"float32", "float16", "bfloat16", "float64", "auto"})
#: What every config.json may hold beside the fields: what ``save_pretrained`` writes for the Hub, and ``use_cache``,
#: which the Trainer sets on any model it trains.
WRITTEN_FIELDS = frozenset({"custom_pipelines", "auto_map", "architectures", "transformers_version", "use_cache"})


def architecture(default: Any, *, required: bool = False) -> Any:
    """A field that changes what the weights compute (``required``: a checkpoint's config.json must carry it)."""
    return dataclasses.field(default=default, metadata={"architecture": True, "required": required})


def _own_fields(config_class: type) -> list[dataclasses.Field]:
    """The fields the family's classes declare (``PreTrainedConfig``'s others are transformers' to check)."""
    from transformers import PreTrainedConfig

    declared = {
        name
        for cls in config_class.__mro__
        if issubclass(cls, PreTrainedConfig) and cls is not PreTrainedConfig
        for name in vars(cls).get("__annotations__", {})
    }
    return [field for field in dataclasses.fields(config_class) if field.name in declared]


@functools.cache
def field_types(config_class: type) -> dict[str, Any]:
    """Each declared field's type (the annotation, resolved)."""
    from transformers import PreTrainedConfig

    hints: dict[str, Any] = {}
    for cls in reversed(config_class.__mro__):  # a subclass's declaration wins
        if issubclass(cls, PreTrainedConfig) and cls is not PreTrainedConfig:
            names = vars(sys.modules[cls.__module__])
            for name, hint in vars(cls).get("__annotations__", {}).items():
                hints[name] = eval(hint, names) if isinstance(hint, str) else hint  # noqa: S307 (the class's own text)
    return {field.name: hints[field.name] for field in _own_fields(config_class) if field.name in hints}


@functools.cache
def architecture_fields(config_class: type) -> tuple[str, ...]:
    return tuple(f.name for f in _own_fields(config_class) if f.metadata.get("architecture"))


@functools.cache
def required_fields(config_class: type) -> tuple[str, ...]:
    return tuple(f.name for f in _own_fields(config_class) if f.metadata.get("required"))


def type_name(kind: Any) -> str:
    """How a message names a type: ``int``, ``float or int``, ``one of ('a', 'b')``, ``list of int``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Literal:
        return f"one of {args}"
    if origin in (Union, types.UnionType):
        return " or ".join("None" if arg is type(None) else type_name(arg) for arg in args)
    if origin in (list, tuple):
        return f"a list of {type_name(args[0])}" if args else "a list"
    if kind is float:
        return "float or int"
    return getattr(kind, "__name__", str(kind))


def value_fits(kind: Any, value: Any) -> bool:
    """Whether ``value`` is of the declared type ``kind``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if kind is type(None):
        return value is None
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin in (Union, types.UnionType):
        return any(value_fits(arg, value) for arg in args)
    if origin in (list, tuple):
        return isinstance(value, (list, tuple)) and all(value_fits(args[0], item) for item in value) if args else True
    if origin is dict:
        return isinstance(value, dict)
    if kind is bool:
        return isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def value_problem(config_class: type, name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the field ``name`` (None if it can, or if the field declares no type)."""
    kind = field_types(config_class).get(name)
    if kind is None or value_fits(kind, value):
        return None
    choices = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    if typing.get_origin(kind) is Literal or (len(choices) == 1 and typing.get_origin(choices[0]) is Literal):
        return f"unknown value {value!r}; choose {type_name(kind)}"
    return f"must be {type_name(kind)}, got {value!r} ({type(value).__name__})"


def check_fields(config: Any, dtype: Any = None) -> None:
    """Raise ``ValueError`` naming the first field whose value its declaration does not allow (and an unknown dtype
    name): types first, before any field is used, so that a wrong one fails here and not deep in torch."""
    name = type(config).__name__
    for field in field_types(type(config)):
        problem = value_problem(type(config), field, getattr(config, field))
        if problem is not None:
            raise ValueError(f"{name}.{field}: {problem}")
    dtype = getattr(config, "dtype", None) if dtype is None else dtype
    if isinstance(dtype, str) and dtype not in DTYPE_NAMES:
        raise ValueError(f"{name}.dtype: unknown dtype {dtype!r}; choose one of {sorted(DTYPE_NAMES)}")


def check_config_dict(config_class: type, config_dict: dict[str, Any], given: dict[str, Any]) -> None:
    """Refuse a checkpoint's config.json with a field no config of ``config_class`` has (a typo is not silently
    stored), without a required architecture field, or with label maps not keyed by label ids."""
    from transformers import PreTrainedConfig

    known = set(config_class.__dataclass_fields__) | set(PreTrainedConfig().to_dict()) | WRITTEN_FIELDS
    known |= set(config_class().to_dict())
    unknown = sorted(set(config_dict) - known)
    kind = config_class.model_type
    if unknown:
        raise ValueError(
            f"this {kind} checkpoint's config has unknown field(s) {', '.join(unknown)}: a typo, or a config.json "
            "written for another model"
        )
    for field in ("id2label", "label2id"):
        mapping = config_dict.get(field)
        if mapping is not None and not isinstance(mapping, dict):
            raise ValueError(f"{config_class.__name__}.{field}: must be a mapping, got {mapping!r}")
    bad_labels = [key for key in (config_dict.get("id2label") or {}) if not str(key).lstrip("-").isdigit()]
    if bad_labels:
        raise ValueError(f"{config_class.__name__}.id2label: keys must be label ids (integers), got {bad_labels!r}")
    missing = [field for field in required_fields(config_class) if field not in config_dict and field not in given]
    if missing:
        raise ValueError(
            f"this {kind} checkpoint's config lacks the field(s) {', '.join(missing)}; it was not written by "
            f"{config_class.__name__}.save_pretrained or has been edited. Add the missing field(s) to config.json "
            "with the values the weights were trained with."
        )
