"""Configuration of the Symbol-Invariant Transformer family (model_type ``symbolinv``)."""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from transformers import PreTrainedConfig

from .cache_names import CACHE_NAME
from .config_fields import architecture, architecture_fields, check_config_dict, check_fields
from .vocabulary import EOS_ID, PAD_ID, START_ID, get_vocabulary

ATTENTION_CODES = ("EP", "EA", "DP", "DA", "CP", "CA")
AGGREGATED_CODES = ("EA", "DA", "CA")
EmbeddingType = Literal["streams", "fixed", "alpha_renaming", "random"]
# ``automaton``: the forward weights of a diagonal complex unary automaton (fixed angles: exactly the
# sinusoidal encoding); ``*_learned``: the automaton's angles or RoPE's frequencies are parameters. The decoder has
# no ``tree``: a tree encoding needs the whole sequence, which the decoder does not have while generating.
DecoderPositionEncoding = Literal["rope", "rope_learned", "sinusoidal", "automaton", "automaton_learned", "none"]
EncoderPositionEncoding = Literal["tree", DecoderPositionEncoding]
StreamAggregation = Literal["mean", "complex"]
LossType = Literal["adacos", "cross_entropy"]
RandomEmbeddingMethod = Literal["normal", "neighbouring", "hypercube"]
EMBEDDING_TYPES = typing.get_args(EmbeddingType)
SEQUENCE_POSITION_ENCODINGS = DECODER_POSITION_ENCODINGS = typing.get_args(DecoderPositionEncoding)
ENCODER_POSITION_ENCODINGS = typing.get_args(EncoderPositionEncoding)
STREAM_AGGREGATIONS = typing.get_args(StreamAggregation)
LOSS_TYPES = typing.get_args(LossType)
RANDOM_EMBEDDING_METHODS = typing.get_args(RandomEmbeddingMethod)
DEFAULT_MAX_SYMBOLS = 64


#: ``stream_attention`` values parsed so far (a plain dict, not ``functools.cache``: compiled forwards read it).
_PARSED_ATTENTION: dict[str, tuple[str, ...]] = {}


def parse_stream_attention(text: str) -> tuple[str, ...]:
    """The attention codes of a ``stream_attention`` value (``"EP-DP-CP"``), checked; parsed once per value."""
    codes = _PARSED_ATTENTION.get(text)
    if codes is None:
        codes = _PARSED_ATTENTION[text] = _parse_stream_attention(text)
    return codes


def _parse_stream_attention(text: str) -> tuple[str, ...]:

    def fail(message: str) -> None:
        raise ValueError(f"SymbolInvConfig.stream_attention: {message}")

    codes = tuple(code for code in text.upper().split("-") if code)
    if not codes:
        fail(f"{text!r} names no attention; use codes like 'EP-DP-CP'")
    for code in codes:
        if code not in ATTENTION_CODES:
            fail(f"unknown code {code!r} in {text!r}; valid codes are {', '.join(ATTENTION_CODES)}")
    if len(set(codes)) != len(codes):
        fail(f"{text!r} repeats a code")
    if not {"EP", "EA"} & set(codes):
        fail(f"{text!r} has no encoder attention (EP or EA)")
    if not {"DP", "DA"} & set(codes):
        fail(f"{text!r} has no decoder self-attention (DP or DA)")
    if not {"CP", "CA"} & set(codes):
        fail(f"{text!r} has no cross-attention (CP or CA): the decoder could not see the input")
    return codes


def _sit(vocabulary: str, **fields: Any) -> dict[str, Any]:
    return {"vocabulary": vocabulary, "embedding_type": "streams", **fields}


_LTL = dict(d_model=64, layers=8, heads=4, ffn=1024, encoder_position_encoding="tree")
_PROP = dict(d_model=96, layers=6, heads=6, ffn=768, encoder_position_encoding="tree", embedding_scale=True)
_COPY = dict(d_model=128, layers=6, heads=8, ffn=128, encoder_position_encoding="rope")
# Not in the paper: models for the small formulas (`prop-small`, `ltl-small`) that train on 2 CPU cores.
_PROP_SMALL = dict(d_model=64, layers=3, heads=4, ffn=256, encoder_position_encoding="tree", embedding_scale=True)
_LTL_SMALL = dict(d_model=64, layers=3, heads=4, ffn=256, encoder_position_encoding="tree")
# Not in the paper: small models for the kinship stories (no formula tree, so rotary positions).
_KINSHIP = dict(d_model=64, layers=3, heads=4, ffn=256, encoder_position_encoding="rope")

#: The paper's settings (Table 5 and Table 6). SIT presets reproduce Table 6's parameter counts.
PRESETS: dict[str, dict[str, Any]] = {
    "ltl": _sit("ltl", **_LTL, stream_attention="EP-DP-CP"),
    "ltl-best": _sit("ltl", **_LTL, stream_attention="EP-DP-EA-CP"),
    "ltl-full": _sit("ltl", **_LTL, stream_attention="EP-DP-EA-DA-CP-CA"),
    "prop": _sit("prop", **_PROP, stream_attention="EP-DP-CP"),
    "prop-best": _sit("prop", **_PROP, stream_attention="EP-DP-EA-DA-CP"),
    "copy": _sit("copy", **_COPY, stream_attention="EP-DP-CP"),
    "ltl-vanilla": dict(
        vocabulary="ltl",
        embedding_type="fixed",
        d_model=128,
        layers=8,
        heads=8,
        ffn=1024,
        encoder_position_encoding="tree",
        stream_attention="EP-DP-CP",
    ),
    "prop-vanilla": dict(
        vocabulary="prop",
        embedding_type="fixed",
        d_model=132,
        layers=6,
        heads=6,
        ffn=512,
        encoder_position_encoding="tree",
        embedding_scale=True,
        stream_attention="EP-DP-CP",
    ),
    "copy-vanilla": dict(
        vocabulary="copy",
        embedding_type="fixed",
        d_model=128,
        layers=6,
        heads=8,
        ffn=128,
        encoder_position_encoding="rope",
        stream_attention="EP-DP-CP",
    ),
    "prop-small": _sit("prop", **_PROP_SMALL, stream_attention="EP-DP-EA-DA-CP"),
    "prop-small-vanilla": dict(vocabulary="prop", embedding_type="fixed", **_PROP_SMALL, stream_attention="EP-DP-CP"),
    "ltl-small": _sit("ltl", **_LTL_SMALL, stream_attention="EP-DP-EA-CP"),
    "ltl-small-vanilla": dict(vocabulary="ltl", embedding_type="fixed", **_LTL_SMALL, stream_attention="EP-DP-CP"),
    "kinship": _sit("kinship", **_KINSHIP, stream_attention="EP-DP-EA-CP"),
    "kinship-vanilla": dict(vocabulary="kinship", embedding_type="fixed", **_KINSHIP, stream_attention="EP-DP-CP"),
    "clutrr": _sit("clutrr", **_KINSHIP, stream_attention="EP-DP-EA-CP"),
    "clutrr-vanilla": dict(vocabulary="clutrr", embedding_type="fixed", **_KINSHIP, stream_attention="EP-DP-CP"),
}


class SymbolInvConfig(PreTrainedConfig):
    r"""Configuration of a Symbol-Invariant Transformer (or of one of its baselines).

    Token ids: base token ``j`` has id ``j`` (``j < num_base_tokens``); symbol slot ``i`` has id
    ``num_base_tokens + i``, so ``vocab_size - num_base_tokens`` slots exist.

    Args:
        stream_attention: the paper's attention codes joined by ``-``: EP / EA (encoder per-stream /
            aggregated self-attention), DP / DA (decoder), CP / CA (cross-attention to the matching
            encoder stream / to the aggregated encoder). The cross-attention stack runs in the order
            written.
        embedding_type: ``streams`` (the SIT), ``fixed`` (one learned row per symbol),
            ``alpha_renaming`` (fixed rows, randomly permuted at each training forward) or ``random``
            (dual-part embeddings with random β, resampled at each training forward).
        encoder_position_encoding: ``tree`` (over the Polish-notation parse), ``rope``, ``rope_learned``
            (learnable frequencies), ``sinusoidal``, ``automaton`` (a diagonal complex automaton's
            forward weights; fixed angles equal ``sinusoidal``), ``automaton_learned`` (learnable
            angles and phases) or ``none``. decoder_position_encoding: the same without ``tree``.
        feature_normalization: L2-normalise the embedding rows and the final features (cosine logits).
        loss_type: ``cross_entropy`` (the default; over cosine logits, at AdaCos' fixed scale √2·ln(C − 1)) or
            ``adacos`` (the paper's adaptive scale, saved as a buffer). AdaCos computes its next scale with the
            current one; with a few dozen classes whose cosines are not near 0 that update grows the scale at every
            batch, to its cap of 100 within the first few dozen steps, and training runs on logits 100·cos
            (``benchmarks/results/learning/``).
        embedding_scale: multiply embeddings by √d_model.
        stream_aggregation: how aggregated attention (EA, DA, CA) pools the present streams: ``mean``
            (paper Alg. 2) or ``complex`` (per stream, ``aggregation_states`` magnitudes r and angles θ;
            pooled ``[Σr / k, cos Σθ, sin Σθ]`` mapped back to d_model: a commutative complex multiset
            automaton that can count modulo m, which a mean cannot). Both restore stream i's own state
            at the positions of symbol i, and both are invariant to renaming.
        aggregation_states: r/θ pairs of the ``complex`` aggregation (default ``d_model // 2``).
        max_streams: the most distinct symbols one input may contain.
        num_symbol_embeddings: learned symbol rows of the ``fixed`` and ``alpha_renaming`` baselines.
        token_arities: arity of each base token in Polish notation (for the tree encoding).
    """

    model_type = "symbolinv"
    #: The Trainer leaves the cache out of evaluation outputs (its name depends on the transformers version).
    keys_to_ignore_at_inference: ClassVar[list[str]] = [CACHE_NAME]
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "d_model",
        "num_attention_heads": "encoder_attention_heads",
        "num_hidden_layers": "encoder_layers",
    }

    # Architecture fields (recorded with the weights, compared on loading); required ones must be in a checkpoint.
    vocabulary: str | None = "ltl"
    vocab_size: int = architecture(13 + DEFAULT_MAX_SYMBOLS, required=True)
    num_base_tokens: int = architecture(13, required=True)
    token_arities: list[int] | None = architecture(None)
    d_model: int = architecture(64, required=True)
    encoder_layers: int = architecture(8, required=True)
    decoder_layers: int = architecture(8, required=True)
    encoder_attention_heads: int = architecture(4, required=True)
    decoder_attention_heads: int = architecture(4, required=True)
    encoder_ffn_dim: int = architecture(1024, required=True)
    decoder_ffn_dim: int = architecture(1024, required=True)
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    layer_norm_eps: float = architecture(1e-6)
    stream_attention: str = architecture("EP-DP-CP", required=True)
    embedding_type: EmbeddingType = architecture("streams", required=True)
    encoder_position_encoding: EncoderPositionEncoding = architecture("tree", required=True)
    decoder_position_encoding: DecoderPositionEncoding = architecture("rope", required=True)
    rope_theta: float = architecture(10000.0)
    max_position_embeddings: int = 1024
    feature_normalization: bool = architecture(True, required=True)
    loss_type: LossType = architecture("cross_entropy", required=True)
    adacos_max_scale: float = 100.0
    embedding_scale: bool = architecture(False, required=True)
    stream_aggregation: StreamAggregation = architecture("mean")
    aggregation_states: int | None = None
    max_streams: int = architecture(DEFAULT_MAX_SYMBOLS, required=True)
    num_symbol_embeddings: int = architecture(26)
    random_embedding_method: RandomEmbeddingMethod = architecture("hypercube")
    random_embedding_dim: int = architecture(6)
    init_std: float = 0.02
    use_cache: bool = True
    pad_token_id: int | None = architecture(PAD_ID)
    eos_token_id: int | None = architecture(EOS_ID)
    bos_token_id: int | None = START_ID
    decoder_start_token_id: int | None = architecture(START_ID)
    is_encoder_decoder: bool = True
    is_decoder: bool = False
    tie_word_embeddings: bool = True

    def __post_init__(self, **kwargs: Any) -> None:
        check_fields(self, kwargs.get("dtype"))
        if self.token_arities is None and self.vocabulary is not None:
            vocabulary = get_vocabulary(self.vocabulary)
            if vocabulary.num_base_tokens == self.num_base_tokens:
                self.token_arities = vocabulary.arity_list()
        super().__post_init__(**kwargs)
        self.validate_combinations()

    @property
    def architecture_fields(self) -> tuple[str, ...]:
        """The fields ``save_pretrained`` records with the weights and loading compares (see ``loading.py``);
        ``num_aggregation_states`` is the one derived value among them."""
        return (*architecture_fields(type(self)), "num_aggregation_states")

    @property
    def attention_codes(self) -> tuple[str, ...]:
        return parse_stream_attention(self.stream_attention)

    @property
    def cross_attention_modes(self) -> tuple[str, ...]:
        """The decoder's cross-attention stack, in order: ``"CP"`` and/or ``"CA"``."""
        return tuple(code for code in self.attention_codes if code in ("CP", "CA"))

    @property
    def num_symbol_slots(self) -> int:
        return self.vocab_size - self.num_base_tokens

    def uses(self, code: str) -> bool:
        return code in self.attention_codes

    def validate_combinations(self) -> None:
        """Raise ``ValueError`` naming the field for combinations of values no network has (each field's own
        values are checked from its declaration, by ``check_fields``)."""

        def fail(field: str, message: str) -> None:
            raise ValueError(f"SymbolInvConfig.{field}: {message}")

        codes = self.attention_codes
        aggregated = [code for code in codes if code in AGGREGATED_CODES]
        if aggregated and self.embedding_type != "streams":
            fail(
                "stream_attention",
                f"aggregated attention {aggregated} needs embedding_type='streams' "
                f"(a {self.embedding_type!r} model has a single stream)",
            )
        if self.stream_aggregation == "complex" and not aggregated:
            fail(
                "stream_aggregation",
                "'complex' pools streams for aggregated attention, but "
                f"{self.stream_attention!r} has none (add EA, DA or CA, or keep 'mean')",
            )
        if self.aggregation_states is not None and self.aggregation_states < 1:
            fail("aggregation_states", f"must be at least 1, got {self.aggregation_states}")
        if self.loss_type == "adacos" and not self.feature_normalization:
            fail("loss_type", "'adacos' works on cosine logits and needs feature_normalization=True")
        if self.num_base_tokens < 3:
            fail("num_base_tokens", f"{self.num_base_tokens} is too small: <pad>, <eos> and <start> are base tokens")
        if self.vocab_size <= self.num_base_tokens:
            fail("vocab_size", f"{self.vocab_size} leaves no symbol slot after {self.num_base_tokens} base tokens")
        if self.encoder_position_encoding == "tree":
            if self.token_arities is None or len(self.token_arities) != self.num_base_tokens:
                fail(
                    "token_arities",
                    "the tree position encoding needs one arity per base token "
                    f"({self.num_base_tokens}), got {self.token_arities!r}",
                )
            if any(arity not in (0, 1, 2) for arity in self.token_arities):
                fail("token_arities", f"arities must be 0, 1 or 2, got {self.token_arities!r}")
        for side in ("encoder", "decoder"):
            heads = getattr(self, f"{side}_attention_heads")
            if heads < 1 or self.d_model % heads:
                fail(f"{side}_attention_heads", f"{heads} does not divide d_model={self.d_model}")
            if getattr(self, f"{side}_position_encoding").startswith("rope") and (self.d_model // heads) % 2:
                fail(f"{side}_position_encoding", f"rope needs an even head size, got {self.d_model // heads}")
            if getattr(self, f"{side}_layers") < 1:
                fail(f"{side}_layers", "must be at least 1")
        if self.max_streams < 1:
            fail("max_streams", f"must be at least 1, got {self.max_streams}")
        if self.embedding_type in ("fixed", "alpha_renaming") and not (
            1 <= self.num_symbol_embeddings <= self.num_symbol_slots
        ):
            fail(
                "num_symbol_embeddings",
                f"{self.num_symbol_embeddings} must be between 1 and "
                f"vocab_size - num_base_tokens = {self.num_symbol_slots}",
            )
        if self.embedding_type == "random" and not 0 < self.random_embedding_dim < self.d_model:
            fail("random_embedding_dim", f"{self.random_embedding_dim} must be between 1 and d_model - 1")

    @property
    def num_aggregation_states(self) -> int:
        return self.aggregation_states or self.d_model // 2

    # ------------------------------------------------------------------ presets and (de)serialisation
    @classmethod
    def from_preset(cls, name: str, max_symbols: int = DEFAULT_MAX_SYMBOLS, **overrides: Any) -> SymbolInvConfig:
        """The paper's settings: ``ltl``, ``ltl-best``, ``ltl-full``, ``prop``, ``prop-best``, ``copy``
        (SIT) and ``ltl-vanilla``, ``prop-vanilla``, ``copy-vanilla`` (Table 5 baselines); ``kinship`` and
        ``kinship-vanilla`` (small, for the kinship stories)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        preset = dict(PRESETS[name])
        vocabulary = get_vocabulary(preset["vocabulary"])
        layers, heads, ffn = preset.pop("layers"), preset.pop("heads"), preset.pop("ffn")
        fields: dict[str, Any] = dict(
            num_base_tokens=vocabulary.num_base_tokens,
            vocab_size=vocabulary.num_base_tokens + max_symbols,
            token_arities=vocabulary.arity_list(),
            max_streams=max_symbols,
            encoder_layers=layers,
            decoder_layers=layers,
            encoder_attention_heads=heads,
            decoder_attention_heads=heads,
            encoder_ffn_dim=ffn,
            decoder_ffn_dim=ffn,
            decoder_position_encoding="rope",
        )
        fields.update(preset)
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        check_config_dict(cls, config_dict, kwargs)
        return super().from_dict(config_dict, **kwargs)

    def to_diff_dict(self) -> dict[str, Any]:
        # Always write every field: a Hub user's config.json then describes the network fully,
        # and from_dict can tell a truncated file from a default value.
        return self.to_dict()


__all__ = ["PRESETS", "SymbolInvConfig"]
