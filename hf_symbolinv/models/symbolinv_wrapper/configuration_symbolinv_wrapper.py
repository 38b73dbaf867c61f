"""Configuration of the renaming-invariant wrapper around a pretrained seq2seq checkpoint.

``SymbolInvWrapperConfig`` (model_type ``symbolinv_wrapper``) nests the wrapped model's own config under
``wrapped_config`` (the way ``EncoderDecoderConfig`` nests ``encoder`` / ``decoder``) and adds the symbol
mapping: which token ids of the wrapped vocabulary are interchangeable, and which two of them stand for
"the stream's own symbol" (*actual*) and "any other symbol" (*placeholder*).
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .cache_names import CACHE_NAME
from .config_fields import check_config_dict, check_fields

#: What the logits of the per-stream runs are combined from (see the modeling module's docstring).
StreamScores = Literal["logits", "log_probs"]
STREAM_SCORES = typing.get_args(StreamScores)


class SymbolInvWrapperConfig(PreTrainedConfig):
    r"""Configuration of :class:`SymbolInvWrapperForConditionalGeneration`.

    Args:
        wrapped_config: the config of the wrapped ``AutoModelForSeq2SeqLM`` checkpoint (a config object or its
            dict, which must carry ``model_type``).
        symbol_token_ids: the interchangeable tokens, as ids of the wrapped model's vocabulary.
        actual_token_id: the symbol whose embedding stands for the stream's own symbol.
        placeholder_token_id: the symbol whose embedding stands for every other symbol.
        max_streams: the most distinct symbols one input may contain (each is one run of the wrapped model).
        stream_scores: ``logits`` (default): base-token scores are the mean of the streams' logits and
            symbol i's score is stream i's logit of the actual token, the analogue of the SIT's projection
            (paper Alg. 5). ``log_probs``: the same over each stream's log-softmax, which is insensitive to
            a stream-wide shift of one stream's logits.
    """

    model_type = "symbolinv_wrapper"
    #: The Trainer leaves the cache out of evaluation outputs (its name depends on the transformers version).
    keys_to_ignore_at_inference: ClassVar[list[str]] = [CACHE_NAME]
    sub_configs_defaults: ClassVar[dict[str, SubConfigSpec]] = {
        "wrapped_config": SubConfigSpec(config_class=AutoConfig, model_type="bart"),
    }

    wrapped_config: PreTrainedConfig | dict | None = None
    symbol_token_ids: list[int] | None = None
    actual_token_id: int | None = None
    placeholder_token_id: int | None = None
    max_streams: int = 64
    stream_scores: StreamScores = "logits"
    is_encoder_decoder: bool = True
    use_cache: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    decoder_start_token_id: int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        check_fields(self, kwargs.get("dtype"))
        super().__post_init__(**kwargs)
        # Special tokens follow the wrapped model unless given: generation reads them from this config.
        for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(self.wrapped_config, name, None))
        self.validate_combinations()

    @property
    def is_configured(self) -> bool:
        """Whether the symbol mapping is set (a bare ``SymbolInvWrapperConfig()`` has none)."""
        return self.symbol_token_ids is not None

    @property
    def vocab_size(self) -> int:
        return self.wrapped_config.get_text_config(decoder=True).vocab_size

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> PreTrainedConfig:
        # Generation sizes its caches and vocabulary-wide tensors from the text config: the wrapped model's.
        return self.wrapped_config.get_text_config(decoder=decoder, encoder=encoder)

    def validate_combinations(self) -> None:
        """Raise ``ValueError`` naming the field for an unusable mapping. A config without ``symbol_token_ids``
        is allowed (Transformers builds default configs), but no model can be built from it."""

        def fail(field: str, message: str) -> None:
            raise ValueError(f"SymbolInvWrapperConfig.{field}: {message}")

        if not getattr(self.wrapped_config, "is_encoder_decoder", False):
            fail(
                "wrapped_config",
                f"a {type(self.wrapped_config).__name__} is not an encoder-decoder; the wrapper "
                "needs an encoder-decoder AutoModelForSeq2SeqLM checkpoint (BART, Marian, M2M100, T5, ...)",
            )
        if self.max_streams < 1:
            fail("max_streams", f"must be at least 1, got {self.max_streams}")
        if self.symbol_token_ids is None:
            for name in ("actual_token_id", "placeholder_token_id"):
                if getattr(self, name) is not None:
                    fail("symbol_token_ids", f"is not set but {name} is; give the symbol ids too")
            return
        symbols = list(self.symbol_token_ids)
        vocab_size = self.vocab_size
        if len(symbols) < 2:
            fail("symbol_token_ids", f"needs at least 2 ids (the actual and the placeholder token), got {symbols}")
        if len(set(symbols)) != len(symbols):
            fail("symbol_token_ids", "contains an id twice")
        bad = [i for i in symbols if not isinstance(i, int) or not 0 <= i < vocab_size]
        if bad:
            fail("symbol_token_ids", f"ids {bad[:5]} are outside the wrapped vocabulary (0..{vocab_size - 1})")
        for name in ("actual_token_id", "placeholder_token_id"):
            value = getattr(self, name)
            if value is None:
                fail(name, "is not set")
            if value not in symbols:
                fail(name, f"{value} is not one of symbol_token_ids: the actual and placeholder tokens are symbols")
        if self.actual_token_id == self.placeholder_token_id:
            fail("placeholder_token_id", f"equals actual_token_id ({self.actual_token_id}); the two must differ")
        clashing = []
        for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            value = getattr(self, name)
            # eos_token_id may be a list (several end tokens).
            for token_id in value if isinstance(value, (list, tuple)) else [value]:
                if token_id in symbols:
                    clashing.append(f"{name}={token_id}")
        if clashing:
            fail("symbol_token_ids", f"contains special tokens ({', '.join(clashing)}); they cannot be renamed")

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``PreTrainedConfig.from_dict``, refusing fields no SymbolInvWrapperConfig has (a typo is not silently
        stored)."""
        check_config_dict(cls, config_dict, kwargs)
        return super().from_dict(config_dict, **kwargs)


__all__ = ["SymbolInvWrapperConfig", "STREAM_SCORES"]
