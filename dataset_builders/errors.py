"""The errors the dataset builders raise: every one is a ``ValueError`` whose message is one line naming the
problem and the path (the command line prints it and exits with status 2)."""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class DatasetBuildError(ValueError):
    """A dataset could not be built, read or written; the message names the path."""


class OutputDirError(DatasetBuildError):
    """The output folder cannot be used: not a folder, not writable, or holding someone else's files."""


class OutputInUseError(OutputDirError):
    """Another build is writing the same output folder right now."""


class ParametersChangedError(OutputDirError):
    """The output folder holds a dataset (finished or interrupted) built with other parameters."""


class EmptyDatasetError(DatasetBuildError):
    """No sample at all could be generated with the parameters given."""


class DeepLTLFilesNotFoundError(DatasetBuildError, FileNotFoundError):
    """No DeepLTL ``train.txt``/``val.txt``/``test.txt`` where they were looked for (also a
    ``FileNotFoundError``, as it was before these errors had their own class)."""


class FileLineError(DatasetBuildError):
    """A malformed line of a source file the user gave (the message names the file and the 1-based line)."""

    def __init__(self, path: os.PathLike | str, line: int, message: str) -> None:
        super().__init__(f"{path}, line {line}: {message}")
        self.path = path
        self.line = line


def read_text_lines(path: os.PathLike | str, error: type[FileLineError]) -> list[str]:
    """The lines of a user's text file; a UTF-8 byte-order mark is skipped (editors on Windows add one). An
    unreadable file raises :class:`DatasetBuildError`, binary data or non-UTF-8 text ``error`` at its line."""
    try:
        data = Path(path).read_bytes()
    except OSError as failure:
        raise DatasetBuildError(f"cannot read {path}: {failure.strerror or failure}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise error(path, line, "binary data (a NUL byte); expected a text file")
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError as failure:
        line = data.count(b"\n", 0, failure.start) + 1
        raise error(path, line, f"not UTF-8 text (byte 0x{data[failure.start]:02x})") from None


#: Keys of a build's info that describe its result rather than its parameters.
_NOT_PARAMETERS = frozenset({"fingerprint", "splits", "steps"})


def describe_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """``seed 0 -> 7, num_samples 60 -> 50``: the parameters that differ between two builds."""
    keys = sorted((set(old) | set(new)) - _NOT_PARAMETERS)
    changed = [f"{key} {old.get(key)!r} -> {new.get(key)!r}" for key in keys if old.get(key) != new.get(key)]
    return ", ".join(changed) if changed else "built by another version of the builders"


def parameters_changed(path: str | os.PathLike, what: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    return (
        f"{path} already holds {what} built with other parameters ({describe_differences(old, new)}); "
        "pass --overwrite (overwrite=True) to replace it, or choose another --out"
    )
