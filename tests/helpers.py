"""Helpers shared by the test modules (test modules never import each other): the tiny SIT settings the
training and CLI tests use, and the tree family's tiny model trained on mirroring."""

from __future__ import annotations

import copy
import functools
import json

import torch

from hf_symbolinv.models.dte import DTEConfig, DTEForTreeTransduction, DTETreeTokenizer
from hf_symbolinv.utils.trees import format_bracketed, mirror, parse_bracketed

#: ``--set`` fields that make any SIT preset tiny (seconds per training step on a CPU).
TINY = [
    "d_model=32",
    "encoder_layers=1",
    "decoder_layers=1",
    "encoder_attention_heads=4",
    "decoder_attention_heads=4",
    "encoder_ffn_dim=64",
    "decoder_ffn_dim=64",
    "dropout=0.0",
    'loss_type="cross_entropy"',
]


def tiny_overrides() -> dict:
    """:data:`TINY` as config fields."""
    return {k: json.loads(v) for k, v in (pair.split("=", 1) for pair in TINY)}


# ---------------------------------------------------------------------------------------------------
# The tree family
# ---------------------------------------------------------------------------------------------------
DTE_BASE_LABELS = ["f", "g", "h"]
DTE_SOURCES = ["(f a (g b c))", "(g (f x y) z)", "(f p q)", "(h (g a b) (f c a))"]


def dte_tokenizer(max_depth: int = 3) -> DTETreeTokenizer:
    return DTETreeTokenizer(DTE_BASE_LABELS, max_depth=max_depth, max_symbols=8)


def dte_tiny_config(**overrides) -> DTEConfig:
    values = dict(
        vocab_size=dte_tokenizer().vocab_size,
        max_depth=3,
        max_symbols=8,
        num_steps=4,
        filler_dim=8,
        d_model=16,
        num_heads=2,
        ffn_dim=32,
        num_experts=4,
        top_k=4,
    )
    values.update(overrides)
    return DTEConfig(**values)


def dte_tiny_model(**overrides) -> DTEForTreeTransduction:
    torch.manual_seed(0)
    return DTEForTreeTransduction(dte_tiny_config(**overrides)).eval()


def mirror_text(text: str) -> str:
    """The mirror image of a bracketed tree, as text."""
    return format_bracketed(mirror(parse_bracketed(text)))


@functools.cache
def _trained(**overrides) -> DTEForTreeTransduction:
    model = dte_tiny_model(**overrides).train()
    batch = dte_tokenizer(max_depth=model.config.max_depth)(DTE_SOURCES, [mirror_text(text) for text in DTE_SOURCES])
    batch.pop("symbol_names")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(30):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        optimizer.step()
    return model.eval()


def dte_trained_model(**overrides) -> DTEForTreeTransduction:
    """A tiny model trained 30 steps on mirroring :data:`DTE_SOURCES`: an untrained one answers empty trees (its
    blended trees are far from every filler), which would make the renaming tests vacuous."""
    return copy.deepcopy(_trained(**overrides))
