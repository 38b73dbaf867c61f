"""Builders of the benchmark datasets of the papers, as Hugging Face datasets built locally.

* :mod:`.ltl_random35` (``ltl-*``), :mod:`.prop_random35` (``prop-*``), :mod:`.copy_task`
  (``copy-*``), :mod:`.kinship` (``kinship*``), :mod:`.trees` (:data:`TREE_CONFIG_NAMES`: the tree-to-tree
  data of the DTM / DTE family): one module per family, each with a ``build_*`` function returning a
  ``datasets.DatasetDict``; :func:`build` dispatches by configuration name.
* :func:`load_deepltl` reads the original DeepLTL ``train.txt``/``val.txt``/``test.txt`` files,
  :func:`load_dtm` the original DTM ``*.jsonl`` files.
* :func:`push_dataset` publishes a built directory to the Hub.
* every builder takes what a build is asked for as one :class:`~dataset_builders.params.BuildOptions`.
* the shared machinery, by concern: :mod:`.generation` (deterministic, parallel, resumable sampling),
  :mod:`.output` (output folders: locked, checked, written atomically), :mod:`.params` (configurations
  and build options), :mod:`.logic_tasks` (the logic datasets' sources and build), :mod:`.cards`
  (dataset cards), :mod:`.deepltl` (the original DeepLTL files), :mod:`.hub` (publishing) and
  :mod:`.errors` (what they raise: ``ValueError`` subclasses, one line naming the path).

Command line: ``symbolinv data build NAME --out DIR`` and ``symbolinv data push DIR REPO_ID``.
A built directory loads with ``datasets.load_dataset(DIR)``.

This module stays light (the command line lists :data:`CONFIG_NAMES` without importing
``datasets``); everything else is imported on first use.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import TYPE_CHECKING, Any

from .errors import OutputInUseError

if TYPE_CHECKING:
    from .params import BuildOptions

#: How often ``build(..., wait_seconds=...)`` looks again whether another process still holds the folder.
WAIT_POLL_SECONDS = 5.0
#: A ``wait_seconds`` for jobs that share one dataset folder (training calls and evaluations started side by side):
#: long enough for the other to build it.
SHARED_WAIT_SECONDS = 1800.0

#: The tree configurations (:mod:`.trees`; their names share no family prefix).
TREE_CONFIG_NAMES: tuple[str, ...] = (
    "car-cdr-seq",
    "tree-reverse",
    "active-logical",
    "passive-logical",
    "actpass-logical",
    "active-passive",
    "nnf",
)
#: Every configuration, by family (checked against the family modules by the tests).
CONFIG_NAMES: tuple[str, ...] = (
    "ltl-35",
    "ltl-35-10sym",
    "ltl-35-supp",
    "ltl-35-renamed",
    "ltl-35-reduced",
    "ltl-heatmap",
    "ltl-small",
    "ltl-small-8sym",
    "prop-35",
    "prop-35-10sym",
    "prop-35-supp",
    "prop-35-renamed",
    "prop-35-reduced",
    "prop-heatmap",
    "prop-small",
    "prop-small-8sym",
    "copy-small",
    "copy-large",
    "copy-small-grid",
    "copy-large-grid",
    "kinship",
    "kinship-shuffled",
    "kinship-test",
    *TREE_CONFIG_NAMES,
)

_LAZY = {
    "build_ltl_random35": ".ltl_random35",
    "build_prop_random35": ".prop_random35",
    "build_copy_task": ".copy_task",
    "build_kinship": ".kinship",
    "build_trees": ".trees",
    "BuildOptions": ".params",
    "push_dataset": ".hub",
    "is_built_dataset": ".output",
    "DeepLTLFormatError": ".deepltl",
    "DTMFormatError": ".dtm",
    "DatasetBuildError": ".errors",
    "OutputDirError": ".errors",
    "OutputInUseError": ".errors",
    "ParametersChangedError": ".errors",
    "EmptyDatasetError": ".errors",
    "FEATURES": ".output",
}

__all__ = ["CONFIG_NAMES", "TREE_CONFIG_NAMES", "build", "configs", "load_deepltl", "load_dtm", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _family_modules() -> dict[str, Any]:
    return {
        "ltl": importlib.import_module(".ltl_random35", __name__),
        "prop": importlib.import_module(".prop_random35", __name__),
        "copy": importlib.import_module(".copy_task", __name__),
        "kinship": importlib.import_module(".kinship", __name__),
        "trees": importlib.import_module(".trees", __name__),
    }


def configs() -> dict[str, Any]:
    """Every configuration's :class:`~dataset_builders.params.ConfigSpec`, by name."""
    out: dict[str, Any] = {}
    for module in _family_modules().values():
        out.update(module.CONFIGS)
    return out


def build(
    name: str,
    out_dir: str | os.PathLike | None = None,
    options: BuildOptions | None = None,
    wait_seconds: float = 0.0,
) -> Any:
    """Build configuration ``name`` (one of :data:`CONFIG_NAMES`) as ``options`` ask (a :class:`BuildOptions`:
    ``num_samples``, ``num_symbols``, ``max_size``, ``seed``, ``workers``, ``progress``, ``overwrite``; ``timeout``
    for LTL, ``max_depth`` for the trees; default: the configuration's parameters) and return its ``DatasetDict``,
    e.g. ``build("ltl-small", "data/ltl-small", BuildOptions(num_samples=1000, seed=1))``.

    Errors are :class:`DatasetBuildError` (a ``ValueError``, one line naming the path): another build
    writing ``out_dir`` (:class:`OutputInUseError`), a dataset of other parameters there without
    ``overwrite`` (:class:`ParametersChangedError`), an unusable folder (:class:`OutputDirError`),
    no sample at all (:class:`EmptyDatasetError`); an option the family does not use is a ``ValueError``.

    ``wait_seconds``: how long to wait while another process holds ``out_dir`` before the refusal, for jobs that
    share one dataset (a training run and an evaluation started side by side each build it or check that it is
    built, and the second would otherwise fail at once on the first's lock)."""
    if name not in CONFIG_NAMES:
        raise ValueError(f"unknown dataset configuration {name!r}; choose one of {', '.join(CONFIG_NAMES)}")
    modules = _family_modules()
    family = "trees" if name in TREE_CONFIG_NAMES else name.split("-", 1)[0]
    builder = {
        "ltl": modules["ltl"].build_ltl_random35,
        "prop": modules["prop"].build_prop_random35,
        "copy": modules["copy"].build_copy_task,
        "kinship": modules["kinship"].build_kinship,
        "trees": modules["trees"].build_trees,
    }[family]
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return builder(name, out_dir, options)
        except OutputInUseError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(WAIT_POLL_SECONDS, left))


def load_deepltl(path: str | os.PathLike, task: str = "auto", check: bool = False) -> Any:
    """Read the original DeepLTL files (``train.txt``, ``val.txt``, ``test.txt`` in ``path``; lines
    alternate input and target) into a ``DatasetDict`` with the builders' features (splits
    ``train``, ``validation``, ``test``, whichever files exist).

    ``task`` is ``ltl`` (formula and trace), ``prop`` (formula, with ``<->``/``xor`` or ``=``/``^``,
    and assignment) or ``auto`` (decided by the first target line: a trace has ``;`` or ``{``).
    Formulas and targets are normalised to the model vocabulary; with ``check`` every target is
    verified with the checker. A malformed file (also an empty, binary or non-UTF-8 one) raises
    :class:`DeepLTLFormatError` naming the path and line; a UTF-8 byte-order mark is skipped.
    """
    from .deepltl import detect_task, read_deepltl

    modules = _family_modules()
    if task == "auto":
        task = detect_task(path)
    tasks = {"ltl": modules["ltl"].LTL_TASK, "prop": modules["prop"].PROP_TASK}
    if task not in tasks:
        raise ValueError(f"task must be 'ltl', 'prop' or 'auto', got {task!r}")
    return read_deepltl(path, tasks[task], check=check)


def load_dtm(path: str | os.PathLike) -> Any:
    """Read the original DTM data files (a folder of ``*.jsonl`` split files, each line a JSON object with
    ``source`` and ``target`` trees such as ``( S ( NP ( DET the ) ( N dog ) ) ... )``) into a ``DatasetDict``
    with the builders' features; unary nodes become binary ones with an empty right child (``(X c _)``).
    ``train``/``dev``/``test`` become ``train``/``validation``/``test``; other files keep their name. A
    malformed line (bad JSON, a missing key, a tree that does not parse) raises :class:`DTMFormatError`
    naming the file and the line."""
    from .dtm import load_dtm as read

    return read(path)
