"""Strict loading: a checkpoint loads only when its config, weights and model class agree.

``save_pretrained`` records the config's architecture fields (``config.architecture_fields``: those that change
what the weights compute) in the safetensors files' metadata; ``from_pretrained`` compares them with
config.json, and refuses missing, unexpected or mis-shaped weights and NaN or infinite values, naming the fields
and tensors. A family's pretrained-model class lists :class:`StrictLoadingMixin` before ``PreTrainedModel``.
Nothing here is specific to one family: other families copy this module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedConfig, PreTrainedModel

#: Safetensors metadata key holding the architecture fields a checkpoint's weights were saved with.
ARCHITECTURE_METADATA_KEY = "symbolinv_architecture"


def architecture_of(config: PreTrainedConfig) -> dict:
    return {field: getattr(config, field) for field in config.architecture_fields}


def weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def record_architecture(save_directory: str | os.PathLike, config: PreTrainedConfig) -> None:
    """Rewrite the saved safetensors files with the architecture fields in their metadata."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    text = json.dumps(architecture_of(config), sort_keys=True)
    for path in weight_files(Path(save_directory)):
        with safe_open(str(path), framework="pt") as handle:
            metadata = dict(handle.metadata() or {})
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
        if metadata.get(ARCHITECTURE_METADATA_KEY) == text:
            continue
        metadata[ARCHITECTURE_METADATA_KEY] = text
        staging = path.with_name(path.name + ".tmp")
        save_file(tensors, str(staging), metadata=metadata)
        os.replace(staging, path)


def saved_architecture(source: str | os.PathLike) -> dict | None:
    """The architecture fields recorded in a local checkpoint's weights (None when not recorded)."""
    from safetensors import safe_open

    folder = Path(source)
    if not folder.is_dir():
        return None
    for path in weight_files(folder):
        with safe_open(str(path), framework="pt") as handle:
            text = (handle.metadata() or {}).get(ARCHITECTURE_METADATA_KEY)
        if text is not None:
            return json.loads(text)
    return None


def check_loaded_model(model: PreTrainedModel, info: dict, source: str | os.PathLike) -> None:
    problems = []
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        names = sorted(str(name if isinstance(name, str) else name[0]) for name in info.get(kind) or ())
        if names:
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            problems.append(f"{kind.replace('_keys', '')} weights: {shown}")
    saved = saved_architecture(source)
    if saved is not None:
        current = architecture_of(model.config)
        differing = [field for field in current if field in saved and saved[field] != current[field]]
        if differing:
            pairs = ", ".join(
                f"{field} = {current[field]!r} (weights saved with {saved[field]!r})" for field in differing
            )
            problems.insert(0, f"config.json disagrees with the weights: {pairs}")
    if problems:
        raise ValueError(
            f"cannot load {source}: " + "; ".join(problems) + ". The config, the weights and the model class must "
            "come from one save_pretrained; edit nothing by hand."
        )
    # One flag per tensor, read back once (a read per tensor would wait on the device hundreds of times).
    floats = [(name, tensor) for name, tensor in model.state_dict().items() if tensor.is_floating_point()]
    finite = torch.stack([torch.isfinite(tensor).all() for _, tensor in floats]).tolist() if floats else []
    bad = [name for (name, _), ok in zip(floats, finite) if not ok]
    if bad:
        raise ValueError(
            f"cannot load {source}: NaN or infinite values in {', '.join(bad[:6])} (a corrupt or diverged checkpoint)"
        )


class StrictLoadingMixin:
    """``save_pretrained`` that records the architecture in the weights, and a strict ``from_pretrained``."""

    def save_pretrained(self, save_directory: str | os.PathLike, *args: Any, push_to_hub: bool = False, **kwargs: Any):
        """``PreTrainedModel.save_pretrained``, and the architecture fields recorded in the weights files'
        metadata: ``from_pretrained`` then refuses a config.json edited after saving."""
        result = super().save_pretrained(save_directory, *args, **kwargs)
        record_architecture(save_directory, self.config)
        if push_to_hub:  # after the metadata is written; push_to_hub saves through this method again
            hub_keys = ("repo_id", "commit_message", "private", "token", "revision", "create_pr")
            self.push_to_hub(**{key: kwargs[key] for key in hub_keys if key in kwargs})
        return result

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *args: Any, **kwargs: Any):
        """``PreTrainedModel.from_pretrained``, strict: weights missing, unexpected or of the wrong shape, a
        config.json whose architecture fields differ from those the weights were saved with, and NaN or
        infinite weights are errors naming the fields and tensors (a silent partial load changes every logit)."""
        wants_info = kwargs.pop("output_loading_info", False)
        # Shapes are compared here rather than by transformers, so that the error names the config fields.
        allow_mismatch = kwargs.pop("ignore_mismatched_sizes", False)
        try:
            model, info = super().from_pretrained(
                pretrained_model_name_or_path, *args, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
            )
        except Exception as error:
            # safetensors' own error does not say which file is damaged.
            if type(error).__name__ != "SafetensorError":
                raise
            files = ", ".join(str(path) for path in weight_files(Path(str(pretrained_model_name_or_path))))
            raise ValueError(f"cannot read the weights {files or pretrained_model_name_or_path}: {error}") from error
        if allow_mismatch:
            info = {**info, "mismatched_keys": []}
        check_loaded_model(model, info, pretrained_model_name_or_path)
        return (model, info) if wants_info else model
