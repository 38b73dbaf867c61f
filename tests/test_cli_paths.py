"""Every path argument of every command, given a missing, an unwritable and a wrong-kind path.

The rule under test (docs/guarantees.md, "What the commands guarantee"): bad input gets one line, ``error: <problem>``,
naming the path or field, exit status 2, no traceback unless ``--debug``; and a refused command creates,
replaces and deletes nothing. The tests run as root, where permissions stop nothing, so "unwritable" means a
path under a regular file or under ``/proc`` (which refuses new entries even to root), and "unreadable" an
input with a folder where a file must be (a data shard) or without a file it needs (model weights).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hf_symbolinv.commands import main

PROC = Path("/proc/symbolinv-no-such-entry")
TINY_SIT = dict(
    d_model=16,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=16,
    decoder_ffn_dim=16,
    dropout=0.0,
)
TRAIN_TINY = [f"{key}={value}" for key, value in TINY_SIT.items()] + ['loss_type="cross_entropy"']


# ---------------------------------------------------------------------------------------------------
# Fixtures: tiny saved models and datasets, made once per module
# ---------------------------------------------------------------------------------------------------
def _save_model(folder: Path, vocabulary: str, **overrides: object) -> Path:
    import torch

    from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer

    torch.manual_seed(0)
    config = SymbolInvConfig.from_preset(vocabulary, **{**TINY_SIT, **overrides})
    SymbolInvForConditionalGeneration(config).save_pretrained(folder)
    SymbolInvTokenizer.from_preset(vocabulary).save_pretrained(folder)
    return folder


def _save_rows(folder: Path, rows: list[dict]) -> Path:
    import datasets

    for name in ("train", "validation", "test"):
        datasets.Dataset.from_list(rows).to_parquet(str(folder / "data" / f"{name}-00000-of-00001.parquet"))
    (folder / "README.md").write_text("a test dataset\n", encoding="utf-8")
    return folder


@dataclass(frozen=True)
class Fixtures:
    prop_model: Path
    ltl_model: Path
    vanilla_model: Path  # a fixed-embedding model: what `convert` takes
    prop_data: Path
    ltl_data: Path


#: LTL formulas and witness traces (checked by the engine when written): data of the other logic task.
LTL_ROWS = [("&aXb", "a;b;{1}"), ("Uab", "b;{1}"), ("FGa", "{a}"), ("&GaFb", "&ab;{a}")]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory, prop_data: Path) -> Fixtures:
    make = tmp_path_factory.mktemp
    ltl_rows = [{"input": formula, "target": trace, "num_symbols": 2} for formula, trace in LTL_ROWS]
    return Fixtures(
        prop_model=_save_model(make("prop-model"), "prop"),
        ltl_model=_save_model(make("ltl-model"), "ltl"),
        vanilla_model=_save_model(make("vanilla-model"), "prop", embedding_type="fixed", num_symbol_embeddings=5),
        prop_data=prop_data,
        ltl_data=_save_rows(make("ltl-data"), ltl_rows),
    )


# ---------------------------------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Place:
    """Where one case runs: a fresh folder to make bad paths in, and the shared fixtures."""

    tmp: Path
    fx: Fixtures

    def file(self, name: str = "notes.txt") -> Path:
        path = self.tmp / name
        path.write_text("mine", encoding="utf-8")
        return path

    def empty(self, name: str = "empty") -> Path:
        path = self.tmp / name
        path.mkdir()
        return path

    def under_file(self) -> Path:
        return self.file() / "sub"

    def out(self, name: str = "out") -> Path:
        return self.tmp / name


def demo(p: Place, output: Path) -> list[str]:
    return ["demo", "--output", str(output), "--quick", "--steps", "1"]


def build(p: Place, out: Path) -> list[str]:
    return ["data", "build", "copy-small", "--out", str(out), "--num-samples", "10", "--workers", "1", "--quiet"]


def push(p: Place, directory: Path) -> list[str]:
    return ["data", "push", str(directory), "someone/symbolinv-test"]


def train(
    p: Place,
    data: Path | None = None,
    output: Path | None = None,
    init_from: Path | None = None,
    task: str = "prop",
) -> list[str]:
    start = ["--init-from", str(init_from)] if init_from is not None else ["--preset", "prop-best"]
    argv = ["train", "--task", task, *start, "--data", str(data or p.fx.prop_data)]
    argv += ["--output", str(output or p.out()), "--steps", "1", "--batch-size", "4", "--eval-samples", "2"]
    return argv + ([] if init_from is not None else ["--set", *TRAIN_TINY])


def evaluate(
    p: Place,
    model: Path | None = None,
    data: Path | None = None,
    report: Path | None = None,
    heatmap: Path | None = None,
) -> list[str]:
    argv = ["evaluate", str(model or p.fx.prop_model), "--data", str(data or p.fx.prop_data), "--limit", "2"]
    argv += ["--beam", "1", "--alpha-samples", "1", "--alpha-symbols", "3", "--max-perm", "2"]
    # Reports default to the model folder, a shared fixture: keep them in the case's own folder.
    return argv + ["--report", str(report or p.out("eval.json")), "--heatmap", str(heatmap or p.out("eval.png"))]


def solve(p: Place, model: Path) -> list[str]:
    return ["solve", str(model), "&ab", "--beam", "1"]


def convert(p: Place, source: Path | None = None, destination: Path | None = None) -> list[str]:
    return ["convert", str(source or p.fx.vanilla_model), str(destination or p.out("converted"))]


def _model_without_weights(p: Place) -> Path:
    folder = p.empty("model")
    for name in ("config.json", "tokenizer_config.json"):
        (folder / name).write_bytes((p.fx.prop_model / name).read_bytes())
    return folder


def _model_without_tokenizer(p: Place) -> Path:
    folder = p.empty("model")
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((p.fx.prop_model / name).read_bytes())
    return folder


def _data_with_a_folder_for_a_shard(p: Place) -> Path:
    folder = p.empty("data")
    (folder / "README.md").write_text("a dataset\n", encoding="utf-8")
    (folder / "data" / "train-00000-of-00001.parquet").mkdir(parents=True)
    return folder


def _with_entry(p: Place, entry: str, kind: str) -> Path:
    """A folder whose ``entry`` (a name the command writes) is already a file or a folder of the user's."""
    folder = p.empty("out")
    target = folder / entry
    if kind == "file":
        target.write_text("mine", encoding="utf-8")
    else:
        target.mkdir()
        (target / "thesis.tex").write_text("mine", encoding="utf-8")
    return folder


@dataclass(frozen=True)
class Case:
    command: str
    argument: str
    fault: str  # missing | unwritable (outputs) or unreadable (inputs) | wrong-kind
    what: str
    make: Callable[[Place], tuple[list[str], Path]]  # the argv and the path the error must name

    @property
    def id(self) -> str:
        return f"{self.command}:{self.argument}:{self.fault}:{self.what}"


def _case(command: str, argument: str, fault: str, what: str, argv: Callable, path: Callable) -> Case:
    """``path(place)`` makes the bad path; ``argv(place, path)`` puts it in the command line."""

    def make(p: Place) -> tuple[list[str], Path]:
        bad = path(p)
        return argv(p, bad), bad

    return Case(command, argument, fault, what, make)


def _model_input(command: str, argument: str, argv: Callable) -> list[Case]:
    """The faults every saved-model argument gets."""
    return [
        _case(command, argument, "missing", "no such folder", argv, lambda p: p.out("nothing")),
        _case(command, argument, "unreadable", "no weights", argv, _model_without_weights),
        _case(command, argument, "wrong-kind", "a file", argv, Place.file),
        _case(command, argument, "wrong-kind", "an empty folder", argv, Place.empty),
        _case(command, argument, "wrong-kind", "a data folder", argv, lambda p: p.fx.prop_data),
        _case(command, argument, "wrong-kind", "no tokenizer", argv, _model_without_tokenizer),
    ]


def _data_input(command: str, argument: str, argv: Callable) -> list[Case]:
    """The faults every data-folder argument gets."""
    return [
        _case(command, argument, "missing", "no such folder", argv, lambda p: p.out("nothing")),
        _case(command, argument, "unreadable", "a shard is a folder", argv, _data_with_a_folder_for_a_shard),
        _case(command, argument, "wrong-kind", "a file", argv, Place.file),
        _case(command, argument, "wrong-kind", "an empty folder", argv, Place.empty),
        _case(command, argument, "wrong-kind", "a model folder", argv, lambda p: p.fx.prop_model),
    ]


def _output(command: str, argument: str, argv: Callable, kind: str) -> list[Case]:
    """The faults every output argument gets; ``kind`` is what it names, "folder" or "file"."""
    return [
        _case(command, argument, "unwritable", "under a file", argv, Place.under_file),
        _case(command, argument, "unwritable", "under /proc", argv, lambda p: PROC / "out"),
        _case(command, argument, "wrong-kind", "a file", argv, Place.file)
        if kind == "folder"
        else _case(command, argument, "wrong-kind", "a folder", argv, Place.empty),
    ]


#: The arguments that name something the command writes.
OUTPUTS = frozenset({"--output", "--out", "--report", "--heatmap", "DST"})


# One argument of a command line each: ``(place, bad path) -> argv``.
def _train_output(p: Place, path: Path) -> list[str]:
    return train(p, output=path)


def _train_data(p: Place, path: Path) -> list[str]:
    return train(p, data=path)


def _train_init(p: Place, path: Path) -> list[str]:
    return train(p, init_from=path)


def _train_over_init(p: Place, path: Path) -> list[str]:
    return train(p, init_from=path / "model", output=path)


def _copy_of_prop_model(p: Place) -> Path:
    """A training OUTPUT whose model/ is a copy of the prop model (what --init-from then names)."""
    folder = p.empty("out")
    (folder / "model").mkdir()
    for file in p.fx.prop_model.iterdir():
        (folder / "model" / file.name).write_bytes(file.read_bytes())
    return folder


def _evaluate_model(p: Place, path: Path) -> list[str]:
    return evaluate(p, model=path)


def _evaluate_data(p: Place, path: Path) -> list[str]:
    return evaluate(p, data=path)


def _evaluate_split(p: Place, path: Path) -> list[str]:
    return [*evaluate(p, data=path), "--split", "nope"]


def _convert_source(p: Place, path: Path) -> list[str]:
    return convert(p, source=path)


def _convert_destination(p: Place, path: Path) -> list[str]:
    return convert(p, destination=path)


def _entry(name: str, kind: str) -> Callable[[Place], Path]:
    return lambda p: _with_entry(p, name, kind)


CASES: list[Case] = [
    *_output("demo", "--output", demo, "folder"),
    _case("demo", "--output", "wrong-kind", "sit is a file", demo, _entry("sit", "file")),
    _case("demo", "--output", "wrong-kind", "sit is foreign", demo, _entry("sit", "folder")),
    _case("demo", "--output", "wrong-kind", "results is a folder", demo, _entry("results.json", "folder")),
    _case("demo", "--output", "wrong-kind", "heatmap is a folder", demo, _entry("heatmap.png", "folder")),
    *_output("data build", "--out", build, "folder"),
    _case("data build", "--out", "wrong-kind", "a model folder", build, lambda p: p.fx.prop_model),
    *_data_input("data push", "DIR", push),
    *_data_input("train", "--data", _train_data),
    _case("train", "--data", "wrong-kind", "LTL data", _train_data, lambda p: p.fx.ltl_data),
    *_output("train", "--output", _train_output, "folder"),
    _case("train", "--output", "wrong-kind", "model is a file", _train_output, _entry("model", "file")),
    _case("train", "--output", "wrong-kind", "model is foreign", _train_output, _entry("model", "folder")),
    _case("train", "--output", "wrong-kind", "checkpoints is a file", _train_output, _entry("checkpoints", "file")),
    _case("train", "--output", "wrong-kind", "the --init-from model", _train_over_init, _copy_of_prop_model),
    *_model_input("train", "--init-from", _train_init),
    _case("train", "--init-from", "wrong-kind", "an LTL model", _train_init, lambda p: p.fx.ltl_model),
    *_model_input("evaluate", "MODEL", _evaluate_model),
    *_data_input("evaluate", "--data", _evaluate_data),
    _case("evaluate", "--data", "wrong-kind", "LTL data", _evaluate_data, lambda p: p.fx.ltl_data),
    _case("evaluate", "--data", "wrong-kind", "no such split", _evaluate_split, lambda p: p.fx.prop_data),
    *_output("evaluate", "--report", lambda p, r: evaluate(p, report=r), "file"),
    *_output("evaluate", "--heatmap", lambda p, h: evaluate(p, heatmap=h), "file"),
    *_model_input("solve", "MODEL", solve),
    *_model_input("convert", "SRC", _convert_source),
    *_output("convert", "DST", _convert_destination, "folder"),
    _case("convert", "DST", "wrong-kind", "a foreign folder", _convert_destination, lambda p: p.fx.prop_data),
    _case("convert", "DST", "wrong-kind", "the source itself", _convert_destination, lambda p: p.fx.vanilla_model),
]


def _snapshot(*roots: Path) -> dict[str, str]:
    """Every path under ``roots`` with its kind and, for files, a hash of the contents."""
    seen: dict[str, str] = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.is_symlink():
                seen[str(path)] = "link"
            elif path.is_dir():
                seen[str(path)] = "dir"
            else:
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def _messages(err: str) -> list[str]:
    """The lines of stderr, less the progress bars of loading and tokenizing (redrawn in place with carriage
    returns or cursor movements, so each bar's redraws share one line)."""
    return [line for line in err.split("\n") if line.strip() and not any(c in line for c in "\r\x1b")]


def _roots(tmp_path: Path, fx: Fixtures) -> list[Path]:
    return [tmp_path, fx.prop_model, fx.ltl_model, fx.vanilla_model, fx.prop_data, fx.ltl_data]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_bad_path_fails_in_one_line_naming_it_and_changes_nothing(
    case: Case, fixtures: Fixtures, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    place = Place(tmp_path / "work", fixtures)
    place.tmp.mkdir()
    argv, bad = case.make(place)
    if bad.is_relative_to(PROC) and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    before = _snapshot(*_roots(tmp_path, fixtures))
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert status == 2, err
    lines = _messages(err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(bad) in lines[0], lines[0]
    if case.argument in OUTPUTS:
        # A destination is checked before any work (loading, tokenizing, training): refused after an hour of
        # training it would waste the run. Nothing at all came before the error line.
        assert err == lines[0] + "\n", err
    assert _snapshot(*_roots(tmp_path, fixtures)) == before


# ---------------------------------------------------------------------------------------------------
# Missing parents of an output: every command creates them, and writes nothing outside them
# ---------------------------------------------------------------------------------------------------
CREATES_PARENTS: dict[str, Callable[[Place, Path], list[str]]] = {
    "demo --output": demo,
    "data build --out": build,
    "train --output": _train_output,
    "evaluate --report --heatmap": lambda p, o: evaluate(p, report=o / "eval.json", heatmap=o / "eval.png"),
    "convert DST": _convert_destination,
}


@pytest.mark.parametrize(("name", "argv"), CREATES_PARENTS.items(), ids=list(CREATES_PARENTS))
def test_an_output_with_missing_parents_is_created_and_nothing_else_changes(
    name: str, argv: Callable[[Place, Path], list[str]], fixtures: Fixtures, tmp_path: Path
) -> None:
    place = Place(tmp_path / "work", fixtures)
    place.tmp.mkdir()
    new = place.tmp / "a" / "b"
    before = _snapshot(*_roots(tmp_path, fixtures))
    assert main(argv(place, new / "out")) == 0
    after = _snapshot(*_roots(tmp_path, fixtures))
    assert {path: kind for path, kind in after.items() if path in before} == before  # nothing replaced or removed
    added = sorted(set(after) - set(before))
    assert added and all(Path(path).is_relative_to(place.tmp / "a") for path in added), added
    assert any(Path(path).is_relative_to(new / "out") and Path(path).is_file() for path in added)


# ---------------------------------------------------------------------------------------------------
# --debug: the same failures with their traceback
# ---------------------------------------------------------------------------------------------------
DEBUG_CASES = [
    case
    for case in CASES
    if case.id in {"convert:DST:unwritable:under a file", "train:--data:wrong-kind:a model folder"}
]
assert len(DEBUG_CASES) == 2  # the ids above are those of the matrix


@pytest.mark.parametrize("case", DEBUG_CASES, ids=lambda case: case.id)
def test_debug_raises_the_error_that_is_otherwise_one_line(
    case: Case, fixtures: Fixtures, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    place = Place(tmp_path / "work", fixtures)
    place.tmp.mkdir()
    argv, bad = case.make(place)
    assert main(argv) == 2
    line = _messages(capsys.readouterr().err)[0]
    # With --debug the same error propagates out of main (the interpreter then prints its traceback).
    with pytest.raises(ValueError, match=re.escape(str(bad))) as raised:
        main(["--debug", *argv])
    assert line == f"error: {raised.value}"
