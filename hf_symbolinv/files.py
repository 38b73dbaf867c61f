"""Writing files so that an interruption never leaves a half-written one: write beside, then rename."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def default_mode(directory: bool = False) -> int:
    """The mode a plain open()/mkdir() would give (mkstemp and mkdtemp make private files instead)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if directory else 0o666) & ~umask


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> None:
    """Call ``write`` on a temporary sibling of ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        os.chmod(temporary, default_mode())
        try:
            os.replace(temporary, path)
        except OSError as error:
            # The error would name the hidden temporary file; the user knows the destination.
            raise OSError(error.errno, error.strerror, str(path)) from error
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_atomic(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


class DestinationInUseError(FileExistsError):
    """The destination holds something the writer did not create, so replacing it could lose data."""


def _check_replaceable(target: Path, staging: Path) -> None:
    """Refuse to replace ``target`` unless it is a folder of the files the new one consists of.

    A previous save of the same kind (a re-run, a resumed training) is replaced; a plain file, a link or a
    folder with any other file in it is left alone, since it may hold the user's work.
    """
    if target.is_symlink() or not target.is_dir():
        raise DestinationInUseError(f"{target} exists and is not a folder; choose another destination")
    owned = {file.relative_to(staging) for file in staging.rglob("*")}
    foreign = sorted(
        str(file.relative_to(target)) for file in target.rglob("*") if file.relative_to(target) not in owned
    )
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise DestinationInUseError(
            f"{target} holds files this command did not write ({shown}); choose an empty or new destination"
        )


def replace_folder_atomic(target: str | os.PathLike[str], fill: Callable[[Path], Any]) -> None:
    """Let ``fill`` write a fresh sibling folder, then swap it in for ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        os.chmod(staging, default_mode(directory=True))
        fill(staging)
        for file in staging.rglob("*"):  # transformers writes the weights owner-only; the rest is not
            os.chmod(file, default_mode(directory=file.is_dir()))
        old = None
        if target.exists() or target.is_symlink():
            _check_replaceable(target, staging)
            # A folder cannot be renamed onto a non-empty one: move the old one aside first.
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / target.name)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


_GENERATION_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def save_model_folder(model: Any, tokenizer: Any, target: str | os.PathLike[str], card: str | None = None) -> None:
    """``save_pretrained`` of a model and its tokenizer (and a model card) into ``target``, atomically. The model's
    generation settings are saved as its token ids only: training leaves every default there, and a stored
    ``max_length`` clashes with every ``max_new_tokens`` and warns on each use."""
    settings = getattr(model, "generation_config", None)
    if settings is not None:
        from transformers import GenerationConfig

        ids = {name: getattr(settings, name, None) for name in _GENERATION_TOKEN_IDS}
        model.generation_config = GenerationConfig(**{name: value for name, value in ids.items() if value is not None})

    def fill(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if card is not None:
            (staging / "README.md").write_text(card, encoding="utf-8")

    replace_folder_atomic(target, fill)


# ---------------------------------------------------------------------------------------------------
# Checking paths before a command starts work: a bad destination found after an hour of training is
# found too late, and one found by the OS names a temporary file or a parent instead of the argument.
# ---------------------------------------------------------------------------------------------------
class PathProblem(ValueError):
    """A path argument that cannot be used; the message is one line naming the argument and the path."""


#: What ``save_pretrained`` of a model and its tokenizer (and a model card) may write: a folder holding
#: anything else holds the user's files, and is refused before the work rather than after it.
#: (``.py``: the model's code, saved beside the weights for the Auto classes.)
_SAVE_SUFFIXES = frozenset({".json", ".safetensors", ".bin", ".model", ".spm", ".txt", ".jinja", ".py"})


def _label(path: str | os.PathLike[str], flag: str | None) -> str:
    return f"{flag} {path}" if flag else str(path)


def _nearest_existing(path: Path) -> Path:
    for candidate in [path, *path.absolute().parents]:
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(path.absolute().anchor)


def _check_can_create(path: Path, flag: str | None) -> None:
    """``path`` does not exist: its nearest existing ancestor must be a folder this process can write in."""
    ancestor = _nearest_existing(path)
    if not ancestor.is_dir():
        raise PathProblem(f"cannot create {_label(path, flag)}: {ancestor} is not a folder")
    _probe(ancestor, path, flag)


def _probe(folder: Path, path: Path, flag: str | None) -> None:
    """Create and remove a file in ``folder``: permissions, read-only mounts and pseudo file systems all refuse
    the same way (also for root, whom mode bits do not stop)."""
    try:
        handle, name = tempfile.mkstemp(prefix=".symbolinv-probe-", dir=folder)
    except OSError as error:
        raise PathProblem(
            f"cannot write {_label(path, flag)}: cannot create files in {folder} ({error.strerror or error})"
        ) from None
    os.close(handle)
    os.unlink(name)


def check_output_file(path: str | os.PathLike[str], flag: str | None = None) -> None:
    """Refuse a destination for one file (a report, a heatmap) that is a folder or cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise PathProblem(f"{_label(path, flag)} is a folder; give a file name")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise PathProblem(f"{_label(path, flag)} exists and is not a regular file")
        _probe(path.parent, path, flag)
    else:
        _check_can_create(path, flag)


def check_output_folder(path: str | os.PathLike[str], flag: str | None = None) -> None:
    """Refuse a destination folder that is a file or cannot be created or written."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise PathProblem(f"{_label(path, flag)} exists and is not a folder; choose another destination")
        _probe(path, path, flag)
    else:
        _check_can_create(path, flag)


def check_model_destination(path: str | os.PathLike[str], flag: str | None = None) -> None:
    """Refuse, before any work, a model destination that :func:`replace_folder_atomic` would refuse after it:
    a file, a link, or a folder holding a subfolder or a file of a kind no model save writes (the check after
    the work compares with the files actually written, and still applies)."""
    path = Path(path)
    # The same error class as the refusal after the work, so that callers catch one kind.
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise DestinationInUseError(f"{_label(path, flag)} exists and is not a folder; choose another destination")
    if path.is_dir():
        foreign = sorted(
            child.name
            for child in path.iterdir()
            if child.is_symlink()
            or not child.is_file()
            or not (child.name == "README.md" or child.suffix in _SAVE_SUFFIXES)
        )
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise DestinationInUseError(
                f"{_label(path, flag)} holds files this command did not write ({shown}); "
                "choose an empty or new destination"
            )
    check_output_folder(path, flag)


def check_input_folder(path: str | os.PathLike[str], flag: str | None, what: str) -> Path:
    """``path`` as a folder to read ``what`` (e.g. "a saved model") from, or a refusal naming it."""
    path = Path(path)
    if not path.exists():
        raise PathProblem(f"{_label(path, flag)}: no such folder (expected {what})")
    if not path.is_dir():
        raise PathProblem(f"{_label(path, flag)} is a file, not a folder (expected {what})")
    return path
