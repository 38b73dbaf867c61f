"""The model families. Importing this package imports every built-in family and registers it (its ``family.py``,
see :mod:`.registry`): with the CLI, training and evaluation, and with the Auto classes and the pipeline registry;
``save_pretrained`` then also writes ``auto_map`` and copies the family's files next to the weights, so a saved
folder loads with ``trust_remote_code=True`` where this package is not installed.

The public names of every family (each family package's ``__all__``) are this package's too
(``from hf_symbolinv.models import SymbolInvConfig``), except names that two families both define (``PRESETS``):
those are read from the family's own package.
"""

from __future__ import annotations

import importlib
from typing import Any

from .registry import (
    Family,
    Route,
    families,
    family_of_preset,
    get_family,
    get_route,
    register_family,
    register_route,
)

#: The built-in families, each a folder with its ``family.py``: adding a family is one more name here.
BUILT_IN_FAMILIES = ("symbolinv", "symbolinv_wrapper", "folnet", "dte")


def _import_families() -> dict[str, Any]:
    """Import and register every built-in family; its public names, less those two families share."""
    exported: dict[str, Any] = {}
    shared: set[str] = set()
    for name in BUILT_IN_FAMILIES:
        package = importlib.import_module(f".{name}", __name__)
        importlib.import_module(f".{name}.family", __name__)  # registers the family
        for public in package.__all__:
            value = getattr(package, public)
            if public in exported and exported[public] is not value:
                shared.add(public)
            exported[public] = value
    return {public: value for public, value in exported.items() if public not in shared}


_FAMILY_NAMES = _import_families()
globals().update(_FAMILY_NAMES)

__all__ = [
    "BUILT_IN_FAMILIES",
    "Family",
    "Route",
    "families",
    "family_of_preset",
    "get_family",
    "get_route",
    "register_family",
    "register_route",
    *sorted(_FAMILY_NAMES),
]
