"""Training, evaluating and asking models from Python (``hf_symbolinv.routes``), the library the CLI calls."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hf_symbolinv
from hf_symbolinv.commands.cli import build_parser
from hf_symbolinv.routes import EvaluateArguments, TrainArguments

REPO = Path(__file__).resolve().parent.parent


def _options(command: str) -> dict[str, object]:
    """The ``dest`` and default of each option of ``symbolinv COMMAND``."""
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    return {action.dest: action.default for action in subparsers.choices[command]._actions if action.dest != "help"}


@pytest.mark.parametrize(("command", "arguments"), [("train", TrainArguments), ("evaluate", EvaluateArguments)])
def test_the_argument_classes_hold_every_option_of_the_command_with_its_default(command: str, arguments: type) -> None:
    fields = {field.name: field for field in dataclasses.fields(arguments)}
    options = _options(command)
    assert set(fields) == set(options)
    for name, field in fields.items():
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            continue  # required: the command requires it too
        expected = dict(options[name]) if name == "overrides" else options[name]
        assert default == expected, name


def test_a_training_needs_exactly_one_start() -> None:
    with pytest.raises(ValueError, match="preset .* or init_from"):
        TrainArguments(task="prop", data="d", output="o")
    with pytest.raises(ValueError, match="not both"):
        TrainArguments(task="prop", data="d", output="o", preset="prop-small", init_from="m")


@pytest.mark.parametrize(
    "arguments",
    [
        TrainArguments(task="prop", data="d", output="o", preset="prop-small"),
        TrainArguments(
            task="ltl",
            data="data/ltl-35",
            output="runs/x",
            init_from="hf_symbolinv/pretrained/ltl-small",
            steps=52000,
            batch_size=768,
            lr=5e-4,
            warmup_steps=1000,
            eval_steps=250,
            time_limit=7.5,
            workers=2,
            bf16=True,
            compile="inductor",
        ),
        TrainArguments(
            task="ltl",
            data="d",
            output="o",
            preset="ltl-best",
            embedding_type="fixed",
            overrides={"d_model": 64, "loss_type": "adacos", "dropout": 0.0, "scale_embedding": True, "name": "12"},
            group_by_length=True,
            no_resume=True,
        ),
    ],
)
def test_the_command_line_of_train_arguments_parses_back_to_the_same_arguments(arguments: TrainArguments) -> None:
    from hf_symbolinv.commands.train import train_arguments_of, train_command_line

    argv = train_command_line(arguments)
    assert argv[0] == "train"
    assert train_arguments_of(build_parser().parse_args(argv)) == arguments


def test_the_command_line_leaves_out_options_at_their_defaults() -> None:
    from hf_symbolinv.commands.train import train_command_line

    argv = train_command_line(TrainArguments(task="prop", data="d", output="o", preset="prop-small", beam=1))
    assert argv == ["train", "--task", "prop", "--preset", "prop-small", "--data", "d", "--output", "o"]


def test_the_api_is_public_at_the_top_and_the_cli_goes_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_symbolinv import routes
    from hf_symbolinv.commands import main

    assert hf_symbolinv.train is routes.train and hf_symbolinv.EvaluateArguments is routes.EvaluateArguments
    called = []
    monkeypatch.setattr(routes, "train", lambda arguments: called.append(arguments))
    argv = ["train", "--task", "prop", "--preset", "prop-small", "--data", "d", "--output", "o", "--set", "d_model=32"]
    assert main(argv) == 0
    (arguments,) = called
    assert isinstance(arguments, TrainArguments) and arguments.overrides == {"d_model": 32}


def test_train_and_evaluate_from_python_with_typed_arguments(prop_data: Path, tmp_path: Path) -> None:
    from hf_symbolinv import answer, evaluate, train

    arguments = TrainArguments(
        task="prop", preset="prop-small", data=prop_data, output=tmp_path / "run", steps=2, batch_size=8, eval_samples=4
    )
    model = train(arguments)
    assert model == tmp_path / "run" / "model" and (model / "model.safetensors").is_file()
    report = evaluate(EvaluateArguments(model=tmp_path / "run", data=prop_data, limit=5, beam=1, alpha_symbols=[]))
    assert report["count"] == 5 and 0.0 <= report["correct"] <= 1.0
    assert json.loads((model / "eval-test.json").read_text(encoding="utf-8"))["count"] == 5
    solution = answer("& a | b ! c", model, beam=1)
    assert len(solution.answers) == 1 and solution.answers[0].verdict in {"correct", "incorrect", "invalid", "unknown"}


def test_an_option_the_route_does_not_take_is_refused_before_any_work(tmp_path: Path) -> None:
    from hf_symbolinv import train

    arguments = TrainArguments(
        task="tree", preset="dte-small", data=tmp_path / "data", output=tmp_path / "run", steps=1, bf16=True
    )
    with pytest.raises(ValueError, match="--bf16: not options of the tree route"):
        train(arguments)
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.slow
def test_the_python_api_example_trains_and_evaluates(prop_data: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python_api.py"), str(prop_data), str(tmp_path / "run"), "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "correct: " in done.stdout and (tmp_path / "run" / "model" / "config.json").is_file()
