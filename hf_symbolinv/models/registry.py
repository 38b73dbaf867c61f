"""The family registry: what the rest of the package knows of a model family, in one declaration per family.

Each family folder holds a ``family.py`` (never copied to the Hub, never imported by the modeling files) that
builds a :class:`Family` and passes it to :func:`register_family`: its ``model_type``, its preset names, the
tasks it serves, its route (how it is trained, evaluated and asked: ``seq2seq`` or ``tree``), how it makes a new
config from a preset and a task, its tokenizer, its model card, and its Auto-class registration. The CLI, training
and evaluation look a family up by ``config.json``'s ``model_type`` (or a preset's name) and never branch on a
family's class; a new family is one folder plus one registration (``hf_symbolinv/models/__init__.py`` imports the
built-in ones).

Routes register separately (:func:`register_route`): a family names its route (``seq2seq`` for models that
generate token sequences, ``tree`` for models that hold trees), and the route's module says how such models are
trained, evaluated and asked.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Family:
    """A model family as the package sees it.

    ``new_config(preset, task, overrides, options)`` returns the config of a new model (``options`` holds the
    family-specific CLI options that were given, e.g. ``{"embedding_type": "fixed"}``; a family refuses those it
    does not take with a ``ValueError``). ``new_tokenizer(config, task)`` returns the tokenizer a new model of
    ``config`` reads ``task`` with. ``card(config, task, fields)`` returns the model card (Markdown) from the
    fields every card has (``model_ref``, ``preset``, ``training_data``, ``evaluation``, ``parameters``,
    ``extra_limitations``, and the task's ``task``, ``task_description``, ``intended_use``, ``example_input``).
    ``register_auto()`` registers the classes with the Auto classes and pipelines (idempotent). ``config_class``
    is the family's config class (overrides are checked against its fields).
    """

    model_type: str
    name: str
    presets: tuple[str, ...]
    route: str
    config_class: type
    new_config: Callable[[str, str, dict[str, Any], dict[str, Any]], Any]
    new_tokenizer: Callable[[Any, str], Any]
    card: Callable[[Any, str, dict[str, Any]], str]
    register_auto: Callable[[], None]
    #: The tasks the family serves; ``None``: every task with a sequence-to-sequence vocabulary.
    tasks: tuple[str, ...] | None = None
    #: Family-specific ``symbolinv train`` options the family takes (argparse ``dest`` names).
    options: tuple[str, ...] = field(default=())
    #: Config fields ``symbolinv train --set`` may change on a model loaded with ``--init-from``: settings that
    #: leave every weight's shape and role as they are (a loss's weight, how a step is chosen), which the trained
    #: model then records; any other field would build another network than the weights', and is refused.
    fine_tune_fields: tuple[str, ...] = field(default=())
    #: ``load(folder) -> (model, tokenizer)`` for a route that does not load through ``AutoModelForSeq2SeqLM``
    #: (the tree route); it checks the tokenizer against the model.
    load: Callable[[Path], tuple[Any, Any]] | None = None

    def check_task(self, task: str, what: str) -> None:
        """Refuse ``task`` unless the family serves it, naming ``what`` (a preset, a folder) and the family that
        does serve it."""
        if self.tasks is not None and task not in self.tasks:
            raise ValueError(f"{what} is for the {self.route} tasks ({', '.join(self.tasks)}), not task {task!r}")
        if self.tasks is None:
            for other in _FAMILIES.values():
                if other.tasks is not None and task in other.tasks:
                    presets = ", ".join(other.presets)
                    raise ValueError(
                        f"task {task!r} is for the {other.name} family: choose one of its presets ({presets})"
                    )


@dataclass(frozen=True)
class Route:
    """How models of a route are trained, evaluated and asked (:mod:`hf_symbolinv.routes`, under the CLI).

    ``train(arguments, output, config, init_folder)`` (``arguments``: a ``routes.TrainArguments``) trains a new
    model of ``config`` or the one saved in ``init_folder`` and returns an exit status;
    ``evaluate(arguments, folder, report_path, heatmap_path)`` (a ``routes.EvaluateArguments``) writes a report;
    ``solve(folder, text)`` prints the answer to one input (``None``: the route's models answer through
    :class:`hf_symbolinv.evaluation.solve.Solver`). ``train_options_not_taken`` and ``evaluate_options_not_taken``
    name the training / evaluation arguments (with their defaults) the route does not take: given, they are
    refused.
    """

    name: str
    train: Callable[..., int]
    evaluate: Callable[..., int]
    solve: Callable[[Path, list[str]], int] | None = None
    evaluate_options_not_taken: Mapping[str, Any] = field(default_factory=dict)
    train_options_not_taken: Mapping[str, Any] = field(default_factory=dict)


_FAMILIES: dict[str, Family] = {}
#: The routes the package defines (``hf_symbolinv.routes`` registers them when it is imported).
BUILT_IN_ROUTES = ("seq2seq", "tree")
_ROUTES: dict[str, Route] = {}


def register_family(family: Family) -> None:
    """Make ``family`` known to the CLI, training and evaluation (and register its Auto classes); a second
    family with the same ``model_type`` or a preset name already taken is refused."""
    known = _FAMILIES.get(family.model_type)
    if known is not None and known is not family:
        if known.name == family.name and known.presets == family.presets:
            _FAMILIES[family.model_type] = family  # the same family again (a module reloaded)
            family.register_auto()
            return
        raise ValueError(f"a family with model_type {family.model_type!r} is already registered ({known.name})")
    if family.route not in BUILT_IN_ROUTES and family.route not in _ROUTES:
        raise ValueError(f"family {family.name}: unknown route {family.route!r} (routes: {', '.join(route_names())})")
    for other in _FAMILIES.values():
        taken = set(other.presets) & set(family.presets)
        if other is not family and taken:
            raise ValueError(f"family {family.name}: preset(s) {', '.join(sorted(taken))} belong to {other.name}")
    _FAMILIES[family.model_type] = family
    family.register_auto()


def unregister_family(model_type: str) -> None:
    """Forget the family of ``model_type`` (its Auto registrations stay: transformers has no way to undo them)."""
    _FAMILIES.pop(model_type, None)


def register_route(route: Route) -> None:
    """Make a route known by its name (a route module calls this for its ``ROUTE``)."""
    _ROUTES[route.name] = route


def families() -> list[Family]:
    """Every registered family, in registration order."""
    _load_built_in()
    return list(_FAMILIES.values())


def get_family(model_type: str) -> Family:
    """The family of ``model_type``; ``ValueError`` naming the known ones."""
    _load_built_in()
    if model_type not in _FAMILIES:
        raise ValueError(f"no model family {model_type!r} (families: {', '.join(_FAMILIES)})")
    return _FAMILIES[model_type]


def family_of_preset(preset: str) -> Family:
    """The family whose presets include ``preset``; ``ValueError`` naming every preset."""
    for family in families():
        if preset in family.presets:
            return family
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(preset_names())}")


def new_model_config(preset: str, task: str, *, options: dict[str, Any] | None = None, **overrides: Any) -> Any:
    """The config of a new model of ``preset`` (any family's) for ``task``, with ``overrides`` (config fields) and
    the family-specific ``options`` (``{"embedding_type": "fixed"}``); ``ValueError`` naming the preset, the task,
    the option or the field."""
    family = family_of_preset(preset)
    for name in options or {}:
        if name not in family.options:
            takers = " and ".join(other.name for other in families() if name in other.options)
            raise ValueError(f"--{name.replace('_', '-')} is for {takers} presets, not `{preset}`")
    family.check_task(task, f"preset `{preset}`")
    return family.new_config(preset, task, overrides, dict(options or {}))


def preset_config_class(preset: str) -> type:
    """The config class of ``preset``'s family; ``ValueError`` naming the presets for an unknown one."""
    return family_of_preset(preset).config_class


def preset_names() -> list[str]:
    """Every registered family's preset names, sorted."""
    return sorted(name for family in families() for name in family.presets)


def route_names() -> list[str]:
    return sorted(set(BUILT_IN_ROUTES) | set(_ROUTES))


def get_route(name: str) -> Route:
    """The route ``name`` (the built-in routes are registered on first use: they import torch)."""
    if name not in _ROUTES and name in BUILT_IN_ROUTES:
        importlib.import_module(f"{__package__.rpartition('.')[0]}.routes")  # registers every built-in route
    if name not in _ROUTES:
        raise ValueError(f"no route {name!r} (routes: {', '.join(route_names())})")
    return _ROUTES[name]


def folder_model_type(folder: Path) -> str | None:
    """The ``model_type`` in a saved folder's ``config.json`` (None when it cannot be read): which family a folder
    holds, without loading it."""
    try:
        return json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def folder_family(folder: Path) -> Family | None:
    """The registered family of the model a saved folder holds (None: no registered family's)."""
    model_type = folder_model_type(folder)
    _load_built_in()
    return _FAMILIES.get(model_type) if model_type is not None else None


def folder_route(folder: Path) -> Route:
    """The route of the family a saved folder holds; the ``seq2seq`` route for a folder of no registered family
    (loading it then names what is wrong)."""
    family = folder_family(folder)
    return get_route(family.route if family is not None else "seq2seq")


def with_fixed_fields(task: str, overrides: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` with the fields the task and its tokenizer fix; an override of one of them to another value is
    refused, naming both values (it would otherwise be replaced without a word)."""
    for name, value in overrides.items():
        if name in fixed and value != fixed[name]:
            raise ValueError(
                f"--set {name}={value!r}: task {task!r} and its tokenizer fix {name} to {fixed[name]!r}; leave it out"
            )
    return {**overrides, **fixed}


def _load_built_in() -> None:
    # The built-in families register when the models package is imported (it imports torch and transformers).
    importlib.import_module("hf_symbolinv.models")


__all__ = [
    "Family",
    "Route",
    "families",
    "family_of_preset",
    "folder_family",
    "folder_model_type",
    "folder_route",
    "get_family",
    "get_route",
    "new_model_config",
    "preset_config_class",
    "preset_names",
    "register_family",
    "register_route",
    "unregister_family",
    "route_names",
    "with_fixed_fields",
]
