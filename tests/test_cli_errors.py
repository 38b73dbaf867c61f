"""Nothing lost, nothing silently wrong: commands never replace what they did not write, and fail in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_symbolinv.commands import main
from hf_symbolinv.files import DestinationInUseError, replace_folder_atomic


def _fill(staging: Path) -> None:
    (staging / "config.json").write_text("{}", encoding="utf-8")
    (staging / "model.safetensors").write_bytes(b"weights")


def test_a_folder_of_the_same_files_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)
    (target / "config.json").write_text("old", encoding="utf-8")
    replace_folder_atomic(target, _fill)
    assert (target / "config.json").read_text(encoding="utf-8") == "{}"


def test_a_folder_with_foreign_files_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work", encoding="utf-8")
    with pytest.raises(DestinationInUseError, match="thesis.tex"):
        replace_folder_atomic(target, _fill)
    assert (target / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no staging folder left behind


def test_a_plain_file_is_not_replaced_by_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.write_text("notes", encoding="utf-8")
    with pytest.raises(DestinationInUseError, match="not a folder"):
        replace_folder_atomic(target, _fill)
    assert target.read_text(encoding="utf-8") == "notes"


@pytest.fixture(scope="module")
def saved_vanilla(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_convert import vanilla

    from hf_symbolinv import SymbolInvTokenizer

    folder = tmp_path_factory.mktemp("vanilla")
    vanilla().save_pretrained(folder)
    SymbolInvTokenizer.from_preset("prop").save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_convert_keeps_an_existing_destination_and_says_so_in_one_line(
    saved_vanilla: Path, tmp_path: Path, capsys, kind: str
) -> None:
    destination = tmp_path / "dst"
    if kind == "folder":
        destination.mkdir()
        (destination / "notes.txt").write_text("mine", encoding="utf-8")
        keep = destination / "notes.txt"
    else:
        destination.write_text("mine", encoding="utf-8")
        keep = destination
    assert main(["convert", str(saved_vanilla), str(destination)]) == 2
    assert keep.read_text(encoding="utf-8") == "mine"
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]  # loading progress bars aside
    assert len(errors) == 1 and str(destination) in errors[0]
    assert "Traceback" not in err


def test_debug_shows_the_traceback(saved_vanilla: Path, tmp_path: Path) -> None:
    destination = tmp_path / "dst"
    destination.write_text("mine", encoding="utf-8")
    with pytest.raises(DestinationInUseError):
        main(["--debug", "convert", str(saved_vanilla), str(destination)])
    assert destination.read_text(encoding="utf-8") == "mine"


# ---------------------------------------------------------------------------------------------------
# Counts and config overrides
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["train", "--task", "prop", "--preset", "prop", "--data", "d", "--output", "o", "--steps", "0"], "--steps"),
        (["train", "--task", "prop", "--preset", "prop", "--data", "d", "--output", "o", "--steps", "-5"], "--steps"),
        (["evaluate", "m", "--data", "d", "--beam", "0"], "--beam"),
        (["evaluate", "m", "--data", "d", "--limit", "0"], "--limit"),
        (["solve", "m", "&ab", "--top-n", "0"], "--top-n"),
    ],
)
def test_counts_below_one_are_refused_naming_the_flag(argv: list[str], flag: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "at least 1" in err and "Traceback" not in err


def _train(data: Path, output: Path, *settings: str, steps: str = "2") -> int:
    from test_training import TINY

    return main(
        ["train", "--task", "prop", "--preset", "prop-best", "--data", str(data), "--output", str(output)]
        + ["--steps", steps, "--batch-size", "16", "--eval-samples", "4", "--set", *TINY, *settings]
    )


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("d_modle=32", "no field 'd_modle' (did you mean d_model?)"),
        ("d_model=abc", "--set d_model='abc': expected int"),
    ],
)
def test_bad_config_overrides_are_refused_naming_the_field(
    prop_data: Path, tmp_path: Path, capsys, setting: str, message: str
) -> None:
    assert _train(prop_data, tmp_path / "run", setting) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # nothing written for a refused command


def test_resuming_with_another_architecture_is_refused(prop_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    assert _train(prop_data, output, steps="4") == 0
    capsys.readouterr()
    assert _train(prop_data, output, "encoder_position_encoding=rope", steps="8") == 2
    err = capsys.readouterr().err
    assert "encoder_position_encoding: 'tree' -> 'rope'" in err and "--no-resume" in err


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_convert_names_a_missing_or_wrong_kind_source(tmp_path: Path, capsys, kind: str) -> None:
    source = tmp_path / "src"
    if kind == "file":
        source.write_text("not a model", encoding="utf-8")
    assert main(["convert", str(source), str(tmp_path / "dst")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: cannot read a model config from {source}: " + (
        "is a file, not a model folder" if kind == "file" else "no such folder"
    )
    assert not (tmp_path / "dst").exists()


@pytest.mark.parametrize("kind", ["missing", "empty", "file"])
@pytest.mark.parametrize("command", ["train", "evaluate", "solve"])
def test_missing_empty_or_wrong_kind_inputs_fail_in_one_line(tmp_path: Path, capsys, command: str, kind: str) -> None:
    path = tmp_path / "input"
    if kind == "empty":
        path.mkdir()
    elif kind == "file":
        path.write_text("x", encoding="utf-8")
    argv = {
        "train": ["train", "--task", "prop", "--preset", "prop", "--data", str(path), "--output", str(tmp_path / "o")],
        "evaluate": ["evaluate", str(path), "--data", str(path)],
        "solve": ["solve", str(path), "&ab"],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(path) in errors[0] and "Traceback" not in err


def test_a_tokenizer_of_another_task_and_a_damaged_checkpoint_exit_2_with_one_line(tmp_path, capsys) -> None:
    import torch

    from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
    from hf_symbolinv.commands import main

    torch.manual_seed(0)
    tiny = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2)
    model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("prop", **tiny, encoder_ffn_dim=16))
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    SymbolInvTokenizer.from_preset("ltl").save_pretrained(folder)  # the wrong task's tokenizer
    assert main(["solve", str(folder), "&a|!bc"]) == 2
    err = capsys.readouterr().err
    assert "does not match the model" in err and "'ltl' vocabulary" in err and "Traceback" not in err
    SymbolInvTokenizer.from_preset("prop").save_pretrained(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    assert main(["solve", str(folder), "&a|!bc"]) == 2
    err = capsys.readouterr().err
    assert f"cannot read the weights {weights}" in err and err.count("\n") == 1
