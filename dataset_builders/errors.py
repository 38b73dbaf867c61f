"""The errors the dataset builders raise: every one is a ``ValueError`` whose message is one line naming the
problem and the path (the command line prints it and exits with status 2)."""

from __future__ import annotations

import os
from collections.abc import Mapping
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
