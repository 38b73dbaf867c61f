"""hf_symbolinv: neural models for symbolic reasoning as Hugging Face model families.

Importing the package is cheap: it imports neither torch nor transformers, so the logic engine
(``hf_symbolinv.logic``) and the command line start fast. Public names (``SymbolInvConfig``, ...: every
family's, see :mod:`hf_symbolinv.models`) are loaded on first use. The families register with the Auto classes
(``AutoConfig``, ``AutoModelForSeq2SeqLM``, ``AutoTokenizer``, the ``symbolic-generation`` pipeline) as soon as
transformers is in use: at once if it is already imported, else right after the program imports it,
or when a public model name is first touched. ``hf_symbolinv.register()`` does it explicitly.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: Public names of the package's own modules, loaded on first use. The families' public names come from
#: :mod:`hf_symbolinv.models`, which lists every built-in family.
_LAZY = {
    "SymbolRule": "utils.symbols",
    "PRESETS": "models.symbolinv",  # the SIT's presets, as earlier versions exported them
    # Training, evaluating and asking models from Python (the library under the command line).
    "TrainArguments": "routes",
    "EvaluateArguments": "routes",
    "train": "routes",
    "evaluate": "routes",
    "answer": "routes",
}

__all__ = ["__version__", "register", *sorted(_LAZY)]


def register() -> None:
    """Import every model family, registering it with the Auto classes (idempotent)."""
    import_module(f"{__name__}.models")


#: Modules that moved, by their old name, and where they are now: ``import hf_symbolinv.files`` and
#: ``from hf_symbolinv.presets import new_model_config`` keep working (the same module objects).
MOVED_MODULES = {
    "files": "utils.files",
    "symbols": "utils.symbols",
    "trees": "utils.trees",
    "check_copies": "utils.check_copies",
    "model_card": "utils.model_card",
    "presets": "models.registry",
    "convert": "models.symbolinv.conversion",
    "copy_task": "tasks.copy",
    "multiset": "models.symbolinv.pooling",
    "evaluation.evaluate": "evaluation.seq2seq",
    "evaluation.trees": "evaluation.tree",
    "evaluation.metrics": "utils.metrics",
    "training.trees": "training.tree",
    "commands.seq2seq_route": "routes.seq2seq",
    "commands.tree_route": "routes.tree",
    "commands.demo": "routes.demo",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module's old name as the module it is now."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(f"{__name__}.") or fullname[len(__name__) + 1 :] not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> Any:
        return import_module(f"{__name__}.{MOVED_MODULES[spec.name[len(__name__) + 1 :]]}")

    def exec_module(self, module: Any) -> None:
        pass  # the module it now is has run already


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    # Class and constant names only: ``from hf_symbolinv import logic`` asks for a submodule this way first.
    if name[:1].isupper():
        models = import_module(f"{__name__}.models")
        if name in models.__all__:
            return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _RegisterAfterTransformers(importlib.abc.MetaPathFinder):
    """Registers the families right after ``transformers`` is first imported.

    ``import hf_symbolinv`` must make ``AutoModel.from_pretrained`` know the families, but must not
    import torch or transformers itself (the logic engine and the CLI stay light). Registering needs
    transformers, so it waits for the program to import it: this finder wraps the loader of the
    ``transformers`` module and registers once that module has executed.
    """

    def __init__(self) -> None:
        self._looking = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "transformers" or self._looking:
            return None
        self._looking = True
        try:  # the spec the other finders would give
            spec = next(
                (
                    found
                    for finder in sys.meta_path
                    if finder is not self and hasattr(finder, "find_spec")
                    for found in [finder.find_spec(fullname, path, target)]
                    if found is not None
                ),
                None,
            )
        finally:
            self._looking = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            # A family module importing transformers registers itself when the models package finishes.
            if f"{__name__}.models" not in sys.modules:
                register()

        spec.loader.exec_module = exec_and_register
        return spec


if "transformers" in sys.modules:
    register()
elif not any(isinstance(finder, _RegisterAfterTransformers) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterTransformers())
