"""Training never costs the user a file, and never resumes what it cannot trust: checkpoints are written and removed
only where a run of the package wrote them (never through a link), a cut or damaged checkpoint is passed over for the
newest sound one, a resumed run keeps its optimisation options, one training writes an --output at a time, a full
disk is one line; model folders keep whatever their record does not list, and a damaged record is one line."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers import TINY

from hf_symbolinv.commands import main
from hf_symbolinv.training.checkpoints import (
    CheckpointsProblem,
    prepare_checkpoints,
    resume_point,
    verify_checkpoint,
)
from hf_symbolinv.utils.files import (
    LOCK_FILE,
    MANIFEST,
    DestinationInUseError,
    FolderInUseError,
    files_not_written_here,
    lock_folder,
    replace_folder_atomic,
)


def _train_argv(data: Path, output: Path, *settings: str, steps: str = "4") -> list[str]:
    return ["train", "--task", "prop", "--preset", "prop-best", "--data", str(data), "--output", str(output)] + [
        "--steps",
        steps,
        "--eval-steps",
        "2",
        "--batch-size",
        "16",
        "--eval-samples",
        "4",
        "--set",
        *TINY,
        *settings,
    ]


@pytest.fixture(scope="module")
def trained(prop_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A training OUTPUT of 4 steps: checkpoints/checkpoint-2 and checkpoint-4, each with its record."""
    output = tmp_path_factory.mktemp("trained") / "run"
    assert main(_train_argv(prop_data, output)) == 0
    return output


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    """A copy of :func:`trained` this test may change."""
    copy = tmp_path / "run"
    shutil.copytree(trained, copy, symlinks=True)
    return copy


@pytest.fixture
def options(trained: Path) -> dict:
    """The optimisation options :func:`trained` recorded with its checkpoints."""
    return json.loads((trained / "checkpoints" / "checkpoint-4" / MANIFEST).read_text())["options"]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# ---------------------------------------------------------------------------------------------------
# Verification: sizes and hashes recorded when written; a damaged checkpoint is passed over, naming both
# ---------------------------------------------------------------------------------------------------
def test_each_checkpoint_is_recorded_with_its_sizes_hashes_and_options(run: Path) -> None:
    for name in ("checkpoint-2", "checkpoint-4"):
        folder = run / "checkpoints" / name
        record = json.loads((folder / MANIFEST).read_text())
        on_disk = {path.name for path in folder.iterdir()} - {MANIFEST}
        assert set(record["files"]) == on_disk == set(record["sizes"])
        assert record["options"]["learning_rate"] == 1e-3 and record["options"]["batch_size"] == 16
        assert verify_checkpoint(folder) is None


@pytest.mark.parametrize("name", ["model.safetensors", "scheduler.pt", "optimizer.pt", "trainer_state.json"])
@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "written-before-records"])
def test_a_checkpoint_with_a_cut_file_is_passed_over_for_the_newest_sound_one(
    run: Path, name: str, recorded: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = run / "checkpoints"
    if not recorded:  # checkpoints written before records existed are checked by their files' structure
        for folder in checkpoints.iterdir():
            (folder / MANIFEST).unlink()
    cut = checkpoints / "checkpoint-4" / name
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    problem = verify_checkpoint(checkpoints / "checkpoint-4")
    assert problem is not None and name in problem
    assert verify_checkpoint(checkpoints / "checkpoint-2") is None
    assert resume_point(checkpoints) == checkpoints / "checkpoint-2"
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"resuming from {checkpoints / 'checkpoint-2'}: checkpoint-4 is ") and name in line
    (checkpoints / "checkpoint-4" / "precious.txt").write_text("mine")
    assert prepare_checkpoints(checkpoints, {}) == checkpoints / "checkpoint-2"
    assert (checkpoints / "incomplete-checkpoint-4" / "precious.txt").read_text() == "mine"  # set aside, kept whole


def test_a_changed_file_of_the_same_size_is_found_by_its_hash(run: Path) -> None:
    weights = run / "checkpoints" / "checkpoint-4" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert "model.safetensors differs from what was written" in verify_checkpoint(weights.parent)


@pytest.mark.slow
def test_train_resumes_from_the_newest_sound_checkpoint_past_a_damaged_one(
    prop_data: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = run / "checkpoints"
    weights = checkpoints / "checkpoint-4" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # what SafetensorError "incomplete metadata" was raised for
    assert main(_train_argv(prop_data, run, steps="6")) == 0
    captured = capsys.readouterr()
    assert f"resuming from {checkpoints / 'checkpoint-2'}: checkpoint-4 is damaged: model.safetensors" in captured.out
    assert "(removed)" in captured.out  # every file in it was the Trainer's
    assert "Traceback" not in captured.err
    assert json.loads((checkpoints / "checkpoint-6" / "trainer_state.json").read_text())["global_step"] == 6


# ---------------------------------------------------------------------------------------------------
# Through OUTPUT/checkpoints: nothing of the user's deleted, overwritten or followed into
# ---------------------------------------------------------------------------------------------------
def _users_folder(root: Path) -> Path:
    """A user's folder that looks like checkpoints: checkpoint-1/ and checkpoint-2/ with their own results."""
    for step in (1, 2):
        (root / f"checkpoint-{step}").mkdir(parents=True)
        (root / f"checkpoint-{step}" / "results.csv").write_text(f"run,{step}\n")
        (root / f"checkpoint-{step}" / "config.json").write_text("{}")  # a name the Trainer writes, too
    return root


def test_checkpoints_through_a_link_are_refused_and_the_linked_folder_untouched(
    prop_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _users_folder(tmp_path / "my-results")
    before = _snapshot(mine)
    output = tmp_path / "run"
    output.mkdir()
    (output / "checkpoints").symlink_to(mine)
    assert main(_train_argv(prop_data, output)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a link" in err and str(output / "checkpoints") in err
    assert _snapshot(mine) == before and sorted(os.listdir(mine)) == ["checkpoint-1", "checkpoint-2"]
    with pytest.raises(CheckpointsProblem, match="is a link"):
        prepare_checkpoints(output / "checkpoints", {}, resume=False)
    assert _snapshot(mine) == before


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_checkpoint_entry_that_is_a_link_or_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    mine = _users_folder(tmp_path / "mine")
    if kind == "link":
        (checkpoints / "checkpoint-3").symlink_to(mine / "checkpoint-1")
    else:
        (checkpoints / "checkpoint-3").write_text("my notes")
    with pytest.raises(CheckpointsProblem, match="checkpoint-3 is not a checkpoint folder training wrote"):
        prepare_checkpoints(checkpoints, {})
    assert (mine / "checkpoint-1" / "results.csv").is_file()


def test_a_users_checkpoint_like_folders_are_set_aside_never_deleted(tmp_path: Path) -> None:
    checkpoints = _users_folder(tmp_path / "checkpoints")
    before = _snapshot(checkpoints)
    assert prepare_checkpoints(checkpoints, {}) is None
    assert sorted(os.listdir(checkpoints)) == ["incomplete-checkpoint-1", "incomplete-checkpoint-2"]
    after = {name.replace("incomplete-", "", 1): data for name, data in _snapshot(checkpoints).items()}
    assert after == before


def test_an_incomplete_checkpoint_with_a_users_file_is_set_aside_and_one_of_trainer_files_removed(
    run: Path, options: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = run / "checkpoints"
    shutil.copytree(checkpoints / "checkpoint-4", checkpoints / "checkpoint-6")
    for step in (4, 6):  # both cut short while saved: no trainer state, no record
        (checkpoints / f"checkpoint-{step}" / "trainer_state.json").unlink()
        (checkpoints / f"checkpoint-{step}" / MANIFEST).unlink()
    (checkpoints / "checkpoint-6" / "precious.txt").write_text("mine")
    assert prepare_checkpoints(checkpoints, options) == checkpoints / "checkpoint-2"
    out = capsys.readouterr().out
    assert "checkpoint-4 is cut short while saved" in out and "(removed)" in out
    assert "checkpoint-6 is cut short while saved" in out and "set aside as incomplete-checkpoint-6" in out
    assert sorted(os.listdir(checkpoints)) == ["checkpoint-2", "incomplete-checkpoint-6"]
    assert (checkpoints / "incomplete-checkpoint-6" / "precious.txt").read_text() == "mine"


@pytest.mark.slow
def test_rotation_removes_only_checkpoints_whose_every_file_the_package_wrote(
    prop_data: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = run / "checkpoints"
    (checkpoints / "checkpoint-2" / "precious.txt").write_text("mine")
    (checkpoints / "notes.txt").write_text("my notes")
    assert main(_train_argv(prop_data, run, steps="8")) == 0
    # checkpoint-4 (all the package's) was rotated out; checkpoint-2, holding the user's file, was kept whole.
    assert sorted(os.listdir(checkpoints)) == ["checkpoint-2", "checkpoint-6", "checkpoint-8", "notes.txt"]
    assert (checkpoints / "checkpoint-2" / "precious.txt").read_text() == "mine"
    assert verify_checkpoint(checkpoints / "checkpoint-2") is None


def test_no_resume_removes_the_earlier_runs_checkpoints_and_sets_aside_those_with_a_users_file(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = run / "checkpoints"
    (checkpoints / "checkpoint-4" / "precious.txt").write_text("mine")
    assert prepare_checkpoints(checkpoints, {}, resume=False) is None
    assert sorted(os.listdir(checkpoints)) == ["incomplete-checkpoint-4"]
    assert (checkpoints / "incomplete-checkpoint-4" / "precious.txt").read_text() == "mine"
    assert "starting afresh: checkpoint-2 of the earlier run is not resumed (--no-resume; removed)" in (
        capsys.readouterr().out
    )


# ---------------------------------------------------------------------------------------------------
# A resumed run keeps its optimisation options
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "value", "flag"),
    [
        ("learning_rate", 0.5, "--lr 0.001 -> 0.5"),
        ("batch_size", 8, "--batch-size 16 -> 8"),
        ("targets", "dataset", "--targets taught -> dataset"),
        ("seed", 3, "--seed 0 -> 3"),
        ("gradient_accumulation", 2, "--grad-accum 1 -> 2"),
        ("warmup", 10, "--warmup-steps/--warmup-ratio default -> 10"),
        ("max_train_samples", 100, "--max-train-samples None -> 100"),
        ("curriculum", 5, "--curriculum 0 -> 5"),
    ],
)
def test_a_resume_with_a_changed_optimisation_option_is_refused_naming_both_values(
    run: Path, options: dict, option: str, value: object, flag: str
) -> None:
    before = _snapshot(run)
    with pytest.raises(CheckpointsProblem, match=rf"checkpoint-4 was trained with other options \({flag}\)"):
        prepare_checkpoints(run / "checkpoints", {**options, option: value})
    assert _snapshot(run) == before  # refused before anything changed


def test_a_longer_run_is_applied_and_said(run: Path, options: dict, capsys: pytest.CaptureFixture[str]) -> None:
    assert prepare_checkpoints(run / "checkpoints", {**options, "steps": 10}) == run / "checkpoints" / "checkpoint-4"
    assert "continuing checkpoint-4 with --steps/--epochs 4 -> 10 (the schedule is now" in capsys.readouterr().out


def test_a_resume_may_turn_augmentation_on_and_says_so(run: Path, options: dict, capsys) -> None:
    """Rewriting the samples drawn from now on leaves the optimizer and schedule as they are: applied, and said."""
    assert options["augment"] == "none"
    changed = {**options, "augment": "commute"}
    assert prepare_checkpoints(run / "checkpoints", changed) == run / "checkpoints" / "checkpoint-4"
    assert "continuing checkpoint-4 with --augment none -> commute (the samples drawn" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_resume_with_another_lr_is_refused_in_one_line(
    prop_data: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_train_argv(prop_data, run, "--lr", "0.5", steps="6")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lr 0.001 -> 0.5" in err and "--no-resume" in err
    assert sorted(os.listdir(run / "checkpoints")) == ["checkpoint-2", "checkpoint-4"]


# ---------------------------------------------------------------------------------------------------
# One writer per --output; a full disk during a checkpoint is one line
# ---------------------------------------------------------------------------------------------------
def test_a_second_training_into_the_same_output_is_refused_at_once(
    prop_data: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(run)
    lock = lock_folder(run, "a test", "wait")  # what a running training holds
    try:
        assert main(_train_argv(prop_data, run, steps="6")) == 2
    finally:
        lock.release()
        (run / LOCK_FILE).unlink()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is being written by another training right now" in err
    assert _snapshot(run) == before
    held = lock_folder(run, "a test", "wait")  # the released lock is free again, and holds off a second holder
    try:
        with pytest.raises(FolderInUseError, match="is being written by another test right now"):
            lock_folder(run, "another test", "wait")
    finally:
        held.release()


def test_a_second_training_in_another_process_is_refused(prop_data: Path, run: Path) -> None:
    import subprocess
    import time

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from hf_symbolinv.utils.files import lock_folder; "
            "held = lock_folder(Path(sys.argv[1]), 'x', 'y'); print('held', flush=True); time.sleep(60)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(FolderInUseError, match="another training"):
            from hf_symbolinv.training import training_lock

            with training_lock(run):
                pass
        assert time.monotonic() - started < 5  # refused at once, not after a wait
    finally:
        holder.kill()
        holder.wait()
    from hf_symbolinv.training import training_lock

    with training_lock(run):  # the killed holder's lock died with it
        pass


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("basic_ios::clear: iostream error"),
        RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 4096 vs 0"),
        OSError(28, "No space left on device"),
    ],
    ids=["iostream", "inline_container", "ENOSPC"],
)
@pytest.mark.slow
def test_a_full_disk_during_a_checkpoint_is_one_line_and_leaves_nothing_half_written(
    prop_data: Path, run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, failure
) -> None:
    import torch

    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):
        if "scheduler" in str(f):
            Path(f).write_bytes(b"PK\x03\x04 cut")  # the start of a file the disk had no room to finish
            raise failure
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    capsys.readouterr()
    assert main(_train_argv(prop_data, run, steps="6")) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err
    assert "could not write a checkpoint" in err and str(run / "checkpoints" / "checkpoint-6") in err
    # The checkpoint cut short is gone (every file in it was the Trainer's): nothing looks complete that is not.
    assert sorted(os.listdir(run / "checkpoints")) == ["checkpoint-2", "checkpoint-4"]
    if isinstance(failure, OSError):  # the next run resumes from the last complete checkpoint
        monkeypatch.setattr(torch, "save", real_save)
        assert main(_train_argv(prop_data, run, steps="6")) == 0
        assert f"resuming from {run / 'checkpoints' / 'checkpoint-4'}" in capsys.readouterr().out


def test_a_full_disk_while_saving_the_model_is_one_error_and_keeps_the_old_model(tmp_path: Path) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)

    def full_disk(staging: Path) -> None:
        (staging / "model.safetensors").write_bytes(b"cut")
        raise RuntimeError("basic_ios::clear: iostream error")

    with pytest.raises(OSError, match="no space left on the device") as raised:
        replace_folder_atomic(target, full_disk)
    assert raised.value.filename == str(target) and raised.value.errno == 28
    assert (target / "model.safetensors").read_bytes() == b"weights"
    assert sorted(os.listdir(tmp_path)) == ["model"]  # no staging copy left behind


# ---------------------------------------------------------------------------------------------------
# Inside a model folder: what the record does not list is left, and the write refused naming it
# ---------------------------------------------------------------------------------------------------
def _fill(staging: Path) -> None:
    (staging / "config.json").write_text("{}", encoding="utf-8")
    (staging / "model.safetensors").write_bytes(b"weights")


@pytest.mark.parametrize("kind", ["empty folder", "named pipe", "folder of a file"])
def test_a_users_folder_or_pipe_inside_a_model_folder_is_left_and_the_write_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)
    if kind == "empty folder":
        (target / "mine").mkdir()
    elif kind == "named pipe":
        os.mkfifo(target / "mine")
    else:
        (target / "mine").mkdir()
        (target / "mine" / "notes.txt").write_text("notes")
    with pytest.raises(DestinationInUseError, match="mine"):
        replace_folder_atomic(target, _fill)
    assert (target / "mine").exists() and (target / "config.json").is_file()


@pytest.mark.parametrize("kind", ["empty folder", "named pipe"])
def test_convert_and_train_refuse_a_model_folder_holding_a_users_folder_or_pipe(
    prop_data: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str], trained: Path
) -> None:
    destination = tmp_path / "converted"
    replace_folder_atomic(destination, _fill)
    output = tmp_path / "run"
    replace_folder_atomic(output / "model", _fill)
    for folder in (destination, output / "model"):
        (folder / "mine").mkdir() if kind == "empty folder" else os.mkfifo(folder / "mine")
    assert main(["convert", str(trained / "model"), str(destination)]) == 2
    assert main(_train_argv(prop_data, output)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("mine" in line and "did not write" in line for line in err)
    assert (destination / "mine").exists() and (output / "model" / "mine").exists()


# ---------------------------------------------------------------------------------------------------
# A damaged ownership record: one line, the folder is not the package's
# ---------------------------------------------------------------------------------------------------
DAMAGED_RECORDS = {
    "files null": '{"files": null}',
    "files a list": '{"files": ["config.json"]}',
    "files a string": '{"files": "config.json"}',
    "files a number": '{"files": 3}',
    "bad JSON": '{"files": {"config.json": ',
    "not an object": "[1, 2]",
}


@pytest.mark.parametrize("text", DAMAGED_RECORDS.values(), ids=DAMAGED_RECORDS.keys())
def test_a_damaged_record_makes_the_folder_not_the_packages(tmp_path: Path, text: str) -> None:
    target = tmp_path / "model"
    replace_folder_atomic(target, _fill)
    (target / MANIFEST).write_text(text)
    foreign = files_not_written_here(target)
    assert foreign[0].startswith(f"{MANIFEST} (a damaged record: ") and "config.json" in foreign
    with pytest.raises(DestinationInUseError, match="damaged record"):
        replace_folder_atomic(target, _fill)
    assert (target / MANIFEST).read_text() == text


@pytest.mark.parametrize("text", DAMAGED_RECORDS.values(), ids=DAMAGED_RECORDS.keys())
def test_convert_and_evaluate_name_a_damaged_record_in_one_line(
    tmp_path: Path, text: str, trained: Path, prop_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    destination = tmp_path / "converted"
    replace_folder_atomic(destination, _fill)
    (destination / MANIFEST).write_text(text)
    assert main(["convert", str(trained / "model"), str(destination)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged record" in err and "Traceback" not in err
    model = tmp_path / "model"
    shutil.copytree(trained / "model", model)
    (model / MANIFEST).write_text(text)
    argv = ["evaluate", str(model), "--data", str(prop_data), "--limit", "2", "--alpha-symbols", "--beam", "1"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and f"{model / MANIFEST} is damaged" in captured.out
    assert (model / MANIFEST).read_text() == text  # nothing added to a record that is not the package's
