"""Publishing a built dataset to the Hub."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets

from .output import CARD_FILE, DATA_DIR, INFO_FILE, is_built_dataset


def push_dataset(
    directory: str | os.PathLike,
    repo_id: str,
    config_name: str | None = None,
    private: bool | None = None,
    token: str | None = None,
) -> str:
    """Publish a built dataset directory as configuration ``config_name`` of the Hub dataset
    ``repo_id`` (default name: the configuration it was built as). Returns the name used."""
    directory = Path(directory)
    if not is_built_dataset(directory):
        raise ValueError(
            f"{directory} is not a built dataset (expected {CARD_FILE} and {DATA_DIR}/*.parquet); "
            "build it first with `symbolinv data build NAME --out DIR`"
        )
    if config_name is None:
        info_path = directory / INFO_FILE
        info = json.loads(info_path.read_text()) if info_path.exists() else {}
        config_name = info.get("config", "default")
    dataset = datasets.load_dataset(str(directory))
    dataset.push_to_hub(repo_id, config_name=config_name, private=private, token=token)
    _push_card_text(directory, repo_id, config_name, token)
    return config_name


def _push_card_text(directory: Path, repo_id: str, config_name: str, token: str | None) -> None:
    """``push_to_hub`` writes the card's metadata but not its text: add ours, once per config."""
    from huggingface_hub import DatasetCard

    local = DatasetCard.load(directory / CARD_FILE)
    remote = DatasetCard.load(repo_id, repo_type="dataset", token=token)
    marker = f"<!-- symbolinv config: {config_name} -->"
    if marker in remote.text:
        return
    remote.text = f"{remote.text.rstrip()}\n\n{marker}\n{local.text.strip()}\n"
    remote.push_to_hub(
        repo_id, repo_type="dataset", token=token, commit_message=f"Describe configuration {config_name}"
    )
