"""Nothing lost, nothing silently wrong: commands never replace what they did not write, and fail in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_symbolinv.commands import main
from hf_symbolinv.utils.files import DestinationInUseError, replace_folder_atomic


def _fill(staging: Path) -> None:
    (staging / "config.json").write_text("{}", encoding="utf-8")
    (staging / "model.safetensors").write_bytes(b"weights")


def test_a_folder_the_package_wrote_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)
    replace_folder_atomic(target, lambda staging: (staging / "config.json").write_text("new", encoding="utf-8"))
    assert (target / "config.json").read_text(encoding="utf-8") == "new"
    assert not (target / "model.safetensors").exists()  # the whole folder is the new write


@pytest.mark.parametrize("name", ["README.md", "config.json", "model.safetensors"])
def test_a_users_file_is_never_replaced_whatever_its_name(tmp_path: Path, name: str) -> None:
    # A folder of the user's own files with the names a save writes: file names prove nothing.
    target = tmp_path / "model"
    target.mkdir()
    (target / name).write_text("my notes", encoding="utf-8")
    with pytest.raises(DestinationInUseError, match=name):
        replace_folder_atomic(target, _fill)
    assert (target / name).read_text(encoding="utf-8") == "my notes"
    # Nor a file the user added to, or edited in, a folder the package wrote.
    other = tmp_path / "written"
    replace_folder_atomic(other, _fill)
    (other / name).write_text("my notes", encoding="utf-8")
    with pytest.raises(DestinationInUseError, match=f"{name}( \\(changed since it was written\\))?"):
        replace_folder_atomic(other, _fill)
    assert (other / name).read_text(encoding="utf-8") == "my notes"


def test_a_folder_with_foreign_files_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work", encoding="utf-8")
    with pytest.raises(DestinationInUseError, match="thesis.tex"):
        replace_folder_atomic(target, _fill)
    assert (target / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no staging folder left behind


@pytest.mark.parametrize("place", ["convert", "train"])
def test_commands_refuse_a_destination_with_a_users_readme(
    saved_vanilla: Path, prop_data: Path, tmp_path: Path, capsys, place: str
) -> None:
    destination = tmp_path / "dst"
    folder = destination if place == "convert" else destination / "model"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("my notes", encoding="utf-8")
    if place == "convert":
        assert main(["convert", str(saved_vanilla), str(destination)]) == 2
    else:
        assert _train(prop_data, destination) == 2
    assert (folder / "README.md").read_text(encoding="utf-8") == "my notes"
    assert "README.md" in capsys.readouterr().err


def test_a_write_killed_earlier_leaves_nothing_after_the_next_one(tmp_path: Path) -> None:
    import os

    target = tmp_path / "model"
    dead = tmp_path / ".model.partial-999999999-abc"  # what a kill -9 during a write leaves (no such process)
    dead_old = tmp_path / ".model.old-999999999-def"
    alive = tmp_path / f".model.partial-{os.getpid()}-xyz"  # another writer, still running
    for folder in (dead, dead_old, alive):
        folder.mkdir()
        (folder / "config.json").write_text("{}", encoding="utf-8")
    replace_folder_atomic(target, _fill)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model", alive.name])


@pytest.mark.parametrize(
    "failure",
    [
        OSError(28, "No space left on device", "/somewhere/.model.partial-1-x/model.safetensors"),
        RuntimeError("Error while serializing: IoError(Os { code: 28, kind: StorageFull })"),  # safetensors
    ],
)
def test_a_write_that_fails_names_the_destination_and_leaves_the_old_folder(tmp_path: Path, failure) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)

    def full_disk(staging: Path) -> None:
        (staging / "config.json").write_text("{}", encoding="utf-8")
        raise failure

    with pytest.raises(OSError) as caught:
        replace_folder_atomic(target, full_disk)
    assert caught.value.filename == str(target) and caught.value.errno == 28
    assert (target / "model.safetensors").read_bytes() == b"weights"  # the previous save, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_file_write_that_fails_names_the_destination(tmp_path: Path) -> None:
    from hf_symbolinv.utils.files import write_atomic

    (tmp_path / "report.json").write_text("old", encoding="utf-8")

    def full_disk(temporary: Path) -> None:
        raise OSError(28, "No space left on device", str(temporary))

    with pytest.raises(OSError) as caught:
        write_atomic(tmp_path / "report.json", full_disk)
    assert caught.value.filename == str(tmp_path / "report.json") and caught.value.errno == 28
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


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


TRAIN = ["train", "--task", "prop", "--preset", "prop", "--data", "d", "--output", "o"]
EVALUATE = ["evaluate", "m", "--data", "d"]


@pytest.mark.parametrize(
    ("argv", "flag", "value"),
    [
        (TRAIN, "--epochs", "0"),
        (TRAIN, "--epochs", "-1"),
        (TRAIN, "--epochs", "nan"),
        (TRAIN, "--grad-accum", "-1"),
        (TRAIN, "--grad-accum", "0"),
        (TRAIN, "--eval-steps", "0"),
        (TRAIN, "--eval-samples", "0"),
        (TRAIN, "--max-train-samples", "0"),
        (TRAIN, "--lr", "inf"),
        (TRAIN, "--lr", "-0.1"),
        (TRAIN, "--warmup-ratio", "2"),
        (TRAIN, "--time-limit", "0"),
        (EVALUATE, "--alpha-samples", "0"),
        (EVALUATE, "--alpha-pool", "0"),
        (EVALUATE, "--max-perm", "0"),
        (EVALUATE, "--draws", "0"),
        (EVALUATE, "--alpha-symbols", "0"),
        (["data", "build", "ltl-small", "--out", "o"], "--timeout", "-3"),
        (["data", "build", "ltl-small", "--out", "o"], "--workers", "0"),
    ],
)
def test_every_numeric_option_has_a_range(argv: list[str], flag: str, value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()[-1]) > 0 and value in err


def test_alpha_covariance_options_beyond_the_pool_or_the_tokenizer_are_refused(
    saved_vanilla: Path, prop_data: Path, tmp_path: Path, capsys
) -> None:
    report, heatmap = str(tmp_path / "r.json"), str(tmp_path / "h.png")
    evaluate = ["evaluate", str(saved_vanilla), "--data", str(prop_data), "--report", report, "--heatmap", heatmap]
    assert main([*evaluate, "--alpha-symbols", "6", "--alpha-pool", "5"]) == 2
    assert "--alpha-symbols 6 is more than --alpha-pool 5" in capsys.readouterr().err
    assert main([*evaluate, "--alpha-pool", "1000"]) == 2
    assert "--alpha-pool 1000 is more than the" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before any work


def _train(data: Path, output: Path, *settings: str, steps: str = "2") -> int:
    from helpers import TINY

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


@pytest.mark.slow
def test_resuming_with_another_architecture_is_refused(prop_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    assert _train(prop_data, output, steps="4") == 0
    capsys.readouterr()
    assert _train(prop_data, output, "encoder_position_encoding=rope", steps="8") == 2
    err = capsys.readouterr().err
    assert "encoder_position_encoding: 'tree' -> 'rope'" in err and "--no-resume" in err


@pytest.mark.slow
def test_resuming_without_dropout_goes_on_and_says_so(prop_data: Path, tmp_path: Path, capsys) -> None:
    # Dropout is regularization of the training only: a long run may drop it on resume (announced), while an
    # architecture change beside it is still refused, naming only that field.
    output = tmp_path / "run"
    assert _train(prop_data, output, "dropout=0.1", steps="4") == 0
    capsys.readouterr()
    assert _train(prop_data, output, "dropout=0.0", "encoder_position_encoding=rope", steps="8") == 2
    err = capsys.readouterr().err
    assert "encoder_position_encoding: 'tree' -> 'rope'" in err and "dropout:" not in err
    assert _train(prop_data, output, "dropout=0.0", steps="8") == 0
    out = capsys.readouterr().out
    assert "continuing checkpoint-4 with dropout 0.1 -> 0.0 (regularization only" in out
    saved = json.loads((output / "model" / "config.json").read_text())
    assert saved["dropout"] == 0.0
    state = json.loads((output / "checkpoints" / "checkpoint-8" / "trainer_state.json").read_text())
    assert [row["step"] for row in state["log_history"] if "loss" in row][-1] == 8


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


# ---------------------------------------------------------------------------------------------------
# Failures are not successes; an interrupted save is not a dead end
# ---------------------------------------------------------------------------------------------------
def test_a_diverging_run_stops_with_an_error_and_saves_no_model(prop_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    assert _train(prop_data, output, "--lr", "1e6", steps="6") == 2
    err = capsys.readouterr().err
    assert "training diverged at step" in err and "not finite" in err and "--lr" in err and "Traceback" not in err
    assert not (output / "model").exists()


@pytest.mark.slow
def test_a_checkpoint_cut_short_while_saved_is_passed_over(prop_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    assert _train(prop_data, output, "--eval-steps", "2", steps="4") == 0
    checkpoints = output / "checkpoints"
    assert sorted(path.name for path in checkpoints.iterdir()) == ["checkpoint-2", "checkpoint-4"]
    # What a kill during the save of checkpoint-4 leaves: no trainer state, an empty optimizer file.
    (checkpoints / "checkpoint-4" / "trainer_state.json").unlink()
    (checkpoints / "checkpoint-4" / "optimizer.pt").write_bytes(b"")
    capsys.readouterr()
    assert _train(prop_data, output, "--eval-steps", "2", steps="6") == 0
    out = capsys.readouterr().out
    assert f"resuming from {checkpoints / 'checkpoint-2'}: checkpoint-4 is damaged: optimizer.pt is 0 bytes" in out
    assert "continuing checkpoint-2 with --steps/--epochs 4 -> 6" in out  # a longer run is applied, and said
    assert json.loads((checkpoints / "checkpoint-6" / "trainer_state.json").read_text())["global_step"] == 6


def _edited_copy(source: Path, folder: Path, name: str, edit) -> Path:
    """A copy of the saved folder ``source`` whose JSON file ``name`` was changed in place by ``edit``."""
    import shutil

    shutil.copytree(source, folder)
    record = json.loads((folder / name).read_text())
    edit(record)
    (folder / name).write_text(json.dumps(record))
    return folder


def test_a_folder_that_needs_its_own_code_is_refused_without_a_prompt(
    saved_vanilla: Path, tmp_path: Path, capsys
) -> None:
    def edit(config: dict) -> None:
        del config["model_type"]
        config["auto_map"] = {"AutoConfig": "configuration_x.XConfig", "AutoModelForSeq2SeqLM": "modeling_x.XModel"}

    folder = _edited_copy(saved_vanilla, tmp_path / "no-model-type", "config.json", edit)
    assert main(["solve", str(folder), "& a b"]) == 2
    captured = capsys.readouterr()
    assert "needs the folder's own code" in captured.err and "[y/N]" not in captured.out + captured.err
    assert len(captured.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_model_folder_with_its_evaluation_is_trained_again(prop_data: Path, tmp_path: Path) -> None:
    output = tmp_path / "run"
    assert _train(prop_data, output, steps="2") == 0
    assert main(["evaluate", str(output), "--data", str(prop_data), "--limit", "4", "--alpha-symbols"]) == 0
    assert (output / "model" / "eval-test.json").is_file()  # written by the package, beside the weights
    assert _train(prop_data, output, steps="3") == 0
    assert not (output / "model" / "eval-test.json").exists()  # replaced with the rest of the old model


def test_training_into_the_dataset_folder_is_refused(prop_data: Path, capsys) -> None:
    assert _train(prop_data, prop_data / "run") == 2
    assert "is inside the dataset folder" in capsys.readouterr().err
    assert not (prop_data / "run").exists()


def test_a_tokenizer_with_other_symbol_slots_than_the_model_is_refused(
    saved_vanilla: Path, tmp_path: Path, capsys
) -> None:
    ten_slots = lambda record: record.update(max_symbols=10)  # noqa: E731 (the model has 64)
    folder = _edited_copy(saved_vanilla, tmp_path / "edited", "tokenizer_config.json", ten_slots)
    assert main(["solve", str(folder), "& a b"]) == 2
    err = capsys.readouterr().err
    assert "10 symbol slots) does not match the model" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_checkpoint_that_cannot_be_written_is_one_line_naming_the_folder(
    prop_data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    output = tmp_path / "run"
    assert _train(prop_data, output, "--eval-steps", "2", steps="2") == 0
    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):  # what torch says when the disk fills during a checkpoint
        if "optimizer" in str(f):
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 4096 vs 0")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    assert _train(prop_data, output, "--eval-steps", "2", steps="4") == 2
    err = capsys.readouterr().err
    assert "could not write a checkpoint" in err and str(output / "checkpoints") in err and "Traceback" not in err
    monkeypatch.setattr(torch, "save", real_save)
    # The previous state is usable: the next run resumes from the last complete checkpoint.
    assert _train(prop_data, output, "--eval-steps", "2", steps="4") == 0
    assert "resuming from" in capsys.readouterr().out


def test_progress_bars_are_drawn_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from hf_symbolinv.utils import progress

    for name in progress.QUIET_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "0")  # a switch the user set stays as it is
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not progress.show_progress(True)
    progress.quiet_off_terminal()
    assert progress.os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1"
    assert progress.os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert progress.os.environ["TQDM_DISABLE"] == "0"
    monkeypatch.delenv("HF_DATASETS_DISABLE_PROGRESS_BARS")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert progress.show_progress(True) and not progress.show_progress(False)
    progress.quiet_off_terminal()
    assert "HF_DATASETS_DISABLE_PROGRESS_BARS" not in progress.os.environ  # on a terminal, bars as usual
