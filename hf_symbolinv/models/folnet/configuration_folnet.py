"""Configuration of the FOLNet family (model_type ``folnet``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from transformers import PreTrainedConfig

from .config_fields import architecture, architecture_fields, check_config_dict, check_fields
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

# Operators whose deduced atoms pass through sigma(z) = ln(1 + 2e^z) (eq. 9, clauses "q <- p") by default;
# join and assoc stay linear ("q == p") so that the join/assoc FOLNet is exactly a transformer layer.
DEFAULT_ACTIVATED_OPERATORS = ("cjoin", "mu", "prod", "trans")
#: Sizes that must be at least 1.
_POSITIVE_FIELDS = (
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
    "decoder_layers",
)
_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
#: A list of operator names, or one string of them joined by commas (``"join,assoc"``, as typed on a command line).
OperatorNames = list[str] | tuple[str, ...] | str


class FOLNetConfig(PreTrainedConfig):
    """FOLNet: unary atoms of size D1 = num_heads * head_dim, binary atoms of size D2 = binary_dim.

    ``operators`` is any non-empty subset of ``bool, cjoin, join, mu, assoc, prod, trans``; it must
    produce both a unary and a binary atom (the next layer's kernels and premises come from both),
    e.g. ``["join", "assoc"]`` (or ``"join,assoc"``) is the paper's dual-branch transformer. ``bool`` is the
    cascaded GeLU feed-forward of both branches (ffn_dim for the unary one, binary_ffn_dim for the binary one).

    ``activated_operators``: the operators whose deduced atoms pass through sigma(z) = ln(1 + 2e^z).
    ``decoder_layers`` (default: ``num_layers``) is the depth of the decoder of
    ``FOLNetForConditionalGeneration`` (Appendix A.5), which sets ``is_encoder_decoder``.

    Symbols (the token ids of the package's tokenizer): ids below ``num_base_tokens`` are base tokens, the
    others are symbol slots (``vocab_size - num_base_tokens`` of them). ``symbol_invariant=True`` is the
    renaming-invariant relational variant: every symbol has the same unary base atom and its identity enters
    only through the binary base atom same_symbol(x, y); output symbols are chosen by pointing at input
    positions, so no weight belongs to a symbol and the slot count (``vocab_size``) is free.
    ``token_arities`` (the Polish-notation arity of each base token; symbols are leaves) adds the parse tree
    relation of x and y (self, parent, child, sibling, ancestor, descendant) to the binary base atoms.
    ``vocabulary`` names the tokenizer's task vocabulary (checked against the tokenizer's).
    """

    model_type = "folnet"
    presets: ClassVar[dict[str, dict[str, Any]]] = PRESETS

    # Architecture fields: recorded with the weights, compared on loading.
    vocab_size: int = architecture(32768)
    num_layers: int = architecture(12)
    num_heads: int = architecture(12)
    head_dim: int = architecture(64)
    binary_dim: int = architecture(64)
    ffn_dim: int = architecture(3072)
    binary_ffn_dim: int = architecture(256)
    max_relative_distance: int = architecture(64)
    type_vocab_size: int = architecture(2)
    max_position_embeddings: int = architecture(512)
    operators: OperatorNames = architecture(OPERATORS)
    dropout: float = 0.1
    layer_norm_eps: float = architecture(1e-12)
    initializer_range: float = 0.02
    activated_operators: OperatorNames = architecture(DEFAULT_ACTIVATED_OPERATORS)
    hidden_act: Literal["gelu", "gelu_new", "relu", "silu"] = architecture("gelu")
    classifier_dropout: float | None = None
    decoder_layers: int | None = architecture(None)  # None: num_layers
    pad_token_id: int | None = architecture(0)
    bos_token_id: int | None = None
    eos_token_id: int | None = architecture(None)
    decoder_start_token_id: int | None = architecture(None)  # None: pad_token_id (as T5)
    use_cache: bool = True
    tie_word_embeddings: bool = architecture(True)
    is_decoder: bool = False
    is_encoder_decoder: bool = False
    symbol_invariant: bool = architecture(False)
    num_base_tokens: int | None = architecture(None)
    token_arities: list[int] | tuple[int, ...] | None = architecture(None)
    vocabulary: str | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        # Checked before PreTrainedConfig's own validators, which fail on a wrong type without naming the field
        # (a token id "lots" compared with vocab_size) or inside torch (an unknown dtype name).
        check_fields(self, kwargs.get("dtype"))
        self.operators = _operator_names(self.operators)
        self.activated_operators = _operator_names(self.activated_operators)
        if self.decoder_layers is None:
            self.decoder_layers = self.num_layers
        if self.decoder_start_token_id is None:
            self.decoder_start_token_id = self.pad_token_id
        if self.token_arities is not None:
            self.token_arities = list(self.token_arities)
        self.validate_combinations()
        super().__post_init__(**kwargs)

    @property
    def architecture_fields(self) -> tuple[str, ...]:
        """The fields ``save_pretrained`` records with the weights and loading compares (see ``loading.py``)."""
        return architecture_fields(type(self))

    @property
    def unary_dim(self) -> int:
        """D1 = H * S."""
        return self.num_heads * self.head_dim

    def validate_combinations(self) -> None:
        """Raise ``ValueError`` naming the first field whose value no network has (each field's type is checked
        from its declaration, by ``check_fields``)."""
        for name in _POSITIVE_FIELDS:
            if getattr(self, name) < 1:
                raise ValueError(f"FOLNetConfig.{name}: expected a positive int, got {getattr(self, name)!r}")
        for name in ("dropout", "layer_norm_eps", "initializer_range"):
            if getattr(self, name) < 0:
                raise ValueError(f"FOLNetConfig.{name}: expected a non-negative number, got {getattr(self, name)!r}")
        for name in _TOKEN_FIELDS:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"FOLNetConfig.{name}: expected None or a non-negative int, got {value!r}")
            if value is not None and value >= self.vocab_size:
                raise ValueError(f"FOLNetConfig.{name}: {value} is not below vocab_size {self.vocab_size}")
        if self.classifier_dropout is not None and not 0 <= self.classifier_dropout < 1:
            raise ValueError(
                f"FOLNetConfig.classifier_dropout: must be None or in [0, 1), got {self.classifier_dropout!r}"
            )
        for op in self.activated_operators:
            if op not in OPERATORS or op == "bool":
                raise ValueError(
                    f"FOLNetConfig.activated_operators: {op!r} is not one of {', '.join(OPERATORS[1:])} "
                    "(bool is the GeLU feed-forward)"
                )
        self._validate_symbols()
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

    def _validate_symbols(self) -> None:
        nb = self.num_base_tokens
        if nb is not None and not 3 <= nb < self.vocab_size:
            raise ValueError(
                f"FOLNetConfig.num_base_tokens: expected None or an int from 3 to vocab_size - 1, got {nb!r}"
            )
        if self.symbol_invariant and nb is None:
            raise ValueError(
                "FOLNetConfig.num_base_tokens: symbol_invariant needs it (ids from num_base_tokens on are symbols)"
            )
        arities = self.token_arities
        if arities is not None:
            if nb is None:
                raise ValueError("FOLNetConfig.num_base_tokens: token_arities needs it (one arity per base token)")
            if len(arities) != nb:
                raise ValueError(f"FOLNetConfig.token_arities: expected {nb} arities (num_base_tokens), got {arities}")
            if any(a not in (0, 1, 2) for a in arities):
                raise ValueError(f"FOLNetConfig.token_arities: arities must be 0, 1 or 2, got {arities!r}")

    @property
    def num_symbol_slots(self) -> int:
        """Symbol slots (ids ``num_base_tokens ..``); 0 without ``num_base_tokens``."""
        return 0 if self.num_base_tokens is None else self.vocab_size - self.num_base_tokens

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``PreTrainedConfig.from_dict``, refusing fields no FOLNetConfig has (a typo is not silently stored)
        and label maps that are not keyed by label ids."""
        check_config_dict(cls, config_dict, kwargs)
        return super().from_dict(config_dict, **kwargs)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> FOLNetConfig:
        """A preset by name (``folnet-base``, ``folnet-large``, ``folnet-small``, ``folnet-tiny``)."""
        if name not in PRESETS:
            raise ValueError(f"FOLNetConfig.from_preset: unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def _operator_names(value: Any) -> Any:
    """A list of operator names from a list or a comma-separated string (``"join,assoc"``, as typed on a command
    line)."""
    if isinstance(value, str):
        return [name.strip() for name in value.split(",")] if value.strip() else []
    return list(value) if isinstance(value, (list, tuple)) else value
