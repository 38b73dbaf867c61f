"""Strict loading of the SIT family: a checkpoint loads only when its config, weights and model class agree.

``save_pretrained`` records the architecture fields in the safetensors files' metadata; ``from_pretrained``
compares them with config.json, and refuses missing, unexpected or mis-shaped weights and NaN or infinite
values, naming the fields and tensors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from transformers import PreTrainedModel

from .configuration_symbolinv import SymbolInvConfig

#: Safetensors metadata key holding the architecture fields a checkpoint's weights were saved with.
ARCHITECTURE_METADATA_KEY = "symbolinv_architecture"
#: The config fields that change what the weights compute (dropout, limits and flags do not).
ARCHITECTURE_FIELDS = (
    "vocab_size",
    "num_base_tokens",
    "token_arities",
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "layer_norm_eps",
    "stream_attention",
    "embedding_type",
    "encoder_position_encoding",
    "decoder_position_encoding",
    "rope_theta",
    "feature_normalization",
    "loss_type",
    "embedding_scale",
    "stream_aggregation",
    "num_aggregation_states",
    "num_symbol_embeddings",
    "random_embedding_method",
    "random_embedding_dim",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
)


def architecture_of(config: SymbolInvConfig) -> dict:
    return {field: getattr(config, field) for field in ARCHITECTURE_FIELDS}


def weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def record_architecture(save_directory: str | os.PathLike, config: SymbolInvConfig) -> None:
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
        differing = [field for field in ARCHITECTURE_FIELDS if field in saved and saved[field] != current[field]]
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
    bad = [
        name
        for name, tensor in model.state_dict().items()
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())
    ]
    if bad:
        raise ValueError(
            f"cannot load {source}: NaN or infinite values in {', '.join(bad[:6])} (a corrupt or diverged checkpoint)"
        )
