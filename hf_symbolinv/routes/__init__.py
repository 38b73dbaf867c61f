"""Training, evaluating and asking models from Python: the library under ``symbolinv train``, ``evaluate`` and
``solve``, with typed arguments (no argparse)::

    from hf_symbolinv.routes import EvaluateArguments, TrainArguments, evaluate, train

    model = train(TrainArguments(task="prop", preset="prop-small", data="data/prop-small", output="runs/sit"))
    report = evaluate(EvaluateArguments(model=model, data="data/prop-small", beam=3))
    print(report["correct"])

Each family trains and evaluates along its route (:class:`~hf_symbolinv.models.registry.Route`): ``seq2seq``
(generated token sequences, the ``Seq2SeqTrainer``, beam search and the task's checker) or ``tree`` (models that hold
trees). The argument classes carry the command line's defaults; a value the route of the model does not take is an
error, not silently ignored. Errors are ``ValueError`` / ``OSError`` naming what is wrong.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models.registry import Route, family_of_preset, folder_family, folder_route, get_route, new_model_config
from . import seq2seq as _seq2seq  # noqa: F401 (registers the seq2seq route)
from . import tree as _tree  # noqa: F401 (registers the tree route)
from .common import DEFAULT_ALPHA_SYMBOLS, check_overrides

PathLike = str | os.PathLike[str]

#: Training options that only some families take (a family lists those it takes).
FAMILY_OPTIONS = ("embedding_type",)


@dataclass
class TrainArguments:
    """What ``symbolinv train`` takes, with its defaults (``overrides``: the config fields ``--set`` sets)."""

    task: str
    data: PathLike
    output: PathLike
    preset: str | None = None
    init_from: PathLike | None = None
    embedding_type: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    steps: int | None = None  # None: 1000, or what epochs makes
    epochs: float | None = None
    targets: str = "taught"
    max_train_samples: int | None = None
    curriculum: int = 0
    augment: str = "none"
    batch_size: int = 64
    grad_accum: int = 1
    lr: float = 1e-3
    warmup_steps: int | None = None
    warmup_ratio: float | None = None
    eval_steps: int | None = None
    eval_samples: int = 256
    beam: int = 1
    seed: int = 0
    no_resume: bool = False
    bf16: bool = False
    compile: str | None = None
    group_by_length: bool = False
    workers: int = 0
    eval_batch_size: int | None = None
    time_limit: float | None = None  # minutes

    def __post_init__(self) -> None:
        if (self.preset is None) == (self.init_from is None):
            raise ValueError("give a preset (a new model) or init_from (a saved model to train on), not both")
        self.overrides = dict(self.overrides)


@dataclass
class EvaluateArguments:
    """What ``symbolinv evaluate`` takes, with its defaults (``report``, ``heatmap``: where they go; default: beside
    the model, or in the current folder for a shipped model)."""

    model: PathLike
    data: PathLike
    split: str = "test"
    beam: int = 3
    top_n: int = 1
    batch_size: int = 64
    limit: int | None = None
    alpha_symbols: list[int] = field(default_factory=lambda: list(DEFAULT_ALPHA_SYMBOLS))
    alpha_pool: int = 5
    max_perm: int = 120
    alpha_samples: int = 100
    draws: int = 10
    report: PathLike | None = None
    heatmap: PathLike | None = None
    seed: int = 0
    #: CLUTRR models: read each story whole instead of composing its chain two facts at a time
    #: (:mod:`hf_symbolinv.evaluation.chains`).
    whole_story: bool = False


def _refuse_options_not_taken(arguments: TrainArguments, route: Route) -> None:
    """Options the route does not take, given: an error rather than silently ignored."""
    not_taken = route.train_options_not_taken
    given = [
        "--" + name.replace("_", "-") for name, default in not_taken.items() if getattr(arguments, name) != default
    ]
    if given:
        raise ValueError(f"{', '.join(given)}: not options of the {route.name} route")


def train(arguments: TrainArguments) -> Path | None:
    """Train a new model of ``arguments.preset`` or the one saved in ``arguments.init_from`` on ``arguments.data``,
    judge it on the held-out split, and save it with its card in ``OUTPUT/model``: that folder, or None where the
    time limit stopped the run (its checkpoint in ``OUTPUT/checkpoints`` continues it). An interrupted run resumes
    from its last checkpoint unless ``no_resume``."""
    from transformers import set_seed

    from ..training import training_lock
    from ..training.checkpoints import check_checkpoints_folder
    from ..utils.files import PathProblem, check_model_destination, check_output_folder, resolve_model_folder

    output = Path(arguments.output)
    data = Path(arguments.data).resolve()
    if output.resolve() == data or data in output.resolve().parents:
        raise PathProblem(
            f"--output {output} is inside the dataset folder --data {arguments.data}; choose another --output"
        )
    # Before any work: a destination refused after training would waste the whole run.
    check_output_folder(output, "--output")
    check_checkpoints_folder(output / "checkpoints")
    check_output_folder(output / "checkpoints", "--output")
    check_model_destination(output / "model", "--output")
    set_seed(arguments.seed)
    options = {name: getattr(arguments, name) for name in FAMILY_OPTIONS if getattr(arguments, name) is not None}
    if arguments.init_from is not None:
        if options:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in options)
            raise ValueError(f"{flags} builds a new model; it cannot change one loaded with --init-from")
        folder = resolve_model_folder(str(arguments.init_from), "--init-from")
        problem = _fine_tune_problem(folder, arguments.overrides)
        if problem is not None:
            raise ValueError(problem)
        if folder.resolve() == (output / "model").resolve():
            # The save would replace the model this run starts from, which it did not create.
            raise PathProblem(
                f"--output {output} would replace the --init-from model {folder}; choose another --output"
            )
        route, config = folder_route(folder), None
    else:
        try:
            family = family_of_preset(arguments.preset)
        except ValueError as error:
            raise ValueError(f"--preset: {error}") from None
        problem = check_overrides(family.config_class, arguments.overrides)
        if problem is not None:
            raise ValueError(problem)
        try:
            config = new_model_config(arguments.preset, arguments.task, options=options, **arguments.overrides)
        except TypeError as error:
            raise ValueError(str(error)) from None
        route, folder = get_route(family.route), None
    _refuse_options_not_taken(arguments, route)
    with training_lock(output):  # one training per --output at a time
        route.train(arguments, output, config, folder)
    return output / "model" if (output / "model" / "config.json").is_file() else None


def _fine_tune_problem(folder: Path, overrides: dict[str, Any]) -> str | None:
    """Why ``--set overrides`` cannot change the model saved in ``folder`` (None if they can): only the fields its
    family names as settings that leave every weight as it is (``Family.fine_tune_fields``)."""
    if not overrides:
        return None
    family = folder_family(folder)
    allowed = family.fine_tune_fields if family is not None else ()
    refused = [name for name in overrides if name not in allowed]
    if refused:
        may = f"it may change only {', '.join(allowed)}" if allowed else "it may change none"
        return (
            f"--set {', '.join(refused)}: a model loaded with --init-from keeps its architecture; {may} "
            "(other fields build a new model: use --preset)"
        )
    return check_overrides(family.config_class, overrides)


def output_paths(folder: Path, split: str, report: PathLike | None, heatmap: PathLike | None) -> tuple[Path, Path]:
    """Where the report and the heatmap go: where asked, else beside the model, except for a model shipped with the
    package, whose folder is part of the installed package and is left as it shipped (the current folder instead)."""
    from ..pretrained import PRETRAINED_DIR

    shipped = folder.resolve().parent == PRETRAINED_DIR
    default_dir, prefix = (Path.cwd(), f"{folder.name}-") if shipped else (folder, "")
    report_path = Path(report) if report else default_dir / f"{prefix}eval-{split}.json"
    heatmap_path = Path(heatmap) if heatmap else default_dir / f"{prefix}heatmap-{split}.png"
    return report_path, heatmap_path


def evaluate(arguments: EvaluateArguments) -> dict[str, Any]:
    """Evaluate the saved model ``arguments.model`` (a folder, or a training OUTPUT) on a split of
    ``arguments.data``; write the report (JSON) and, for generated answers, a heatmap; return the report."""
    from ..pretrained import SHIPPED, SHIPPED_TREES, shipped_model
    from ..utils.files import check_output_file, resolve_model_folder

    # A shipped model by name (`symbolinv evaluate clutrr ...`) unless a folder of that name is here.
    name = str(arguments.model)
    shipped = name in {**SHIPPED, **SHIPPED_TREES} and not Path(name).exists()
    folder = shipped_model(name) if shipped else resolve_model_folder(name)
    report_path, heatmap_path = output_paths(folder, arguments.split, arguments.report, arguments.heatmap)
    # Before the evaluation, and all of them: a report written and then a heatmap refused leaves half a result.
    check_output_file(report_path, "--report")
    check_output_file(report_path.with_name(report_path.stem + "-heatmap.json"), "--report")
    check_output_file(heatmap_path, "--heatmap")
    route = folder_route(folder)
    ignored = [
        "--" + name.replace("_", "-")
        for name, default in route.evaluate_options_not_taken.items()
        if getattr(arguments, name) != default
    ]
    if ignored:  # e.g. a tree model runs its own steps: none of these would change what it does
        raise ValueError(f"{', '.join(ignored)} do(es) not apply to a {route.name} model ({folder}); leave it out")
    route.evaluate(arguments, folder, report_path, heatmap_path)
    return json.loads(report_path.read_text(encoding="utf-8"))


def answer(
    text: str,
    model: PathLike | None = None,
    *,
    task: str | None = None,
    beam: int = 3,
    top_n: int = 1,
    symbols: str | None = None,
) -> Any:
    """The answers to one input of a sequence model (``model``: a saved folder; None: the shipped model that answers
    such inputs best, as ``symbolinv solve`` chooses, ``task`` choosing between propositional and LTL), each with
    the checker's verdict, in the input's own names (a :class:`~hf_symbolinv.evaluation.solve.Solution`)."""
    from ..evaluation.solve import Solver
    from ..utils.files import resolve_model_folder

    folder = resolve_model_folder(str(model)) if model is not None else None
    if folder is not None and task is not None:
        raise ValueError("task chooses among the shipped models: it cannot be given with a model")
    if folder is not None and folder_route(folder).solve is not None:
        raise ValueError(f"{folder} holds a tree model: it answers with `symbolinv solve {folder} INPUT`")
    solver = Solver(folder)
    source = solver.model_folder(text, task, symbols)
    return solver.solve(text, beam=beam, top_n=top_n, symbols=symbols, folder=source)


__all__ = [
    "EvaluateArguments",
    "TrainArguments",
    "answer",
    "evaluate",
    "output_paths",
    "train",
]
