"""Output folders of the dataset builders: the files a built dataset consists of, checked and written
atomically."""

from __future__ import annotations

import json
import os
import shutil
import string
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq

STATE_FILE = "state.json"
#: Set in data-generation workers: ``import hf_symbolinv`` then skips the model registration.
PARTIAL_DIR = ".partial"
INFO_FILE = "build_info.json"
CARD_FILE = "README.md"
DATA_DIR = "data"
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


def write_parquet(dataset: datasets.Dataset, path: Path) -> None:
    """The dataset's Arrow table as Parquet (its schema carries the features), without the progress
    bar of ``Dataset.to_parquet``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(dataset.data.table, path)


def read_parquet_rows(path: Path) -> list[dict[str, Any]]:
    # pyarrow directly: Dataset.from_parquet would copy every chunk into the datasets cache.
    return pq.read_table(path).to_pylist()


_OUR_FILES = (DATA_DIR, CARD_FILE, INFO_FILE, PARTIAL_DIR)


def check_output_dir(out_dir: Path) -> None:
    """Refuse to build into a non-empty directory that is not a dataset built here (we replace
    what we wrote there, and must not delete a user's files)."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ValueError(f"{out_dir} exists and is not a directory")
    strangers = [c.name for c in out_dir.iterdir() if c.name not in _OUR_FILES and not c.name.startswith(".staging-")]
    if strangers:
        raise ValueError(
            f"{out_dir} is not empty and does not hold a dataset built by symbolinv ({', '.join(sorted(strangers)[:3])}"
            f"{', ...' if len(strangers) > 3 else ''}); choose another --out"
        )


def write_dataset(
    out_dir: Path,
    splits: Mapping[str, list[dict[str, Any]]],
    features: datasets.Features,
    card: str | Callable[[datasets.DatasetDict], str],
    info: Mapping[str, Any] | None = None,
) -> datasets.DatasetDict:
    """Write the splits as Parquet plus a dataset card into ``out_dir``, the layout that
    ``load_dataset(out_dir)`` reads and ``push_to_hub`` publishes.

    Everything is written beside the destination first and moved in by renames; the partial build
    is removed only once the dataset is in place. ``card`` may be a function of the dataset.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(".staging-*"):  # left by a build killed while writing
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    dataset = datasets.DatasetDict(
        {name: datasets.Dataset.from_list(list(rows), features=features) for name, rows in splits.items()}
    )
    for name, split in dataset.items():
        write_parquet(split, staging / DATA_DIR / f"{name}-00000-of-00001.parquet")
    (staging / CARD_FILE).write_text(card(dataset) if callable(card) else card)
    if info is not None:
        (staging / INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    for name in (DATA_DIR, CARD_FILE, INFO_FILE):  # only what we write: never a user's files
        target = out_dir / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for child in staging.iterdir():
        os.replace(child, out_dir / child.name)
    staging.rmdir()
    shutil.rmtree(out_dir / PARTIAL_DIR, ignore_errors=True)
    return dataset


def read_built(out_dir: Path, fingerprint: str) -> datasets.DatasetDict | None:
    """The dataset already complete in ``out_dir`` if it was built with ``fingerprint``, else None."""
    info_path = Path(out_dir) / INFO_FILE
    if not info_path.exists():
        return None
    try:
        info = json.loads(info_path.read_text())
    except json.JSONDecodeError:
        return None
    if info.get("fingerprint") != fingerprint:
        return None
    out = {}
    order = list(SPLIT_FRACTIONS)
    for name in sorted(info.get("splits", {}), key=lambda n: order.index(n) if n in order else len(order)):
        path = Path(out_dir) / DATA_DIR / f"{name}-00000-of-00001.parquet"
        if not path.exists():
            return None
        out[name] = datasets.Dataset.from_list(read_parquet_rows(path), features=FEATURES)
    return datasets.DatasetDict(out)


class BuildDirectory:
    """The output directory of a build, or a temporary one removed afterwards when none is given."""

    def __init__(self, out_dir: str | os.PathLike | None) -> None:
        self.temporary = out_dir is None
        self.path = Path(tempfile.mkdtemp(prefix="symbolinv-data-")) if out_dir is None else Path(out_dir)
        check_output_dir(self.path)

    def part(self, name: str) -> Path:
        """Where a generation step keeps its chunks and state (resumable)."""
        return self.path / PARTIAL_DIR / name

    def __enter__(self) -> BuildDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.temporary:
            shutil.rmtree(self.path, ignore_errors=True)


def is_built_dataset(directory: Path) -> bool:
    directory = Path(directory)
    return (directory / CARD_FILE).is_file() and any((directory / DATA_DIR).glob("*.parquet"))
