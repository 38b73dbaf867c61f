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
        os.replace(temporary, path)
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


def save_model_folder(model: Any, tokenizer: Any, target: str | os.PathLike[str], card: str | None = None) -> None:
    """``save_pretrained`` of a model and its tokenizer (and a model card) into ``target``, atomically."""

    def fill(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if card is not None:
            (staging / "README.md").write_text(card, encoding="utf-8")

    replace_folder_atomic(target, fill)
