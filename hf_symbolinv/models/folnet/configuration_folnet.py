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
    "decoder_layers",
)
_OPTIONAL_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
# Operators whose deduced atoms pass through sigma(z) = ln(1 + 2e^z) (eq. 9, clauses "q <- p") by default;
# join and assoc stay linear ("q == p") so that the join/assoc FOLNet is exactly a transformer layer.
DEFAULT_ACTIVATED_OPERATORS = ("cjoin", "mu", "prod", "trans")
_FLOAT_FIELDS = ("dropout", "layer_norm_eps", "initializer_range")
_BOOL_FIELDS = ("use_cache", "tie_word_embeddings", "is_decoder", "symbol_invariant")
_DTYPE_NAMES = frozenset({"float32", "float16", "bfloat16", "float64", "auto"})


#: The config fields that change what the weights compute (dropout and flags do not): ``save_pretrained`` records
#: them in the weights and loading refuses a config.json that differs (see ``loading.py``).
ARCHITECTURE_FIELDS = (
    "vocab_size",
    "num_layers",
    "decoder_layers",
    "num_heads",
    "head_dim",
    "binary_dim",
    "ffn_dim",
    "binary_ffn_dim",
    "max_relative_distance",
    "type_vocab_size",
    "max_position_embeddings",
    "operators",
    "activated_operators",
    "hidden_act",
    "layer_norm_eps",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "tie_word_embeddings",
    "symbol_invariant",
    "num_base_tokens",
    "token_arities",
)


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
    architecture_fields: ClassVar[tuple[str, ...]] = ARCHITECTURE_FIELDS
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
        operators: list[str] | tuple[str, ...] | str = OPERATORS,
        dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        activated_operators: list[str] | tuple[str, ...] | str = DEFAULT_ACTIVATED_OPERATORS,
        hidden_act: str = "gelu",
        classifier_dropout: float | None = None,
        decoder_layers: int | None = None,
        pad_token_id: int | None = 0,
        bos_token_id: int | None = None,
        eos_token_id: int | None = None,
        decoder_start_token_id: int | None = None,
        use_cache: bool = True,
        tie_word_embeddings: bool = True,
        is_decoder: bool = False,
        is_encoder_decoder: bool = False,
        symbol_invariant: bool = False,
        num_base_tokens: int | None = None,
        token_arities: list[int] | tuple[int, ...] | None = None,
        vocabulary: str | None = None,
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
        self.operators = _operator_names(operators)
        self.dropout = dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.activated_operators = _operator_names(activated_operators)
        self.hidden_act = hidden_act
        self.classifier_dropout = classifier_dropout
        self.decoder_layers = num_layers if decoder_layers is None else decoder_layers
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        # The decoder starts from <pad> unless told otherwise (as T5 does).
        self.decoder_start_token_id = pad_token_id if decoder_start_token_id is None else decoder_start_token_id
        self.use_cache = use_cache
        self.tie_word_embeddings = tie_word_embeddings
        self.is_decoder = is_decoder
        self.symbol_invariant = symbol_invariant
        self.num_base_tokens = num_base_tokens
        self.token_arities = list(token_arities) if isinstance(token_arities, (list, tuple)) else token_arities
        self.vocabulary = vocabulary
        # Checked before PreTrainedConfig's own validators, which fail on a wrong type without naming the field
        # (a token id "lots" compared with vocab_size) or inside torch (an unknown dtype name).
        self.validate_fields()
        if not isinstance(is_encoder_decoder, bool):
            raise ValueError(f"FOLNetConfig.is_encoder_decoder: expected true or false, got {is_encoder_decoder!r}")
        dtype = kwargs.get("dtype")
        if isinstance(dtype, str) and dtype not in _DTYPE_NAMES:
            raise ValueError(f"FOLNetConfig.dtype: unknown dtype {dtype!r}; choose one of {sorted(_DTYPE_NAMES)}")
        super().__init__(is_encoder_decoder=is_encoder_decoder, **kwargs)

    @property
    def unary_dim(self) -> int:
        """D1 = H * S."""
        return self.num_heads * self.head_dim

    def validate_fields(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        for name in _BOOL_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"FOLNetConfig.{name}: expected true or false, got {value!r}")
        for name in ("operators", "activated_operators"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(op, str) for op in value):
                raise ValueError(f"FOLNetConfig.{name}: expected a list of operator names, got {value!r}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"FOLNetConfig.{name}: expected a positive int, got {value!r}")
        for name in _FLOAT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"FOLNetConfig.{name}: expected a non-negative number, got {value!r}")
        for name in _OPTIONAL_TOKEN_FIELDS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"FOLNetConfig.{name}: expected None or a non-negative int, got {value!r}")
            if value is not None and value >= self.vocab_size:
                raise ValueError(f"FOLNetConfig.{name}: {value} is not below vocab_size {self.vocab_size}")
        if self.classifier_dropout is not None and not 0 <= self.classifier_dropout < 1:
            raise ValueError(
                f"FOLNetConfig.classifier_dropout: must be None or in [0, 1), got {self.classifier_dropout!r}"
            )
        if self.hidden_act not in ("gelu", "gelu_new", "relu", "silu"):
            raise ValueError(f"FOLNetConfig.hidden_act: expected gelu, gelu_new, relu or silu, got {self.hidden_act!r}")
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
        if nb is not None and (isinstance(nb, bool) or not isinstance(nb, int) or not 3 <= nb < self.vocab_size):
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
            if not isinstance(arities, list) or len(arities) != nb:
                raise ValueError(f"FOLNetConfig.token_arities: expected {nb} arities (num_base_tokens), got {arities}")
            if any(isinstance(a, bool) or a not in (0, 1, 2) for a in arities):
                raise ValueError(f"FOLNetConfig.token_arities: arities must be 0, 1 or 2, got {arities!r}")
        if self.vocabulary is not None and not isinstance(self.vocabulary, str):
            raise ValueError(f"FOLNetConfig.vocabulary: expected None or a vocabulary name, got {self.vocabulary!r}")

    @property
    def num_symbol_slots(self) -> int:
        """Symbol slots (ids ``num_base_tokens ..``); 0 without ``num_base_tokens``."""
        return 0 if self.num_base_tokens is None else self.vocab_size - self.num_base_tokens

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``PreTrainedConfig.from_dict``, refusing fields no FOLNetConfig has (a typo is not silently stored)
        and label maps that are not keyed by label ids."""
        unknown = sorted(set(config_dict) - _known_fields())
        if unknown:
            raise ValueError(
                f"this folnet checkpoint's config has unknown field(s) {', '.join(unknown)}: a typo, or a config.json "
                "written for another model"
            )
        for field in ("id2label", "label2id"):
            mapping = config_dict.get(field)
            if mapping is not None and not isinstance(mapping, dict):
                raise ValueError(f"FOLNetConfig.{field}: must be a mapping, got {mapping!r}")
        bad_labels = [key for key in (config_dict.get("id2label") or {}) if not str(key).lstrip("-").isdigit()]
        if bad_labels:
            raise ValueError(f"FOLNetConfig.id2label: keys must be label ids (integers), got {bad_labels!r}")
        return super().from_dict(config_dict, **kwargs)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> FOLNetConfig:
        """A preset by name (``folnet-base``, ``folnet-large``, ``folnet-small``, ``folnet-tiny``)."""
        if name not in PRESETS:
            raise ValueError(f"FOLNetConfig.from_preset: unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def _operator_names(value: Any) -> Any:
    """A list of operator names from a list or a comma-separated string (``"join,assoc"``, as typed on a command
    line); anything else is kept for ``validate_fields`` to name."""
    if isinstance(value, str):
        return [name.strip() for name in value.split(",")] if value.strip() else []
    return list(value) if isinstance(value, (list, tuple)) else value


def _known_fields() -> set[str]:
    """Every field a FOLNetConfig's config.json may hold: its own and PreTrainedConfig's."""
    return (
        set(PreTrainedConfig().to_dict())
        | set(FOLNetConfig().to_dict())
        | {"custom_pipelines", "auto_map", "architectures", "transformers_version"}
    )
