"""Output folders of the dataset builders: the files a built dataset consists of, checked, locked and written
atomically.

A build owns only what it writes in its folder: ``data/<split>-NNNNN-of-NNNNN.parquet``, ``README.md``,
``build_info.json`` (written last: a folder with one is complete), the resumable ``.partial/`` folder, the
``.staging-*`` folders of a write in progress and the ``.symbolinv.lock`` file. It refuses a folder holding
anything else, and never removes anything else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
from filelock import FileLock

from hf_symbolinv.utils.files import LOCK_FILE, FolderInUseError, lock_folder, write_text_atomic

from .errors import EmptyDatasetError, OutputDirError, OutputInUseError, ParametersChangedError, parameters_changed

STATE_FILE = "state.json"
#: Set in data-generation workers: ``import hf_symbolinv`` then skips the model registration.
PARTIAL_DIR = ".partial"
INFO_FILE = "build_info.json"
CARD_FILE = "README.md"
DATA_DIR = "data"
STAGING_PREFIX = ".staging-"
#: Bumped whenever a change alters what a build produces, so that stale partial builds are refused.
FORMAT_VERSION = 1

#: The columns of every dataset built here. For the evaluation grids ``num_symbols`` and ``size``
#: are the cell coordinates.
FEATURES = datasets.Features(
    {
        "input": datasets.Value("string"),
        "target": datasets.Value("string"),
        "num_symbols": datasets.Value("int32"),
        "size": datasets.Value("int32"),
    }
)
SPLIT_FRACTIONS = {"train": 0.8, "validation": 0.1, "test": 0.1}
LETTERS = string.ascii_lowercase

#: The name of a split file a build writes in ``data/`` (and the only kind it removes there).
_SPLIT_FILE = re.compile(r"[A-Za-z0-9_]+-\d{5}-of-\d{5}\.parquet")


def rows_to_dataset(rows: list[dict[str, Any]], features: datasets.Features) -> datasets.Dataset:
    """The rows as a dataset with ``features``, also when there are none (``from_list([])`` has no columns)."""
    if not rows:
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    return datasets.Dataset.from_list(rows, features=features)


def write_parquet(dataset: datasets.Dataset, path: Path) -> None:
    """The dataset's Arrow table as Parquet (its schema carries the features), without the progress
    bar of ``Dataset.to_parquet``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(dataset.data.table, path)


def read_parquet_rows(path: Path) -> list[dict[str, Any]]:
    # pyarrow directly: Dataset.from_parquet would copy every chunk into the datasets cache.
    return pq.read_table(path).to_pylist()


def read_info(path: Path) -> dict[str, Any] | None:
    """A build's info (``build_info.json``), or None where there is none or it is not one of ours."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("fingerprint"), str) else None


# ---------------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------------
def check_output_path(out_dir: Path) -> None:
    """Refuse an output path that is a file, or lies under one."""
    out_dir = Path(out_dir)
    if out_dir.exists() or out_dir.is_symlink():
        if not out_dir.is_dir():
            raise OutputDirError(f"{out_dir} exists and is not a directory; choose another --out")
        return
    for parent in out_dir.absolute().parents:  # the nearest existing ancestor must be a folder
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise OutputDirError(f"cannot create {out_dir}: {parent} is not a directory")
            return


def foreign_files(out_dir: Path) -> list[str]:
    """What ``out_dir`` holds that no build wrote (relative names, sorted)."""
    ours = read_info(out_dir / INFO_FILE) is not None or (out_dir / PARTIAL_DIR).is_dir()
    strangers = []
    for child in out_dir.iterdir():
        name = child.name
        if name in (PARTIAL_DIR, LOCK_FILE) or name.startswith(STAGING_PREFIX):
            continue
        if name == INFO_FILE and read_info(child) is not None:
            continue
        # A card and data are ours only beside a build's info or its partial state (not a user's README).
        if name == CARD_FILE and ours and child.is_file() and not child.is_symlink():
            continue
        if name == DATA_DIR and ours and child.is_dir() and not child.is_symlink():
            strangers.extend(
                f"{DATA_DIR}/{file.name}"
                for file in child.iterdir()
                if not (_SPLIT_FILE.fullmatch(file.name) and file.is_file() and not file.is_symlink())
            )
            continue
        strangers.append(name)
    return sorted(strangers)


def check_output_dir(out_dir: Path) -> None:
    """Refuse an output path that is not a folder, or a non-empty folder that is not a dataset built
    here (a build replaces what it wrote there, and must not delete a user's files)."""
    out_dir = Path(out_dir)
    check_output_path(out_dir)
    if not out_dir.exists():
        return
    try:
        strangers = foreign_files(out_dir)
    except OSError as error:
        raise OutputDirError(f"cannot read {out_dir}: {error.strerror or error}") from None
    if read_info(out_dir / INFO_FILE) is not None or (out_dir / PARTIAL_DIR).is_dir():
        # A dataset of ours: a user's files beside it (notes) are never touched by a build, which replaces only
        # what builds write; files inside its data folder would go with that folder, so they still refuse it.
        strangers = [name for name in strangers if name.startswith(f"{DATA_DIR}/")]
    if strangers:
        raise OutputDirError(
            f"{out_dir} is not empty and does not hold a dataset built by symbolinv ({', '.join(strangers[:3])}"
            f"{', ...' if len(strangers) > 3 else ''}); choose another --out"
        )


# ---------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------
def write_dataset(
    out_dir: Path,
    splits: Mapping[str, list[dict[str, Any]]],
    features: datasets.Features,
    card: str | Callable[[datasets.DatasetDict], str],
    info: Mapping[str, Any] | None = None,
) -> datasets.DatasetDict:
    """Write the splits as Parquet plus a dataset card into ``out_dir``, the layout that
    ``load_dataset(out_dir)`` reads and ``push_to_hub`` publishes.

    An empty split is left out (with a warning), since ``load_dataset`` cannot read a split without
    rows; no sample at all raises :class:`EmptyDatasetError`. Everything is written
    beside the destination first and moved in by renames, ``build_info.json`` last; the partial build
    is removed only once the dataset is in place. ``card`` may be a function of the dataset.
    """
    out_dir = Path(out_dir)
    if not any(splits.values()):
        what = (info or {}).get("config", "the dataset")
        params = {k: v for k, v in (info or {}).items() if k not in ("config", "fingerprint", "splits", "steps")}
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        raise EmptyDatasetError(
            f"no sample of {what} could be generated with these parameters ({shown}); nothing was written to {out_dir}"
        )
    empty = [name for name, rows in splits.items() if not rows]
    if empty:
        warnings.warn(
            f"{out_dir}: split(s) {', '.join(empty)} got no sample and are left out (too few samples?)", stacklevel=3
        )
        splits = {name: rows for name, rows in splits.items() if rows}
        if info is not None and "splits" in info:
            info = {**info, "splits": {name: len(rows) for name, rows in splits.items()}}
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
    try:
        dataset = datasets.DatasetDict({name: rows_to_dataset(list(rows), features) for name, rows in splits.items()})
        for name, split in dataset.items():
            write_parquet(split, staging / DATA_DIR / f"{name}-00000-of-00001.parquet")
        (staging / CARD_FILE).write_text(card(dataset) if callable(card) else card, encoding="utf-8")
        if info is not None:
            (staging / INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _move_in(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(out_dir / PARTIAL_DIR, ignore_errors=True)
    return dataset


def _move_in(staging: Path, out_dir: Path) -> None:
    """Replace the dataset files of ``out_dir`` by those of ``staging``, touching no other file."""
    # The old info goes first and the new one comes last: a folder with an info file is complete.
    (out_dir / INFO_FILE).unlink(missing_ok=True)
    data = out_dir / DATA_DIR
    if data.is_dir() and not data.is_symlink():
        for old in data.iterdir():
            if _SPLIT_FILE.fullmatch(old.name) and old.is_file() and not old.is_symlink():
                old.unlink()
    data.mkdir(exist_ok=True)
    for new in (staging / DATA_DIR).iterdir():
        os.replace(new, data / new.name)
    os.replace(staging / CARD_FILE, out_dir / CARD_FILE)
    if (staging / INFO_FILE).exists():
        os.replace(staging / INFO_FILE, out_dir / INFO_FILE)


def read_built(out_dir: Path, fingerprint: str) -> datasets.DatasetDict | None:
    """The dataset already complete in ``out_dir`` if it was built with ``fingerprint``, else None."""
    info = read_info(Path(out_dir) / INFO_FILE)
    if info is None or info.get("fingerprint") != fingerprint:
        return None
    out = {}
    order = list(SPLIT_FRACTIONS)
    for name in sorted(info.get("splits", {}), key=lambda n: order.index(n) if n in order else len(order)):
        path = Path(out_dir) / DATA_DIR / f"{name}-00000-of-00001.parquet"
        if not path.exists():
            return None
        out[name] = rows_to_dataset(read_parquet_rows(path), FEATURES)
    return datasets.DatasetDict(out)


# ---------------------------------------------------------------------------------------------------
# The folder of one build
# ---------------------------------------------------------------------------------------------------
def _make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents; return those created, outermost first."""
    missing = []
    current = path.absolute()
    while not (current.exists() or current.is_symlink()) and current != current.parent:
        missing.append(current)
        current = current.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputDirError(f"cannot create {path}: {error.strerror or error}") from None
    return missing[::-1]


def _acquire_lock(directory: Path) -> FileLock:
    """The folder's lock, or a refusal at once if another process holds it (see :func:`lock_folder`)."""
    try:
        return lock_folder(directory, "another build", "choose another --out")
    except FolderInUseError as error:
        raise OutputInUseError(str(error)) from None
    except OSError as error:
        raise OutputDirError(f"cannot write in {directory}: {error.strerror or error}") from None


class BuildDirectory:
    """The output folder of a build (locked while in use), or a temporary one removed afterwards when
    none is given.

    With ``info`` (the build's parameters and their ``fingerprint``) entering checks what the folder
    holds: the finished dataset of the same parameters is :attr:`built` (rerunning is a no-op); a
    finished or interrupted build of other parameters is refused unless ``overwrite`` (the interrupted
    one is then discarded at once, the finished one replaced when the new one is complete).

    Leaving after a failure removes what the build created, except the resumable state of an
    interrupted generation.
    """

    def __init__(
        self, out_dir: str | os.PathLike | None, info: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> None:
        self.temporary = out_dir is None
        self.path = Path(tempfile.mkdtemp(prefix="symbolinv-data-")) if out_dir is None else Path(out_dir)
        self.info = dict(info) if info is not None else None
        self.overwrite = overwrite
        self.built: datasets.DatasetDict | None = None
        self._lock: FileLock | None = None
        self._created: list[Path] = []
        if not self.temporary:
            check_output_dir(self.path)  # early, before anything is created

    def part(self, name: str) -> Path:
        """Where a generation step keeps its chunks and state (resumable)."""
        return self.path / PARTIAL_DIR / name

    def __enter__(self) -> BuildDirectory:
        if self.temporary:
            return self
        check_output_dir(self.path)
        self._created = _make_dirs(self.path)
        try:
            self._lock = _acquire_lock(self.path)
        except BaseException:
            self._remove_created()
            raise
        try:
            check_output_dir(self.path)  # again: another build may have changed it before we held the lock
            if self.info is not None:
                self._check_contents(self.info)
        except BaseException:
            self._leave(failed=True, clean_partial=False)
            raise
        return self

    def _check_contents(self, info: Mapping[str, Any]) -> None:
        finished = read_info(self.path / INFO_FILE)
        if finished is not None:
            if finished["fingerprint"] == info["fingerprint"]:
                self.built = read_built(self.path, info["fingerprint"])  # None if its files are gone: build again
                if self.built is not None:
                    return
            elif not self.overwrite:
                raise ParametersChangedError(parameters_changed(self.path, "a finished dataset", finished, info))
        partial_dir = self.path / PARTIAL_DIR
        partial = read_info(partial_dir / INFO_FILE)
        if partial_dir.exists() and (partial is None or partial["fingerprint"] != info["fingerprint"]):
            if partial is not None and not self.overwrite:
                raise ParametersChangedError(parameters_changed(self.path, "an interrupted build", partial, info))
            if self.overwrite:
                shutil.rmtree(partial_dir)
            # (without overwrite, a partial build of unknown parameters is checked step by step by generate)
        try:
            write_text_atomic(partial_dir / INFO_FILE, json.dumps(info, indent=1, sort_keys=True) + "\n")
        except OSError as error:
            raise OutputDirError(f"cannot write in {self.path}: {error.strerror or error}") from None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self.temporary:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        self._leave(failed=exc_type is not None, clean_partial=isinstance(exc, EmptyDatasetError))

    def _leave(self, failed: bool, clean_partial: bool) -> None:
        try:
            for stale in self.path.glob(STAGING_PREFIX + "*"):  # a write that failed or was killed
                shutil.rmtree(stale, ignore_errors=True)
            partial = self.path / PARTIAL_DIR
            # Keep what an interrupted generation committed (it resumes from there), nothing else.
            if failed and partial.is_dir() and (clean_partial or not any(partial.rglob(STATE_FILE))):
                shutil.rmtree(partial, ignore_errors=True)
        finally:
            if self._lock is not None:
                # Unlinked while still held: a contender that opened the old file sees it unlinked and retries.
                (self.path / LOCK_FILE).unlink(missing_ok=True)
                self._lock.release()
                self._lock = None
            self._remove_created()

    def _remove_created(self) -> None:
        """Remove the folders this build created, if they are empty (a failure left nothing in them)."""
        for directory in reversed(self._created):
            try:
                directory.rmdir()
            except OSError:
                break
        self._created = []


def is_built_dataset(directory: Path) -> bool:
    directory = Path(directory)
    return (directory / CARD_FILE).is_file() and any((directory / DATA_DIR).glob("*.parquet"))
