"""Checkpoints that never cost the user a file: each is verified before it is trusted, written and removed only
where a run of the package wrote it, and resumed only with the options it was trained with.

When the Trainer has saved a checkpoint, :class:`CheckpointRecordMixin` writes its record last (the package's folder
record, :data:`~hf_symbolinv.utils.files.MANIFEST`: every file's size and SHA-256, and the run's optimisation
options). A checkpoint is then

- *sound*: its record lists its files as they are (or, written before records existed, it holds only files the
  Trainer writes, each of them readable to its end);
- *cut short*: no record and no readable ``trainer_state.json`` (a kill or a full disk during the save);
- *damaged*: a file differs from its record, or is missing, or (without a record) is cut short.

The newest sound checkpoint is resumed; each newer one is named and passed over, then removed when every file in it
is one the Trainer writes, else set aside (renamed ``incomplete-checkpoint-N``). The Trainer's own rotation is
replaced by one that removes only checkpoints whose every file is the package's (a user's file keeps its folder).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..utils.files import (
    FULL_DISK_SIGNS,
    MANIFEST,
    DamagedRecordError,
    file_digest,
    keep_generation_token_ids,
    lock_folder,
    name_after_folder,
    read_record,
    write_record,
)

#: The files the Trainer (``save_pretrained`` of a model and its tokenizer, the optimizer, scheduler, scaler, RNG
#: and trainer states, the arguments, the model's code) and this module write into a checkpoint folder.
TRAINER_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "model-*-of-*.safetensors",
    "model.safetensors.index.json",
    "pytorch_model*.bin",
    "tokenizer*.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.*",
    "merges.txt",
    "chat_template.*",
    "*.model",
    "optimizer*.pt",
    "scheduler*.pt",
    "scaler.pt",
    "rng_state*.pth",
    "trainer_state.json",
    "training_args.bin",
    "*.py",
    MANIFEST,
)

#: The name of the folder a checkpoint that cannot be resumed is set aside as (``incomplete-checkpoint-N``): outside
#: the Trainer's ``checkpoint-*``, so that neither a resume nor a rotation takes it for one.
SET_ASIDE_PREFIX = "incomplete-"

#: ``symbolinv train``'s flag of each recorded option, for messages.
OPTION_FLAGS = {
    "learning_rate": "--lr",
    "batch_size": "--batch-size",
    "gradient_accumulation": "--grad-accum",
    "targets": "--targets",
    "seed": "--seed",
    "warmup": "--warmup-steps/--warmup-ratio",
    "steps": "--steps/--epochs",
    "max_train_samples": "--max-train-samples",
    "curriculum": "--curriculum",
    "augment": "--augment",
}
#: Options a resumed run may change, and what the change does: the run goes on with the new value, and says so.
APPLIED_OPTIONS = {
    "steps": "the schedule is now that of the new length",
    "augment": "the samples drawn from now on are written as it says",
}


class CheckpointsProblem(ValueError):
    """The checkpoints folder cannot be used as it is; the message is one line naming it and what to do."""


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (a full disk, most often); the message names it."""


def is_trainer_file(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in TRAINER_FILES)


def checkpoint_step(folder: Path) -> int:
    step = folder.name.rpartition("-")[2]
    return int(step) if step.isdigit() else -1


def _safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file is not whole (its header's tensors must end where the file ends), or None."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"{path.name} is cut short ({size} bytes)"
        (length,) = struct.unpack("<Q", head)
        if length > size - 8:
            return f"{path.name} is cut short (its header alone is {length} bytes; the file has {size})"
        try:
            header = json.loads(handle.read(length))
        except ValueError:
            return f"{path.name} has an unreadable header"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    if 8 + length + max(ends, default=0) != size:
        return f"{path.name} is cut short ({size} bytes; its header describes {8 + length + max(ends, default=0)})"
    return None


def _file_problem(path: Path) -> str | None:
    """Why a file of a checkpoint without a record cannot be read to its end, or None (checked by its kind: a
    safetensors header, a zip archive's directory for torch's files, JSON)."""
    if path.suffix == ".safetensors":
        return _safetensors_problem(path)
    if path.suffix in (".pt", ".pth", ".bin"):
        return None if zipfile.is_zipfile(path) else f"{path.name} is cut short or not a torch file"
    if path.suffix == ".json":
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            return f"{path.name} is cut short or not JSON"
    return None


def verify_checkpoint(folder: Path) -> str | None:
    """Why the checkpoint ``folder`` cannot be trusted ("cut short while saved: ...", "damaged: ..."), or None.
    With a record, every file it lists must be there with its recorded size and SHA-256."""
    if folder.is_symlink() or not folder.is_dir():
        return "not a folder of the package's (a link or a file)"
    try:
        record = read_record(folder)
    except DamagedRecordError as error:
        return f"damaged: {error.reason} in its record"
    if record is None:
        if _file_problem(folder / "trainer_state.json") is not None or not (folder / "trainer_state.json").is_file():
            return "cut short while saved: no readable trainer_state.json"
        weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
        if not (folder / "config.json").is_file() or not any((folder / name).is_file() for name in weights):
            return "cut short while saved: no config.json or no weights"
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.is_symlink() and is_trainer_file(path.name):
                problem = _file_problem(path)
                if problem is not None:
                    return f"damaged: {problem}"
        return None
    sizes = record.get("sizes", {})
    for name, digest in record["files"].items():
        path = folder / name
        if path.is_symlink() or not path.is_file():
            return f"damaged: {name} is missing"
        size = path.stat().st_size
        if name in sizes and size != sizes[name]:
            return f"damaged: {name} is {size:,} bytes, recorded {sizes[name]:,}"
        if file_digest(path) != digest:
            return f"damaged: {name} differs from what was written"
    return None


def _removable(folder: Path) -> bool:
    """Whether every entry of ``folder`` is a regular file that its record lists or that the Trainer writes (a cut
    or damaged one included): only such a folder may be removed. A file of any other name (the user's notes, say), a
    folder, a link or a special file keeps the folder whole."""
    try:
        record = read_record(folder)
    except DamagedRecordError:
        record = None
    recorded = record["files"] if record is not None else {}
    return all(
        path.is_file() and not path.is_symlink() and (path.name in recorded or is_trainer_file(path.name))
        for path in folder.iterdir()
    )


def _remove(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def set_aside(folder: Path) -> Path:
    """Rename ``folder`` to ``incomplete-NAME`` (``-2``, ``-3``... if taken); the new path."""
    target = folder.with_name(SET_ASIDE_PREFIX + folder.name)
    number = 1
    while target.exists() or target.is_symlink():
        number += 1
        target = folder.with_name(f"{SET_ASIDE_PREFIX}{folder.name}-{number}")
    os.rename(folder, target)
    return target


def discard(folder: Path) -> str:
    """Remove a checkpoint that will not be resumed if every file in it is the package's, else set it aside;
    what was done, for a message."""
    if _removable(folder):
        _remove(folder)
        return "removed"
    return f"set aside as {set_aside(folder).name}: it holds files training did not write"


@dataclass
class Survey:
    """What a checkpoints folder holds: its checkpoints by step (oldest first), and the problem of each unsound one."""

    checkpoints: list[Path]
    problems: dict[Path, str]

    @property
    def sound(self) -> list[Path]:
        return [folder for folder in self.checkpoints if folder not in self.problems]

    def newest_sound(self) -> Path | None:
        return self.sound[-1] if self.sound else None


def check_checkpoints_folder(checkpoints: Path) -> None:
    """Refuse a checkpoints folder that is a link (training writes and removes checkpoints only in a folder of its
    own, never through a link into someone else's) or not a folder."""
    if checkpoints.is_symlink():
        raise CheckpointsProblem(
            f"{checkpoints} is a link (to {os.readlink(checkpoints)}); training writes and removes checkpoints only in "
            "a folder of its own: remove the link or choose another --output"
        )
    if checkpoints.exists() and not checkpoints.is_dir():
        raise CheckpointsProblem(f"{checkpoints} is not a folder; choose another --output")


def survey(checkpoints: Path) -> Survey:
    """The ``checkpoint-N`` entries of ``checkpoints`` and their soundness (each file verified); refuses a folder
    that is a link (training writes and removes checkpoints only in a folder of its own) and a ``checkpoint-N``
    that is not a folder."""
    check_checkpoints_folder(checkpoints)
    if not checkpoints.exists():
        return Survey([], {})
    found = sorted(
        (path for path in checkpoints.iterdir() if path.name.startswith("checkpoint-") and checkpoint_step(path) >= 0),
        key=checkpoint_step,
    )
    for path in found:
        if path.is_symlink() or not path.is_dir():
            raise CheckpointsProblem(
                f"{path} is not a checkpoint folder training wrote (a link or a file); move it or choose another "
                "--output"
            )
    return Survey(found, {path: problem for path in found if (problem := verify_checkpoint(path)) is not None})


def resume_point(checkpoints: str | os.PathLike, announce: bool = True) -> Path | None:
    """The newest sound checkpoint in ``checkpoints`` (None: none, start afresh), every newer one named with its
    problem when ``announce``. Changes nothing (see :func:`prepare_checkpoints`)."""
    found = survey(Path(checkpoints))
    start = found.newest_sound()
    passed = [folder for folder in found.problems if start is None or checkpoint_step(folder) > checkpoint_step(start)]
    if passed and announce:
        said = "; ".join(f"{folder.name} is {found.problems[folder]}" for folder in passed)
        print(f"resuming from {start}: {said}" if start is not None else f"starting afresh: {said}")
    return start


def options_problem(checkpoint: Path, options: dict[str, Any]) -> tuple[str | None, list[str]]:
    """Compare the options ``checkpoint`` was trained with (its record) to ``options``: the refusal naming each
    changed option and both values (None: none), and a note for each change that is applied (``--steps``)."""
    try:
        record = read_record(checkpoint) or {}
    except DamagedRecordError:
        record = {}
    recorded = record.get("options")
    if not isinstance(recorded, dict):
        return None, []  # written before options were recorded
    refused, applied = [], []
    for key in sorted(recorded.keys() & options.keys()):
        if recorded[key] == options[key]:
            continue
        change = f"{OPTION_FLAGS.get(key, key)} {recorded[key]} -> {options[key]}"
        if key in APPLIED_OPTIONS:
            applied.append(f"{change} ({APPLIED_OPTIONS[key]})")
        else:
            refused.append(change)
    if refused:
        return (
            f"{checkpoint} was trained with other options ({', '.join(refused)}); a resumed run keeps them (its "
            "optimizer and schedule are restored): give the same ones, or pass --no-resume",
            [],
        )
    return None, [f"continuing {checkpoint.name} with {change}" for change in applied]


def prepare_checkpoints(checkpoints: Path, options: dict[str, Any], resume: bool = True) -> Path | None:
    """Make ``checkpoints`` ready for a run and return the checkpoint it resumes from (None: it starts afresh).

    Refused before anything changes: a link, a checkpoint trained with other ``options`` (see
    :func:`options_problem`). Then each checkpoint newer than the resumed one (every one, with ``resume=False``) is
    named and discarded (:func:`discard`: removed if every file in it is the package's, else set aside)."""
    found = survey(checkpoints)
    start = found.newest_sound() if resume else None
    if start is not None:
        refusal, notes = options_problem(start, options)
        if refusal is not None:
            raise CheckpointsProblem(refusal)
        for note in notes:
            print(note)
    later = [
        folder for folder in found.checkpoints if start is None or checkpoint_step(folder) > checkpoint_step(start)
    ]
    said = [
        f"{folder.name} is {found.problems[folder]} ({discard(folder)})"
        if folder in found.problems
        else f"{folder.name} of the earlier run is not resumed (--no-resume; {discard(folder)})"
        for folder in later
    ]
    if start is not None:
        print(f"resuming from {start}" + (f": {'; '.join(said)}" if said else ""))
    elif said:
        print(f"starting afresh: {'; '.join(said)}")
    return start


class CheckpointRecordMixin:
    """A Trainer that records each checkpoint it saves (:func:`~hf_symbolinv.utils.files.write_record`, with the
    run's ``options``), turns a failed save into :class:`CheckpointWriteError` (the checkpoint cut short is discarded),
    and rotates checkpoints itself: of those beyond ``save_total_limit``, only the ones whose every file is the
    package's are removed (the Trainer's rotation removes any ``checkpoint-*`` folder)."""

    checkpoint_options: dict[str, Any] | None = None
    keep_checkpoints: int | None = None

    def setup_checkpoint_records(self, options: dict[str, Any] | None) -> None:
        self.checkpoint_options = options
        self.keep_checkpoints = self.args.save_total_limit
        self.args.save_total_limit = None  # the Trainer's rotation would remove any folder named checkpoint-*

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        run_dir = Path(self._get_output_dir(trial=trial))
        folder = run_dir / f"checkpoint-{self.state.global_step}"
        if folder.is_symlink() or folder.exists():  # left by an earlier run: never written into
            print(f"{folder} exists: {discard(folder) if folder.is_dir() and not folder.is_symlink() else 'kept'}")
            if folder.exists() or folder.is_symlink():
                raise CheckpointWriteError(errno.EEXIST, "a checkpoint cannot be saved over what is there", str(folder))
        keep_generation_token_ids(self.model)  # type: ignore[attr-defined]
        loaded_from = name_after_folder(self.model, folder)  # type: ignore[attr-defined]
        try:
            super()._save_checkpoint(model, trial)  # type: ignore[misc]
            if self.args.should_save:  # type: ignore[attr-defined]
                write_record(folder, options=self.checkpoint_options)
        except Exception as error:
            raise _save_failure(error, folder) from None
        finally:  # for the save only: the model in training keeps the folder it was loaded from
            if loaded_from is not None:
                self.model.config.name_or_path = loaded_from  # type: ignore[attr-defined]
        if self.args.should_save:  # type: ignore[attr-defined]
            self._rotate_written_checkpoints(run_dir, folder)

    def _rotate_written_checkpoints(self, run_dir: Path, newest: Path) -> None:
        if not self.keep_checkpoints or self.keep_checkpoints <= 0:
            return
        found = sorted(
            (
                path
                for path in run_dir.glob("checkpoint-*")
                if path != newest and path.is_dir() and not path.is_symlink() and checkpoint_step(path) >= 0
            ),
            key=checkpoint_step,
        )
        for folder in found[: max(0, len(found) + 1 - self.keep_checkpoints)]:
            if _removable(folder):
                _remove(folder)


def _save_failure(error: Exception, folder: Path) -> CheckpointWriteError:
    """A failed save as one error naming the checkpoint; the checkpoint cut short is discarded."""
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    full = isinstance(error, OSError) and error.errno == errno.ENOSPC
    full = full or any(sign in str(error) for sign in FULL_DISK_SIGNS)
    kept = ""
    if folder.is_dir() and not folder.is_symlink():
        kept = f"; the checkpoint cut short was {discard(folder)}"
    hint = "the disk is full" if full else "is the disk full?"
    earlier = any(path != folder for path in folder.parent.glob("checkpoint-*"))
    after = "the earlier checkpoints are kept" if earlier else "no checkpoint was complete yet"
    return CheckpointWriteError(
        errno.ENOSPC if full else errno.EIO,
        f"could not write a checkpoint ({reason}; {hint}){kept}; {after}",
        str(folder),
    )


@contextlib.contextmanager
def training_lock(output: Path) -> Iterator[None]:
    """Hold ``output``'s lock while a training writes there: a second training into the same folder is refused at
    once (:func:`~hf_symbolinv.utils.files.lock_folder`). ``output`` is created if missing, and removed again if the
    run leaves nothing in it."""
    from ..utils.files import LOCK_FILE

    created = not (output.exists() or output.is_symlink())
    output.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(output, "another training", "choose another --output")
    try:
        yield
    finally:
        (output / LOCK_FILE).unlink(missing_ok=True)  # unlinked while held: a contender sees it unlinked
        lock.release()
        if created:
            with contextlib.suppress(OSError):
                output.rmdir()  # only if empty


__all__ = [
    "check_checkpoints_folder",
    "CheckpointRecordMixin",
    "CheckpointWriteError",
    "CheckpointsProblem",
    "verify_checkpoint",
    "discard",
    "prepare_checkpoints",
    "resume_point",
    "survey",
    "training_lock",
]
