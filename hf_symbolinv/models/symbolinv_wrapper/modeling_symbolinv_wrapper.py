"""Run a pretrained Hugging Face seq2seq checkpoint as a per-stream, renaming-invariant model.

``SymbolInvWrapperForConditionalGeneration`` wraps an ``AutoModelForSeq2SeqLM`` (BART, Marian, M2M100,
T5, ...) and applies the Symbol-Invariant Transformer's stream construction around it, at the level of
token ids, without adding a single parameter:

* **Symbols** are a set of token ids of the wrapped vocabulary. Two of them are the *actual* token (it
  stands for "this stream's own symbol") and the *placeholder* token (it stands for "some other symbol").
* **Streams.** Every distinct symbol of an input gets a stream, in order of first appearance. Stream i is a
  copy of the input in which symbol i becomes the actual token and every other symbol the placeholder
  token. Since the wrapped model embeds ids, stream i sees exactly the actual token's embedding where
  symbol i stands (paper Alg. 1 with the pretrained rows as actual / placeholder rows). The decoder input
  of stream i is rewritten the same way. Streams are folded into the wrapped model's batch, so decoder
  stream i cross-attends to encoder stream i (the SIT's EP-DP-CP attention). An input without symbols
  runs as one unchanged stream; it can then emit no symbol.
* **Projection** (paper Alg. 5). Non-symbol tokens score the mean of the sample's present streams; symbol
  i scores stream i's score for the actual token, minus ``TIE_BREAK`` times its rank of first appearance
  (the SIT's tie break between symmetric symbols); symbols absent from the input score -inf.
* **Invariance by construction.** After the rewrite no symbol id is left in any stream, and streams are
  ordered by first appearance, which renaming preserves: a renamed input runs the very same id
  sequences through the wrapped model, bit for bit, and only the symbol columns of the output move.

Which scores are averaged. The SIT averages its cosine scores *before* the softmax; for a wrapped softmax
model the analogue is its final logits, so ``stream_scores="logits"`` (the default) averages the logits,
and a one-symbol input reproduces the wrapped model's logits exactly. Logits are only defined up to a
per-stream additive constant, though, and a symbol's score comes from a single stream while base scores
are a mean; ``stream_scores="log_probs"`` averages per-stream log-softmaxes instead, which removes that
constant (an option, for checkpoints whose streams differ much in logit level).

Layouts (B batch, S = most streams of a sample in the batch, L / T lengths, d width):

* the encoder output keeps the padded ``(B, S, L, d)`` layout, batch on dim 0, so that generation's
  ``repeat_interleave`` for beams expands it correctly; padding streams are zeros and flagged absent;
* without a cache only present streams run ("packed" rows); with a cache all ``B * S`` rows run, and the
  cache seen by ``generate`` stores every key/value tensor batch-major as ``(B, S * heads, T, head_dim)``
  (streams folded into the heads dimension). Beam search's reorders and repeats on dim 0 then move whole
  samples with all their streams. Each forward unfolds those tensors into ``(B * S, heads, T, head_dim)``
  views for the wrapped model and folds the updated ones back: reshapes of contiguous tensors, no copy.

What the wrapper cannot offer: the SIT's aggregated attention (EA, DA, CA) needs attention layers that
read the mean of the streams, which a pretrained checkpoint does not have; only the per-stream modes
EP-DP-CP are available. Cost: S runs of the wrapped model per input (compute and cache memory S times
the wrapped model's for an input with S distinct symbols).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    GenerationMixin,
    PreTrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, DynamicSlidingWindowLayer, EncoderDecoderCache
from transformers.modeling_outputs import BaseModelOutput, ModelOutput
from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING
from transformers.utils import logging

from .cache_names import CACHE_NAMES, cache_field, cache_keyword, given_cache
from .configuration_symbolinv_wrapper import SymbolInvWrapperConfig
from .streams import (
    TIE_BREAK,
    check_given_streams,
    check_token_ids,
    first_appearance_streams,
    is_compiling,
    stream_cross_entropy,
)

logger = logging.get_logger(__name__)

#: Default symbols: one lowercase ASCII letter, bare or after a word-start marker ("Ġ" of byte-level BPE
#: as in BART / GPT-2, "▁" of SentencePiece as in Marian, M2M100, T5).
DEFAULT_SYMBOL_PATTERN = r"[\u0120\u2581]?[a-z]"


# ---------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------
@dataclass
class SymbolInvWrapperEncoderOutput(ModelOutput):
    """The wrapped encoder's output per stream, padded layout.

    last_hidden_state: ``(B, S, L, d)`` (zeros for padding streams); stream_symbol_ids: ``(B, S)`` the
    vocabulary id of each stream's own symbol (-1 for a symbol-free input's stream and for padding);
    stream_mask: ``(B, S)`` present streams; hidden_states / attentions: per layer, ``(B, S, ...)``.
    """

    last_hidden_state: torch.FloatTensor | None = None
    stream_symbol_ids: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# Copied from hf_symbolinv.models.symbolinv.modeling_symbolinv.shift_tokens_right
def shift_tokens_right(labels: torch.LongTensor, pad_token_id: int, decoder_start_token_id: int) -> torch.LongTensor:
    shifted = labels.new_zeros(labels.shape)
    shifted[:, 1:] = labels[:, :-1].clone()
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == -100, pad_token_id)


@dataclass
@cache_field
class SymbolInvWrapperSeq2SeqLMOutput(ModelOutput):
    """Combined logits ``(B, T, vocab)``; decoder hidden states per stream ``(B, S, T, d)``."""

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    cache: Cache | None = None  # named past_key_values before transformers 5.24 (cache_names.py)
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    stream_symbol_ids: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None


@dataclass
class _StreamRows:
    """Which streams run as rows of the wrapped model's batch, and what each row stands for."""

    flat_index: torch.LongTensor  # (R,) index into the flattened (B * S) padded layout
    sample_index: torch.LongTensor  # (R,)
    rank: torch.LongTensor  # (R,) order of first appearance of the row's symbol
    symbol_id: torch.LongTensor  # (R,) vocabulary id of the row's own symbol, -1 if none
    present: torch.BoolTensor  # (R,) False for padding streams
    batch: int
    width: int


# ---------------------------------------------------------------------------------------------------
# Cache folding: streams live in the heads dimension of the cache that generate() sees
# ---------------------------------------------------------------------------------------------------
def _check_dynamic_layer(layer: Any) -> None:
    if not isinstance(layer, DynamicLayer) or isinstance(layer, DynamicSlidingWindowLayer):
        raise TypeError(
            f"SymbolInvWrapperForConditionalGeneration supports dynamic (full-attention) caches only, got a "
            f"{type(layer).__name__} layer; leave cache_implementation unset"
        )


def _unfold_cache(folded: EncoderDecoderCache, width: int) -> EncoderDecoderCache:
    """A cache for the wrapped model, ``(B * S, heads, T, hd)`` views of the folded ``(B, S * heads, T, hd)``."""
    parts = []
    for folded_part in (folded.self_attention_cache, folded.cross_attention_cache):
        layers = []
        for layer in folded_part.layers:
            _check_dynamic_layer(layer)
            row_layer = DynamicLayer()
            if layer.is_initialized and layer.keys is not None and layer.keys.numel():
                if layer.keys.shape[1] % width:
                    raise ValueError(
                        f"the cache has {layer.keys.shape[1]} heads, not a multiple of the "
                        f"{width} streams of this batch: was it built for other inputs?"
                    )
                keys = layer.keys.reshape(-1, layer.keys.shape[1] // width, *layer.keys.shape[2:])
                values = layer.values.reshape(-1, layer.values.shape[1] // width, *layer.values.shape[2:])
                row_layer.lazy_initialization(keys, values)
                row_layer.keys, row_layer.values = keys, values
            layers.append(row_layer)
        part = DynamicCache()
        part.layers = layers
        parts.append(part)
    rows = EncoderDecoderCache(*parts)
    rows.is_updated = dict(folded.is_updated)
    return rows


def _fold_cache(rows: EncoderDecoderCache, folded: EncoderDecoderCache, batch: int) -> None:
    """Write the wrapped model's updated row cache back into ``folded``, batch-major."""
    for row_part, folded_part in (
        (rows.self_attention_cache, folded.self_attention_cache),
        (rows.cross_attention_cache, folded.cross_attention_cache),
    ):
        while len(folded_part.layers) < len(row_part.layers):
            folded_part.layers.append(DynamicLayer())
        for row_layer, layer in zip(row_part.layers, folded_part.layers):
            if not row_layer.is_initialized or row_layer.keys is None or not row_layer.keys.numel():
                continue
            keys = row_layer.keys.reshape(batch, -1, *row_layer.keys.shape[2:])
            values = row_layer.values.reshape(batch, -1, *row_layer.values.shape[2:])
            if not layer.is_initialized:
                layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
    folded.is_updated.update(rows.is_updated)


def _to_padded(row_tensor: torch.Tensor, rows: _StreamRows) -> torch.Tensor:
    """``(R, ...)`` rows -> ``(B, S, ...)``, zeros for streams that did not run."""
    if row_tensor.shape[0] == rows.batch * rows.width:
        return row_tensor.reshape(rows.batch, rows.width, *row_tensor.shape[1:])
    padded = row_tensor.new_zeros(rows.batch * rows.width, *row_tensor.shape[1:])
    padded[rows.flat_index] = row_tensor
    return padded.reshape(rows.batch, rows.width, *row_tensor.shape[1:])


# ---------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------
class SymbolInvWrapperEncoder(nn.Module):
    """What ``get_encoder()`` returns: runs the wrapped encoder once per stream.

    It owns no parameters (it calls the wrapper's ``encode``), so it is kept out of the module tree and
    every weight is stored once, under the wrapped model's names.
    """

    main_input_name = "input_ids"

    def __init__(self, owner: SymbolInvWrapperForConditionalGeneration) -> None:
        super().__init__()
        self.__dict__["_owner"] = owner

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> SymbolInvWrapperEncoderOutput:
        if inputs_embeds is not None or input_ids is None:
            raise ValueError(
                "SymbolInvWrapperForConditionalGeneration needs input_ids (inputs_embeds are not "
                "supported: the streams are built by rewriting token ids)"
            )
        output = self.__dict__["_owner"].encode(
            input_ids, attention_mask, output_attentions=output_attentions, output_hidden_states=output_hidden_states
        )
        return output if return_dict is not False else output.to_tuple()


class SymbolInvWrapperForConditionalGeneration(PreTrainedModel, GenerationMixin):
    """A pretrained ``AutoModelForSeq2SeqLM`` run per stream (EP-DP-CP), invariant to renaming its symbols.

    Build it with :meth:`from_seq2seq`; its parameters are exactly the wrapped model's (``self.wrapped``).
    """

    config_class = SymbolInvWrapperConfig
    config: SymbolInvWrapperConfig
    # The wrapped model's weights keep their own names under "wrapped."; no base-model prefix juggling.
    base_model_prefix = ""
    main_input_name = "input_ids"
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    # The wrapped model's layers do the checkpointing; the wrapper only forwards the switch.
    supports_gradient_checkpointing = True
    _skip_keys_device_placement = list(CACHE_NAMES)

    def __init__(self, config: SymbolInvWrapperConfig, wrapped_model: PreTrainedModel | None = None) -> None:
        # By model_type, not class: remote code loads the config class from another module than this one.
        if getattr(config, "model_type", None) != SymbolInvWrapperConfig.model_type:
            raise TypeError(f"config must be a SymbolInvWrapperConfig, got {type(config).__name__}")
        if not config.is_configured:
            raise ValueError(
                "SymbolInvWrapperConfig.symbol_token_ids: not set; build the wrapper with "
                "SymbolInvWrapperForConditionalGeneration.from_seq2seq(model, tokenizer, actual, "
                "placeholder)"
            )
        super().__init__(config)
        expected = _seq2seq_class(config.wrapped_config)
        if wrapped_model is None:
            wrapped_model = AutoModelForSeq2SeqLM.from_config(config.wrapped_config)
        elif type(wrapped_model) is not expected:
            raise ValueError(
                f"wrapped_model is a {type(wrapped_model).__name__}, but a {expected.__name__} is what "
                "AutoModelForSeq2SeqLM builds from its config (and what loading will build)"
            )
        # One config object for both, so that later changes (e.g. the attention implementation) stay in sync.
        if wrapped_model.config is not config.wrapped_config:
            config.wrapped_config._attn_implementation_internal = wrapped_model.config._attn_implementation
            wrapped_model.config = config.wrapped_config
        if wrapped_model.config._attn_implementation is None:
            # Nesting a config resets its attention implementation (a composite config hands its own, unset
            # one down): choose the wrapped class's default again, as its own __init__ did.
            choose_default = getattr(wrapped_model, "_check_and_adjust_attn_implementation", None)
            wrapped_model.set_attn_implementation(
                choose_default(None, is_init_check=True) if choose_default is not None else "eager"
            )
        self.wrapped = wrapped_model
        self.__dict__["_stream_encoder"] = SymbolInvWrapperEncoder(self)
        self.__dict__["_slot_tables"] = {}
        self.post_init()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_seq2seq(
        cls,
        model_or_path: PreTrainedModel | str,
        tokenizer: PreTrainedTokenizerBase | str | None,
        actual: str,
        placeholder: str,
        symbols: str | None = None,
        max_streams: int | None = None,
        verbose: bool = False,
    ) -> tuple[SymbolInvWrapperForConditionalGeneration, PreTrainedTokenizerBase]:
        """Wrap a pretrained encoder-decoder checkpoint.

        Args:
            model_or_path: an ``AutoModelForSeq2SeqLM`` model, or a path / Hub id of one.
            tokenizer: its tokenizer (or a path / Hub id; None: load it from ``model_or_path``).
            actual, placeholder: token strings (as in ``tokenizer.get_vocab()``, e.g. ``"Ġa"`` for BART's
                word-initial "a") whose embeddings stand for the stream's own symbol and for the others.
            symbols: regular expression that a token string must match in full to be a symbol; default
                ``DEFAULT_SYMBOL_PATTERN`` (one lowercase letter, bare or after the word-start marker).
            max_streams: the most distinct symbols an input may have (default: the number of symbols).
            verbose: print the summary of the mapping (it is always logged at INFO level).

        Returns the wrapper (in eval mode if the model was) and the tokenizer. Raises ``ValueError`` for a
        model that is not an encoder-decoder, tokens that are not in the vocabulary, and a symbol set that
        does not contain both tokens.
        """
        path = model_or_path if isinstance(model_or_path, str) else None
        if path is not None:
            model_config = AutoConfig.from_pretrained(path)
        elif isinstance(model_or_path, PreTrainedModel):
            model_config = model_or_path.config
        else:
            raise TypeError(f"model_or_path must be a PreTrainedModel or a path, got {type(model_or_path).__name__}")
        _check_seq2seq_config(model_config, type(model_or_path) if path is None else None)

        if tokenizer is None:
            if path is None:
                raise ValueError("tokenizer is required when a model object (not a path) is given")
            tokenizer = AutoTokenizer.from_pretrained(path)
        elif isinstance(tokenizer, str):
            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        pattern = DEFAULT_SYMBOL_PATTERN if symbols is None else symbols
        symbol_ids, actual_id, placeholder_id = _symbol_mapping(tokenizer, pattern, actual, placeholder)
        vocab_size = model_config.get_text_config(decoder=True).vocab_size
        too_large = [tokenizer.convert_ids_to_tokens(i) for i in symbol_ids if i >= vocab_size]
        if too_large:
            raise ValueError(
                f"symbol tokens {too_large[:5]} have ids beyond the model's vocabulary ({vocab_size} "
                "rows): is this the model's tokenizer?"
            )

        model = AutoModelForSeq2SeqLM.from_pretrained(path) if path is not None else model_or_path
        attention = model.config._attn_implementation
        config = SymbolInvWrapperConfig(
            wrapped_config=model.config,
            symbol_token_ids=symbol_ids,
            actual_token_id=actual_id,
            placeholder_token_id=placeholder_id,
            max_streams=max_streams if max_streams is not None else len(symbol_ids),
        )
        wrapper = cls(config, wrapped_model=model)
        if attention is not None and model.config._attn_implementation != attention:
            model.set_attn_implementation(attention)  # keep the one the model was loaded with
        # Generate like the wrapped checkpoint (its beams, length limits, forced tokens, ...).
        wrapper.generation_config = copy.deepcopy(model.generation_config)
        wrapper.train(model.training)
        summary = wrapper.symbol_summary(tokenizer, pattern)
        logger.info(summary)
        if verbose:
            print(summary)
        return wrapper, tokenizer

    def symbol_summary(self, tokenizer: PreTrainedTokenizerBase | None = None, pattern: str | None = None) -> str:
        """A readable description of the symbol mapping."""
        config = self.config

        def name(token_id: int) -> str:
            if tokenizer is None:
                return f"id {token_id}"
            return f"{tokenizer.convert_ids_to_tokens(token_id)!r} (id {token_id})"

        ids = config.symbol_token_ids
        shown = ", ".join(name(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "")
        lines = [
            f"SymbolInvWrapper over {type(self.wrapped).__name__} ({config.wrapped_config.model_type})",
            f"  symbols: {len(ids)} tokens" + (f" matching {pattern!r}" if pattern else "") + f": {shown}",
            f"  actual: {name(config.actual_token_id)}; placeholder: {name(config.placeholder_token_id)}",
            f"  max_streams: {config.max_streams}; stream scores averaged: {config.stream_scores}",
            f"  parameters: {sum(p.numel() for p in self.parameters()):,} (the wrapped model's, none added)",
        ]
        return "\n".join(lines)

    # ------------------------------------------------------------------ plumbing
    def get_encoder(self, modality: str | None = None) -> SymbolInvWrapperEncoder:
        return self.__dict__["_stream_encoder"]

    def get_input_embeddings(self) -> nn.Module:
        return self.wrapped.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.wrapped.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Module | None:
        return self.wrapped.get_output_embeddings()

    def resize_token_embeddings(self, *args: Any, **kwargs: Any) -> nn.Embedding:
        # The wrapped model knows its extra state (e.g. BART's final_logits_bias); the id tables follow the size.
        self.__dict__["_slot_tables"].clear()
        return self.wrapped.resize_token_embeddings(*args, **kwargs)

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def _symbol_ids(self, device: torch.device) -> torch.LongTensor:
        return self._slot_table(device)[1]

    def _slot_table(self, device: torch.device) -> tuple[torch.LongTensor, torch.LongTensor]:
        """Per vocabulary id its symbol slot (-1 for other tokens), and the symbol ids by slot."""
        tables = self.__dict__["_slot_tables"]
        if device not in tables:
            symbol_ids = torch.tensor(self.config.symbol_token_ids, dtype=torch.long, device=device)
            slot_of = torch.full((self.config.vocab_size,), -1, dtype=torch.long, device=device)
            slot_of[symbol_ids] = torch.arange(len(symbol_ids), device=device)
            tables[device] = (slot_of, symbol_ids)
        return tables[device]

    def _check_ids(self, ids: torch.LongTensor, name: str) -> None:
        check_token_ids(ids, name, self.config.vocab_size)

    def stream_ids(self, ids: torch.LongTensor, row_symbol_ids: torch.LongTensor) -> torch.LongTensor:
        """Rewrite token ids for each row's stream: its own symbol -> actual, other symbols -> placeholder.

        ``ids`` and ``row_symbol_ids`` are ``(R, L)`` and ``(R,)``; a row symbol of -1 turns every symbol into
        the placeholder (the stream of a symbol-free input, where there is none to turn).
        """
        slot_of, _ = self._slot_table(ids.device)
        is_symbol = slot_of[ids] >= 0
        own = (ids == row_symbol_ids[:, None]) & (row_symbol_ids[:, None] >= 0)
        actual = torch.full_like(ids, self.config.actual_token_id)
        placeholder = torch.full_like(ids, self.config.placeholder_token_id)
        return torch.where(own, actual, torch.where(is_symbol, placeholder, ids))

    def stream_table(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        given: torch.LongTensor | None = None,
    ) -> tuple[torch.LongTensor, torch.BoolTensor]:
        """Each sample's streams: own-symbol vocabulary ids ``(B, S)`` in order of first appearance (-1 where
        none) and presence ``(B, S)``. Masked positions never open a stream. ``given``: the ids as a data collator
        computed them (``stream_symbol_ids``); their width sets ``S`` (a compiled graph cannot read it from the
        data: without them it runs ``max_streams`` streams), and they must be what the ids give."""
        slot_of, symbol_ids = self._slot_table(input_ids.device)
        token_slots = slot_of[input_ids]
        if attention_mask is not None:
            token_slots = torch.where(attention_mask.bool(), token_slots, -1)
        width = given.shape[-1] if given is not None and given.dim() == 2 else None
        slots, present = first_appearance_streams(token_slots, len(symbol_ids), self.config.max_streams, width)
        own_ids = torch.where(slots >= 0, symbol_ids[slots.clamp(min=0)], -1)
        if given is not None:
            check_given_streams(given, own_ids, "stream_symbol_ids")
        return own_ids, present

    def stream_inputs(
        self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None
    ) -> dict[str, torch.LongTensor]:
        """``{"stream_symbol_ids": (B, S)}`` for ``forward``: computed by a data collator, they fix the stream count
        of a batch before it is seen, which a compiled model needs."""
        return {"stream_symbol_ids": self.stream_table(input_ids, attention_mask)[0]}

    @staticmethod
    def _rows(stream_symbol_ids: torch.LongTensor, stream_mask: torch.BoolTensor, packed: bool) -> _StreamRows:
        packed = packed and not is_compiling()  # packing is data-dependent: a compiled graph runs every stream
        batch, width = stream_mask.shape
        flat_present = stream_mask.reshape(-1)
        flat_index = (
            flat_present.nonzero().squeeze(1) if packed else torch.arange(batch * width, device=stream_mask.device)
        )
        return _StreamRows(
            flat_index=flat_index,
            sample_index=flat_index // width,
            rank=flat_index % width,
            symbol_id=stream_symbol_ids.reshape(-1)[flat_index],
            present=flat_present[flat_index],
            batch=batch,
            width=width,
        )

    # ------------------------------------------------------------------ encoder
    def encode(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        stream_symbol_ids: torch.LongTensor | None = None,
    ) -> SymbolInvWrapperEncoderOutput:
        """Run the wrapped encoder on every present stream; the output is in the padded layout."""
        self._check_ids(input_ids, "input_ids")
        stream_symbol_ids, stream_mask = self.stream_table(input_ids, attention_mask, given=stream_symbol_ids)
        rows = self._rows(stream_symbol_ids, stream_mask, packed=True)
        row_ids = self.stream_ids(input_ids[rows.sample_index], rows.symbol_id)
        row_mask = attention_mask[rows.sample_index] if attention_mask is not None else None
        encoded = self.wrapped.get_encoder()(
            input_ids=row_ids,
            attention_mask=row_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )

        def padded_all(states: tuple[torch.Tensor, ...] | None) -> tuple[torch.Tensor, ...] | None:
            return tuple(_to_padded(state, rows) for state in states) if states is not None else None

        return SymbolInvWrapperEncoderOutput(
            last_hidden_state=_to_padded(encoded.last_hidden_state, rows),
            stream_symbol_ids=stream_symbol_ids,
            stream_mask=stream_mask,
            hidden_states=padded_all(getattr(encoded, "hidden_states", None)),
            attentions=padded_all(getattr(encoded, "attentions", None)),
        )

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SymbolInvWrapperEncoderOutput | tuple | None = None,
        cache: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        stream_symbol_ids: torch.LongTensor | None = None,
        **kwargs: Any,
    ) -> SymbolInvWrapperSeq2SeqLMOutput:
        """``cache``: an ``EncoderDecoderCache`` in the folded layout (``past_key_values``, its name before
        transformers 5.24, is accepted too). ``stream_symbol_ids``: optional, see :meth:`stream_table`."""
        config = self.config
        cache = given_cache(cache, past_key_values)
        if kwargs.get("inputs_embeds") is not None or kwargs.get("decoder_inputs_embeds") is not None:
            raise ValueError("inputs_embeds are not supported: the streams are built by rewriting token ids")
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("give input_ids (or encoder_outputs from get_encoder())")
            encoder_outputs = self.encode(
                input_ids,
                attention_mask,
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                stream_symbol_ids=stream_symbol_ids,
            )
        else:
            encoder_outputs = _as_encoder_output(encoder_outputs)
        if labels is not None:
            if decoder_input_ids is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
            use_cache = False if use_cache is None else use_cache
        if decoder_input_ids is None:
            raise ValueError("decoder_input_ids (or labels, from which they are built) are required")
        self._check_ids(decoder_input_ids, "decoder_input_ids")
        stream_symbol_ids, stream_mask = encoder_outputs.stream_symbol_ids, encoder_outputs.stream_mask
        batch, width = stream_mask.shape
        if decoder_input_ids.shape[0] != batch:
            raise ValueError(
                f"decoder_input_ids has batch size {decoder_input_ids.shape[0]} but the encoder output has {batch}"
            )

        use_cache = use_cache if use_cache is not None else (config.use_cache and not self.training)
        if not use_cache:
            cache = None
        elif cache is None:
            cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        elif not isinstance(cache, EncoderDecoderCache):
            raise TypeError(f"the cache must be an EncoderDecoderCache, got {type(cache).__name__}")

        # The cache holds every stream of every sample (it must survive beam reorders on dim 0); without
        # one, only the present streams run.
        rows = self._rows(stream_symbol_ids, stream_mask, packed=cache is None)
        encoder_states = encoder_outputs.last_hidden_state.reshape(
            batch * width, *encoder_outputs.last_hidden_state.shape[2:]
        )[rows.flat_index]
        row_cache = _unfold_cache(cache, width) if cache is not None else None
        outputs = self.wrapped(
            encoder_outputs=BaseModelOutput(last_hidden_state=encoder_states),
            attention_mask=attention_mask[rows.sample_index] if attention_mask is not None else None,
            decoder_input_ids=self.stream_ids(decoder_input_ids[rows.sample_index], rows.symbol_id),
            decoder_attention_mask=(
                decoder_attention_mask[rows.sample_index] if decoder_attention_mask is not None else None
            ),
            **cache_keyword(row_cache),
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        if row_cache is not None:
            _fold_cache(row_cache, cache, batch)
        logits = self._combine_stream_logits(outputs.logits, rows)

        loss = None
        if labels is not None:
            loss = self._loss(logits, labels, num_items_in_batch)
        decoder_hidden = getattr(outputs, "decoder_hidden_states", None)
        output = SymbolInvWrapperSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **cache_keyword(cache),
            decoder_hidden_states=tuple(_to_padded(h, rows) for h in decoder_hidden) if decoder_hidden else None,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            stream_symbol_ids=stream_symbol_ids,
            stream_mask=stream_mask,
        )
        return output if (config.return_dict if return_dict is None else return_dict) else output.to_tuple()

    def _combine_stream_logits(self, row_logits: torch.Tensor, rows: _StreamRows) -> torch.Tensor:
        """The projection of paper Alg. 5 over the wrapped model's per-stream logits ``(R, T, V) -> (B, T, V)``.

        Base tokens: the mean over the sample's present streams. Symbol i: stream i's score for the actual
        token minus ``TIE_BREAK`` per rank of first appearance. Symbols absent from the input: -inf. Padding
        rows enter nothing (``where``, not a multiplication, so even a non-finite padding row is harmless).
        """
        config = self.config
        if config.stream_scores == "log_probs":
            row_logits = F.log_softmax(row_logits.float(), dim=-1).to(row_logits.dtype)
        _, length, vocab = row_logits.shape
        kept = torch.where(
            rows.present[:, None, None], row_logits, torch.zeros((), dtype=row_logits.dtype, device=row_logits.device)
        )
        total = row_logits.new_zeros(rows.batch, length, vocab).index_add_(0, rows.sample_index, kept)
        counts = row_logits.new_zeros(rows.batch).index_add_(0, rows.sample_index, rows.present.to(row_logits.dtype))
        combined = total / counts[:, None, None]
        combined[..., self._symbol_ids(row_logits.device)] = float("-inf")
        owners = (rows.present & (rows.symbol_id >= 0)).nonzero().squeeze(1)
        # Symmetric symbols (|ab) score exactly alike; ranks of first appearance, which renaming keeps,
        # break such ties the same way under any renaming (ids would not).
        own_scores = row_logits[owners, :, config.actual_token_id] - TIE_BREAK * rows.rank[owners, None]
        combined[rows.sample_index[owners], :, rows.symbol_id[owners]] = own_scores
        return combined

    def _loss(
        self, logits: torch.Tensor, labels: torch.LongTensor, num_items_in_batch: int | torch.Tensor | None
    ) -> torch.Tensor:
        return stream_cross_entropy(
            logits,
            labels,
            num_items_in_batch,
            lambda label: "a symbol that does not occur in the input: the wrapper can only emit symbols of its input",
        )


# ---------------------------------------------------------------------------------------------------
# Helpers of from_seq2seq
# ---------------------------------------------------------------------------------------------------
def _seq2seq_class(config: PreTrainedConfig) -> type:
    try:
        return MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING[type(config)]
    except KeyError:
        raise ValueError(
            f"{type(config).__name__} (model_type {config.model_type!r}) has no AutoModelForSeq2SeqLM "
            "class: the wrapper needs an encoder-decoder AutoModelForSeq2SeqLM checkpoint"
        ) from None


def _check_seq2seq_config(config: PreTrainedConfig, model_class: type | None) -> None:
    """The wrapper rebuilds the model with ``AutoModelForSeq2SeqLM.from_config``: it must be that class."""
    if config.model_type in (SymbolInvWrapperConfig.model_type, "symbolinv"):
        raise ValueError(
            f"a {config.model_type!r} model is renaming-invariant already; wrap a standard "
            "encoder-decoder AutoModelForSeq2SeqLM checkpoint instead"
        )
    if not getattr(config, "is_encoder_decoder", False):
        raise ValueError(
            f"a {type(config).__name__} (model_type {config.model_type!r}) is not an encoder-decoder; the wrapper "
            "needs an encoder-decoder AutoModelForSeq2SeqLM checkpoint (BART, Marian, M2M100, T5, ...)"
        )
    expected = _seq2seq_class(config)
    if model_class is not None and model_class is not expected:
        raise ValueError(
            f"the model is a {model_class.__name__}; the wrapper needs the AutoModelForSeq2SeqLM class "
            f"of its config, {expected.__name__} (load it with AutoModelForSeq2SeqLM.from_pretrained)"
        )


def _symbol_mapping(
    tokenizer: PreTrainedTokenizerBase, pattern: str, actual: str, placeholder: str
) -> tuple[list[int], int, int]:
    """Symbol ids (sorted), actual id and placeholder id, validated against the tokenizer's vocabulary."""
    vocab = tokenizer.get_vocab()
    for role, token in (("actual", actual), ("placeholder", placeholder)):
        if token not in vocab:
            near = [f"{marker}{token}" for marker in ("\u0120", "\u2581") if f"{marker}{token}" in vocab]
            hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
            raise ValueError(
                f"{role} token {token!r} is not in the vocabulary of the tokenizer "
                f"({type(tokenizer).__name__}, {len(vocab)} tokens){hint}"
            )
    if actual == placeholder:
        raise ValueError(f"actual and placeholder are the same token {actual!r}; they must differ")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ValueError(f"symbols: {pattern!r} is not a valid regular expression ({error})") from None
    symbol_ids = sorted(token_id for token, token_id in vocab.items() if regex.fullmatch(token))
    if not symbol_ids:
        raise ValueError(f"symbols: the regular expression {pattern!r} matches no token of the vocabulary")
    if len(symbol_ids) < 2:
        only = tokenizer.convert_ids_to_tokens(symbol_ids[0])
        raise ValueError(
            f"symbols: the regular expression {pattern!r} matches only one token ({only!r}); at least "
            "2 are needed (the actual and the placeholder token)"
        )
    for role, token in (("actual", actual), ("placeholder", placeholder)):
        if not regex.fullmatch(token):
            raise ValueError(
                f"{role} token {token!r} is not matched by the symbol regular expression {pattern!r}: "
                "the actual and placeholder tokens must be symbols"
            )
    special = set(tokenizer.all_special_ids)
    clashing = [tokenizer.convert_ids_to_tokens(i) for i in symbol_ids if i in special]
    if clashing:
        raise ValueError(
            f"symbols: the regular expression {pattern!r} matches special tokens {clashing}; they cannot be renamed"
        )
    return symbol_ids, vocab[actual], vocab[placeholder]


def _as_encoder_output(encoder_outputs: Any) -> SymbolInvWrapperEncoderOutput:
    if isinstance(encoder_outputs, SymbolInvWrapperEncoderOutput):
        return encoder_outputs
    if isinstance(encoder_outputs, dict) and "stream_mask" in encoder_outputs:
        return SymbolInvWrapperEncoderOutput(**encoder_outputs)
    if isinstance(encoder_outputs, (tuple, list)) and len(encoder_outputs) >= 3:
        return SymbolInvWrapperEncoderOutput(*encoder_outputs[:3])
    raise ValueError(
        "encoder_outputs must come from the wrapper's get_encoder() (it carries the streams: "
        "last_hidden_state, stream_symbol_ids, stream_mask)"
    )


__all__ = [
    "DEFAULT_SYMBOL_PATTERN",
    "SymbolInvWrapperEncoderOutput",
    "SymbolInvWrapperForConditionalGeneration",
    "SymbolInvWrapperSeq2SeqLMOutput",
]
