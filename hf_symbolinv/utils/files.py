"""Writing files so that an interruption never leaves a half-written one: write beside, then rename."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from filelock import FileLock


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
        try:
            write(temporary)
        except Exception as error:  # a full disk names the destination, not the hidden temporary file
            raise _write_failure(error, path) from error
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


#: The lock a process holds on a folder while it writes there (a dataset build, a training): a second writer is
#: refused at once, and the OS releases the lock of a process that ends, however it ends (no stale lock to remove).
LOCK_FILE = ".symbolinv.lock"


class FolderInUseError(ValueError):
    """Another process is writing the folder right now (it holds the folder's :data:`LOCK_FILE`)."""


def lock_folder(directory: Path, writer: str, instead: str) -> FileLock:
    """Hold ``directory``'s lock, or refuse at once naming it: ``writer`` says who else writes there ("another
    build"), ``instead`` what the user may do ("choose another --out")."""
    from filelock import FileLock, Timeout

    path = directory / LOCK_FILE
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise FolderInUseError(
            f"{directory} is being written by {writer} right now (it holds {path}); wait for it to finish or {instead}"
        ) from None
    return lock


#: The record of what a folder write put there: each file's path and SHA-256. A folder is replaced only if every file
#: in it is one the record lists, unchanged; a user's file, or a written one the user edited, is never replaced
#: (file names alone prove nothing: a user's ``README.md`` or ``config.json`` has the names a save writes).
MANIFEST = ".symbolinv-written.json"


def file_digest(path: Path) -> str:
    """The SHA-256 of the file ``path``, in hex."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def write_record(folder: Path, **extra: Any) -> None:
    """Write ``folder``'s record (the files in it, their SHA-256 and sizes, and ``extra`` entries), last."""
    files = {
        str(file.relative_to(folder)): file
        for file in sorted(folder.rglob("*"))
        if file.is_file() and not file.is_symlink() and file.name != MANIFEST
    }
    record = {
        "files": {name: file_digest(file) for name, file in files.items()},
        "sizes": {name: file.stat().st_size for name, file in files.items()},
        **extra,
    }
    write_text_atomic(folder / MANIFEST, json.dumps(record, indent=1))


class DamagedRecordError(ValueError):
    """A folder's record (:data:`MANIFEST`) cannot be read as one: the folder is treated as not the package's."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} is damaged ({reason})")
        self.reason = reason


def read_record(folder: Path) -> dict[str, Any] | None:
    """The record of ``folder`` (None: it has none), or :class:`DamagedRecordError` naming what is wrong with it."""
    path = folder / MANIFEST
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        if path.is_symlink() or not path.is_file():
            raise ValueError("it is not a regular file")
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError(f"it holds {type(record).__name__}, not an object")
        files = record.get("files")
        if not isinstance(files, dict):
            raise ValueError(f"'files' is {json.dumps(files)[:40]}, not a mapping of file names to SHA-256")
        if not all(isinstance(name, str) and isinstance(digest, str) for name, digest in files.items()):
            raise ValueError("'files' maps a name to something other than a SHA-256")
        sizes = record.get("sizes", {})
        if not isinstance(sizes, dict) or not all(isinstance(size, int) for size in sizes.values()):
            raise ValueError("'sizes' is not a mapping of file names to sizes")
    except (OSError, ValueError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error).splitlines()[0]
        raise DamagedRecordError(path, reason) from None
    return record


def files_not_written_here(target: Path) -> list[str]:
    """The entries of the folder ``target`` that no folder write of the package put there as they are now: every
    one, if it holds no record (or a damaged one); else those the record does not list or that changed since (each
    with why). A folder the record does not account for (an empty one, say), a link and a named pipe or other
    special file are never the package's."""
    try:
        record = (read_record(target) or {"files": {}})["files"]
        damaged = None
    except DamagedRecordError as error:
        record, damaged = {}, f"{MANIFEST} (a damaged record: {error.reason})"
    holders = {str(parent) for name in record for parent in Path(name).parents}
    foreign = [damaged] if damaged else []
    for file in sorted(target.rglob("*")):
        name = str(file.relative_to(target))
        if name == MANIFEST and not file.is_symlink():
            continue
        if file.is_symlink():
            foreign.append(f"{name} (a link)")
        elif file.is_dir():
            if name not in holders:
                foreign.append(f"{name}/ (a folder)")
        elif not file.is_file():
            foreign.append(f"{name} (not a regular file)")
        elif name not in record:
            foreign.append(name)
        elif file_digest(file) != record[name]:
            foreign.append(f"{name} (changed since it was written)")
    return foreign


def record_written(*paths: str | os.PathLike[str]) -> None:
    """Add files a command wrote into a folder the package wrote (an evaluation report beside the weights) to
    that folder's record, so that a later save replaces them with the rest instead of refusing the folder. A folder
    whose record is damaged is not the package's: nothing is added (a note says so)."""
    for path in map(Path, paths):
        if not path.is_file():
            continue
        try:
            record = read_record(path.parent)
        except DamagedRecordError as error:
            print(f"note: {error}; {path.name} is not recorded as written by the package")
            continue
        if record is None:
            continue
        record["files"][path.name] = file_digest(path)
        if isinstance(record.get("sizes"), dict):
            record["sizes"][path.name] = path.stat().st_size
        write_text_atomic(path.parent / MANIFEST, json.dumps(record, indent=1))


def _refusal(target: str, foreign: list[str]) -> DestinationInUseError:
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    return DestinationInUseError(
        f"{target} holds files this command did not write ({shown}); it replaces only what it wrote itself: "
        "choose an empty or new destination"
    )


def _check_replaceable(target: Path) -> None:
    """Refuse to replace ``target`` unless it is a folder of files the package wrote there and nobody changed."""
    if target.is_symlink() or not target.is_dir():
        raise DestinationInUseError(f"{target} exists and is not a folder; choose another destination")
    foreign = files_not_written_here(target)
    if foreign:
        raise _refusal(str(target), foreign)


def _remove_stale_siblings(target: Path) -> None:
    """Remove the staging and old-copy folders that an earlier write of ``target`` left when it was killed (their
    names carry the writer's process id; a folder of a process still running is another writer's, and stays)."""
    for kind in ("partial", "old"):
        for folder in target.parent.glob(f".{target.name}.{kind}-*-*"):
            pid = folder.name[len(f".{target.name}.{kind}-") :].split("-", 1)[0]
            if not pid.isdigit() or not folder.is_dir() or folder.is_symlink():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                pass  # a process of another user: alive


#: What torch, safetensors and the C++ streams under them say when the disk fills (they raise no OSError).
FULL_DISK_SIGNS = ("No space left", "StorageFull", "inline_container", "basic_ios", "iostream error")


def _write_failure(error: Exception, target: Path) -> Exception:
    """A failure to write a staging copy (a folder's or a file's), as an error naming the destination rather than
    the hidden staging path (or, for torch and safetensors, no path at all); other errors are returned as they
    are."""
    text = str(error)
    if isinstance(error, OSError) and error.errno is not None:
        return OSError(
            error.errno, f"{error.strerror or text} (while writing; what was there is left as it was)", str(target)
        )
    if any(sign in text for sign in FULL_DISK_SIGNS):
        return OSError(
            errno.ENOSPC, "no space left on the device (while writing; what was there is left as it was)", str(target)
        )
    return error


def replace_folder_atomic(target: str | os.PathLike[str], fill: Callable[[Path], Any]) -> None:
    """Let ``fill`` write a fresh sibling folder, then swap it in for ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_siblings(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-", dir=target.parent))
    try:
        os.chmod(staging, default_mode(directory=True))
        try:
            fill(staging)
        except Exception as error:
            raise _write_failure(error, target) from error
        write_record(staging)
        for file in staging.rglob("*"):  # transformers writes the weights owner-only; the rest is not
            os.chmod(file, default_mode(directory=file.is_dir()))
        old = None
        if target.exists() or target.is_symlink():
            _check_replaceable(target)
            # A folder cannot be renamed onto a non-empty one: move the old one aside first.
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{os.getpid()}-", dir=target.parent))
            os.replace(target, old / target.name)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


_GENERATION_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


#: The entries of a saved folder's JSON files that point at code files saved beside the weights.
_CODE_ENTRIES = {"config.json": ("auto_map", "custom_pipelines"), "tokenizer_config.json": ("auto_map",)}


def drop_model_code(folder: Path) -> None:
    """Remove the family's code that ``save_pretrained`` copied into ``folder``, and the entries of its JSON files
    that point at it: the folder then loads with the package's classes only (a folder inside the package needs no
    copy of the package's code, and must not claim code it does not hold)."""
    for code in folder.glob("*.py"):
        code.unlink()
    for name, keys in _CODE_ENTRIES.items():
        path = folder / name
        if path.is_file():
            fields = json.loads(path.read_text(encoding="utf-8"))
            for key in keys:
                fields.pop(key, None)
            path.write_text(json.dumps(fields, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def keep_generation_token_ids(model: Any) -> None:
    """Reduce ``model``'s generation settings to its token ids before it is saved: generating during training fills
    in every default, and a stored ``max_length`` clashes with every later ``max_new_tokens`` (a warning on each
    use)."""
    settings = getattr(model, "generation_config", None)
    if settings is not None:
        from transformers import GenerationConfig

        ids = {name: getattr(settings, name, None) for name in _GENERATION_TOKEN_IDS}
        model.generation_config = GenerationConfig(**{name: value for name, value in ids.items() if value is not None})


def name_after_folder(model: Any, folder: str | os.PathLike[str]) -> str | None:
    """Set ``model``'s config ``_name_or_path`` to the name of ``folder``, where it is about to be saved, and return
    what it was (None: the model has no config). The config records where the weights were loaded from, a path of the
    machine that saved them, which a folder kept in a repository would carry: the folder's name says the same without
    it."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    loaded_from = config.name_or_path
    config.name_or_path = Path(folder).name
    return loaded_from


def save_model_folder(
    model: Any, tokenizer: Any, target: str | os.PathLike[str], card: str | None = None, with_code: bool = True
) -> None:
    """``save_pretrained`` of a model and its tokenizer (and a model card) into ``target``, atomically: with the
    family's code (so that it loads with ``trust_remote_code=True`` where the package is absent) unless
    ``with_code`` is false (a model that ships inside the package). The model's generation settings are saved as its
    token ids only (:func:`keep_generation_token_ids`). The config's ``_name_or_path`` is the folder's name
    (:func:`name_after_folder`)."""
    keep_generation_token_ids(model)
    name_after_folder(model, target)

    def fill(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if card is not None:
            (staging / "README.md").write_text(card, encoding="utf-8")
        if not with_code:
            drop_model_code(staging)

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
    """Refuse, before any work, a model destination that :func:`replace_folder_atomic` would refuse after it: a
    file, a link, or a folder holding anything the package did not write there (see :data:`MANIFEST`)."""
    path = Path(path)
    # The same error class as the refusal after the work, so that callers catch one kind.
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise DestinationInUseError(f"{_label(path, flag)} exists and is not a folder; choose another destination")
    if path.is_dir():
        foreign = files_not_written_here(path)
        if foreign:
            raise _refusal(_label(path, flag), foreign)
    check_output_folder(path, flag)


def check_input_folder(path: str | os.PathLike[str], flag: str | None, what: str) -> Path:
    """``path`` as a folder to read ``what`` (e.g. "a saved model") from, or a refusal naming it."""
    path = Path(path)
    if not path.exists():
        raise PathProblem(f"{_label(path, flag)}: no such folder (expected {what})")
    if not path.is_dir():
        raise PathProblem(f"{_label(path, flag)} is a file, not a folder (expected {what})")
    return path


def resolve_model_folder(path: str, flag: str | None = None) -> Path:
    """The saved model folder ``path`` names (itself, or the ``model/`` of a training OUTPUT)."""
    folder = check_input_folder(path, flag, "a saved model folder")
    if (folder / "model" / "config.json").is_file():
        return folder / "model"
    if not (folder / "config.json").is_file():
        raise PathProblem(f"{f'{flag} ' if flag else ''}{path} holds no saved model (no config.json)")
    return folder
