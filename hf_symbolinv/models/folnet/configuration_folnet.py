"""Configuration of the FOLNet family (model_type ``folnet``)."""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import PreTrainedConfig

from .operators import BINARY_OUTPUT, OPERATORS, UNARY_OUTPUT

# The paper's FOLNetBase and FOLNetLarge (Section 4 / Appendix), and small ones for tasks and tests.
PRESETS: dict[str, dict[str, Any]] = {
    "folnet-base": dict(
        num_layers=12,
        num_heads=12,
        head_dim=64,
        binary_dim=64,
        ffn_dim=3072,
        binary_ffn_dim=256,
        max_relative_distance=64,
        vocab_size=32768,
    ),
    "folnet-large": dict(
        num_layers=24,
        num_heads=16,
        head_dim=64,
        binary_dim=64,
        ffn_dim=4096,
        binary_ffn_dim=256,
        max_relative_distance=64,
        vocab_size=32768,
    ),
    "folnet-small": dict(
        num_layers=4, num_heads=4, head_dim=32, binary_dim=16, ffn_dim=512, binary_ffn_dim=64, vocab_size=128
    ),
    "folnet-tiny": dict(
        num_layers=2, num_heads=2, head_dim=8, binary_dim=4, ffn_dim=32, binary_ffn_dim=8, vocab_size=32
    ),
}

_INT_FIELDS = (
    "vocab_size",
    "num_layers",
    "num_heads",
    "head_dim",
    "binary_dim",
    "ffn_dim",
    "binary_ffn_dim",
    "max_relative_distance",
    "type_vocab_size",
    "max_position_embeddings",
)
_FLOAT_FIELDS = ("dropout", "layer_norm_eps", "initializer_range")


class FOLNetConfig(PreTrainedConfig):
    """FOLNet: unary atoms of size D1 = num_heads * head_dim, binary atoms of size D2 = binary_dim.

    ``operators`` is any non-empty subset of ``bool, cjoin, join, mu, assoc, prod, trans``; it must
    produce both a unary and a binary atom (the next layer's kernels and premises come from both),
    e.g. ``["join", "assoc"]`` is the paper's dual-branch transformer.
    """

    model_type = "folnet"
    presets: ClassVar[dict[str, dict[str, Any]]] = PRESETS

    def __init__(
        self,
        vocab_size: int = 32768,
        num_layers: int = 12,
        num_heads: int = 12,
        head_dim: int = 64,
        binary_dim: int = 64,
        ffn_dim: int = 3072,
        binary_ffn_dim: int = 256,
        max_relative_distance: int = 64,
        type_vocab_size: int = 2,
        max_position_embeddings: int = 512,
        operators: list[str] | tuple[str, ...] = OPERATORS,
        dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        pad_token_id: int | None = 0,
        use_cache: bool = True,
        tie_word_embeddings: bool = True,
        **kwargs: Any,
    ) -> None:
        self.vocab_size = vocab_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.binary_dim = binary_dim
        self.ffn_dim = ffn_dim
        self.binary_ffn_dim = binary_ffn_dim
        self.max_relative_distance = max_relative_distance
        self.type_vocab_size = type_vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.operators = list(operators)
        self.dropout = dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.pad_token_id = pad_token_id
        self.use_cache = use_cache
        self.tie_word_embeddings = tie_word_embeddings
        super().__init__(**kwargs)
        self.validate_fields()

    @property
    def unary_dim(self) -> int:
        """D1 = H * S."""
        return self.num_heads * self.head_dim

    def validate_fields(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"FOLNetConfig.{name}: expected a positive int, got {value!r}")
        for name in _FLOAT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"FOLNetConfig.{name}: expected a non-negative number, got {value!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"FOLNetConfig.dropout: must be in [0, 1), got {self.dropout!r}")
        if not self.operators:
            raise ValueError(f"FOLNetConfig.operators: empty; choose a subset of {', '.join(OPERATORS)}")
        for op in self.operators:
            if op not in OPERATORS:
                raise ValueError(f"FOLNetConfig.operators: unknown operator {op!r}; choose from {', '.join(OPERATORS)}")
        if len(set(self.operators)) != len(self.operators):
            raise ValueError(f"FOLNetConfig.operators: duplicated operator in {self.operators!r}")
        if not any(op in UNARY_OUTPUT for op in self.operators):
            raise ValueError(
                f"FOLNetConfig.operators: {self.operators!r} deduces no unary atom; "
                f"add one of {', '.join(UNARY_OUTPUT)}"
            )
        if not any(op in BINARY_OUTPUT for op in self.operators):
            raise ValueError(
                f"FOLNetConfig.operators: {self.operators!r} deduces no binary atom; "
                f"add one of {', '.join(BINARY_OUTPUT)}"
            )

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> FOLNetConfig:
        """A preset by name (``folnet-base``, ``folnet-large``, ``folnet-small``, ``folnet-tiny``)."""
        if name not in PRESETS:
            raise ValueError(f"FOLNetConfig.from_preset: unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def register() -> None:
    """Register the config with ``AutoConfig`` (the model classes join once they exist)."""
    from transformers import AutoConfig

    # exist_ok: the package and a test may both call this.
    AutoConfig.register(FOLNetConfig.model_type, FOLNetConfig, exist_ok=True)
