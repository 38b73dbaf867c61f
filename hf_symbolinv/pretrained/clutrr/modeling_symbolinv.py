"""The Symbol-Invariant Transformer (SIT) and its fixed / alpha-renaming / random-embedding baselines.

The stream layouts are described in ``streams.py``.

Layout of the streams. Each sample has one stream per distinct symbol of its input (one stream when
it has none). Two layouts hold them as a flat ``(N, length, d_model)`` tensor:

* packed: only the streams that exist, ``N = sum of the samples' symbol counts``. Training and
  cache-free forwards use it, so cost follows the mean symbol count, not the maximum.
* padded: ``N = batch * S`` with ``S`` the largest symbol count of the batch, padding streams
  flagged absent. The encoder's output and the generation caches use it because generation
  reorders and repeats every tensor on dim 0 (beams): batch stays on dim 0 and streams are
  folded into the heads dimension of the caches.

Absent streams never enter a mean, a restore or a logit, so they never change a present stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, EncoderDecoderCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import ModelOutput
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from .cache_names import CACHE_NAMES, cache_field, cache_keyword, given_cache, output_cache
from .configuration_symbolinv import SymbolInvConfig
from .loading import StrictLoadingMixin
from .pooling import ComplexMultisetPooling
from .positions import (
    LearnedPositionAngles,
    additive_position_encoding,
    apply_rotary,
    make_position_angles,
    rotary_position_tables,
    tree_position_encoding,
)
from .streams import (
    TIE_BREAK,
    StreamLayout,
    aggregate_streams,
    check_token_ids,
    is_compiling,
    make_layout,
    refused,
    stream_cross_entropy,
    stream_symbol_mask,
    stream_table,
    to_padded,
)

#: Cache entries per decoder layer: per-stream and aggregated, for self- and for cross-attention.
CACHE_SLOTS_PER_LAYER = 2


def make_stream_pooling(config: SymbolInvConfig) -> ComplexMultisetPooling | None:
    """The pooling of one aggregated attention: None for the parameter-free mean."""
    if config.stream_aggregation == "complex":
        return ComplexMultisetPooling(config.d_model, config.num_aggregation_states)
    return None


# ---------------------------------------------------------------------------------------------------
# Embeddings and projection
# ---------------------------------------------------------------------------------------------------
class SymbolInvEmbedding(nn.Module):
    """The one embedding matrix of the model, used by the encoder, the decoder and the projection.

    ``streams``: rows are the base tokens, then *actual* and *placeholder* (paper Alg. 1).
    ``fixed`` / ``alpha_renaming``: base rows, then one learned row per symbol.
    ``random``: learned base rows and a shared symbol part α, plus per-symbol random β
    (Işık et al.), resampled at every training forward and fixed in eval mode.
    """

    def __init__(self, config: SymbolInvConfig) -> None:
        super().__init__()
        self.config = config
        self.num_base = config.num_base_tokens
        kind = config.embedding_type
        if kind == "streams":
            self.weight = nn.Parameter(torch.empty(self.num_base + 2, config.d_model))
        elif kind in ("fixed", "alpha_renaming"):
            self.weight = nn.Parameter(torch.empty(self.num_base + config.num_symbol_embeddings, config.d_model))
        else:
            shared_dim = config.d_model - config.random_embedding_dim
            self.weight = nn.Parameter(torch.empty(self.num_base, shared_dim))
            self.shared_symbol = nn.Parameter(torch.empty(shared_dim))
            self.register_buffer("random_vectors", torch.zeros(config.num_symbol_slots, config.random_embedding_dim))

    # -- random dual-part embeddings --------------------------------------------------------------
    def sample_random_vectors(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw β for every symbol slot: distinct vectors where the method's set allows it."""
        config = self.config
        count, dim = config.num_symbol_slots, config.random_embedding_dim
        device = self.weight.device
        if config.random_embedding_method == "normal":
            return torch.randn(count, dim, generator=generator, device=device)
        base = 2 if config.random_embedding_method == "hypercube" else 3
        # The neighbouring-points set excludes the zero vector, whose ternary code is (3^d - 1) / 2.
        size = base**dim if base == 2 else base**dim - 1
        if size >= count and dim <= 20:
            codes = torch.randperm(size, generator=generator, device=device)[:count]
        else:  # the set is too large to enumerate; repeats are then vanishingly rare
            codes = torch.randint(0, size, (count,), generator=generator, device=device)
        if base == 3:
            codes = codes + (codes >= (3**dim - 1) // 2).long()
        digits = (codes[:, None] // base ** torch.arange(dim, device=device)) % base
        return (digits * 2 - 1).float() if base == 2 else (digits - 1).float()

    def resample(self, generator: torch.Generator | None = None) -> None:
        """Draw new random symbol vectors (``random`` embeddings; used for evaluation draws)."""
        if self.config.embedding_type != "random":
            raise ValueError("resample() only applies to embedding_type='random'")
        with torch.no_grad():
            self.random_vectors.copy_(self.sample_random_vectors(generator))

    # -- the matrix used by one forward ------------------------------------------------------------
    def rows(self) -> torch.Tensor:
        """The embedding matrix for this forward (normalised, permuted or re-drawn as configured)."""
        config = self.config
        weight = self.weight
        if config.embedding_type == "alpha_renaming" and self.training:
            perm = torch.randperm(config.num_symbol_embeddings, device=weight.device) + self.num_base
            order = torch.cat([torch.arange(self.num_base, device=weight.device), perm])
            weight = weight[order]
        elif config.embedding_type == "random":
            beta = self.sample_random_vectors() if self.training else self.random_vectors
            base = torch.cat([F.normalize(weight, dim=-1), weight.new_zeros(self.num_base, beta.shape[1])], dim=1)
            alpha = F.normalize(self.shared_symbol, dim=-1).expand(beta.shape[0], -1)
            symbols = torch.cat([alpha, F.normalize(beta.to(weight.dtype), dim=-1)], dim=1)
            weight = torch.cat([base, symbols], dim=0)
        if config.feature_normalization:
            weight = F.normalize(weight, dim=-1)
        return weight

    def stream_ids(self, ids: torch.LongTensor, layout: StreamLayout) -> torch.LongTensor:
        """Row of each token in each stream, ``(N, L)``."""
        per_stream = ids[layout.sample_index]
        if self.config.embedding_type != "streams":
            return per_stream
        is_symbol = per_stream >= self.num_base
        own = stream_symbol_mask(ids, layout, self.num_base)
        actual = torch.full_like(per_stream, self.num_base)
        return torch.where(own, actual, torch.where(is_symbol, actual + 1, per_stream))

    def forward(self, ids: torch.LongTensor, layout: StreamLayout, rows: torch.Tensor) -> torch.Tensor:
        embedded = F.embedding(self.stream_ids(ids, layout), rows)
        if self.config.embedding_scale:
            embedded = embedded * math.sqrt(self.config.d_model)
        return embedded

    def project(
        self, hidden: torch.Tensor, slots: torch.LongTensor, present: torch.BoolTensor, rows: torch.Tensor
    ) -> torch.Tensor:
        """Scores over the whole vocabulary, ``(B, S, T, d) -> (B, T, vocab_size)`` (paper Alg. 5).

        Base tokens: the mean over the sample's present streams. Symbol i: stream i's score for the
        *actual* row. Symbols absent from the input, and slots the model has no row for: -inf.

        Computed in float32 even under autocast: the first-appearance tie-break (``TIE_BREAK``) is below
        bfloat16's resolution, and half-precision scores would let ties fall to the slot ids.
        """
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            return self._project(hidden.float(), slots, present, rows.float())

    def _project(
        self, hidden: torch.Tensor, slots: torch.LongTensor, present: torch.BoolTensor, rows: torch.Tensor
    ) -> torch.Tensor:
        config = self.config
        batch, width, length, _ = hidden.shape
        if config.feature_normalization:
            hidden = F.normalize(hidden, dim=-1)
        scores = hidden @ rows.t()  # (B, S, T, R)
        out = scores.new_full((batch, length, config.vocab_size), float("-inf"))
        if config.embedding_type != "streams":
            out[..., : rows.shape[0]] = scores[:, 0]
            return self._never_emitted(out)
        weight = present.to(scores.dtype)
        base = (scores[..., : self.num_base] * weight[:, :, None, None]).sum(1) / weight.sum(1)[:, None, None]
        out[..., : self.num_base] = base
        # Symbols of a symmetric input (|ab) score exactly alike; an answer must then not depend on
        # which slot ids the names got. Streams are in order of first appearance, so a tiny penalty
        # by that rank breaks such ties the same way under any renaming (ids would not).
        rank = torch.arange(width, device=scores.device, dtype=scores.dtype)
        own_scores = scores[..., self.num_base] - TIE_BREAK * rank[None, :, None]  # (B, S, T)
        # Each owned stream writes its score to its symbol's column; the others write to one extra column,
        # dropped after (a dense scatter: no data-dependent shapes).
        owned = present & (slots >= 0)
        column = torch.where(owned, self.num_base + slots, config.vocab_size)
        out = torch.cat([out, out[..., :1]], dim=-1)
        out = out.scatter(-1, column[:, None, :].expand(batch, length, width), own_scores.transpose(1, 2))
        return self._never_emitted(out[..., : config.vocab_size])

    def _never_emitted(self, scores: torch.Tensor) -> torch.Tensor:
        # <pad> and <start> are never a target (labels use -100 for padding): keep them out of generation.
        scores[..., self.config.pad_token_id] = float("-inf")
        scores[..., self.config.decoder_start_token_id] = float("-inf")
        return scores


# ---------------------------------------------------------------------------------------------------
# Attention and layers
# ---------------------------------------------------------------------------------------------------
def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    is_causal: bool = False,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention written out (softmax of scaled scores); returns the output ``(N, T, H, hd)`` and the weights.

    Masks are boolean (True: may attend), as SDPA takes them; ``is_causal`` without a mask means the
    square causal mask."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-2, -1)) * scaling
    if is_causal and attention_mask is None:
        q_len, k_len = query.shape[-2], key.shape[-2]
        attention_mask = torch.ones(q_len, k_len, dtype=torch.bool, device=query.device).tril(k_len - q_len)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = F.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


class SymbolInvAttention(nn.Module):
    """Multi-head attention with biased projections (the reference layout), run through the attention
    function that ``config._attn_implementation`` names (``sdpa`` or ``eager``).

    Queries come from the streams ``(N, Tq, d)``. Keys and values come from the streams themselves
    (self), from ``kv_states`` aligned with the streams (per-stream cross), or from per-sample states
    ``(B, Tk, d)`` gathered to the streams by ``layout.sample_index`` (aggregated modes): projecting
    before gathering computes each sample's keys once, not once per stream.
    """

    def __init__(self, config: SymbolInvConfig, num_heads: int) -> None:
        super().__init__()
        d_model = config.d_model
        self.config = config
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_causal = False  # set per call: self-attention in the decoder is causal
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.shape[:-1], self.num_heads, self.head_dim).transpose(-3, -2)

    def forward(
        self,
        hidden: torch.Tensor,
        layout: StreamLayout,
        kv_states: torch.Tensor | None = None,
        per_sample_kv: bool = False,
        mask: torch.Tensor | None = None,
        causal: bool = False,
        q_rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        k_rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: Cache | None = None,
        cache_index: int = 0,
        cache_ready: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        streams, q_len, d_model = hidden.shape
        query = apply_rotary(self._heads(self.q_proj(hidden)), q_rotary)
        batch = layout.num_samples
        # Cache tensors keep the batch on dim 0 (beam search reorders dim 0): streams are folded
        # into the heads dimension. Only the padded layout (N = B * S) is used with a cache.
        kv_rows = batch if per_sample_kv else streams
        if cache is not None and cache_ready:
            key, value = cache.layers[cache_index].keys, cache.layers[cache_index].values
        else:
            source = hidden if kv_states is None else kv_states
            key = apply_rotary(self._heads(self.k_proj(source)), k_rotary)
            value = self._heads(self.v_proj(source))
            if cache is not None:
                fold = (batch, -1, *key.shape[-2:])
                key, value = cache.update(key.reshape(fold), value.reshape(fold), cache_index)
        key = key.reshape(kv_rows, self.num_heads, *key.shape[-2:])
        value = value.reshape(kv_rows, self.num_heads, *value.shape[-2:])
        if per_sample_kv:
            key, value = key[layout.sample_index], value[layout.sample_index]
        attention = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        attended, weights = attention(
            self,
            query,
            key,
            value,
            mask,
            scaling=self.scaling,
            dropout=self.dropout if self.training else 0.0,
            # Without a cache, causal self-attention has as many queries as keys: no comparison of shapes, which
            # would be symbolic in a graph compiled for dynamic shapes (sdpa takes a Python bool only).
            is_causal=causal and mask is None and (cache is None or (q_len == key.shape[-2] and q_len > 1)),
        )
        return self.out_proj(attended.reshape(streams, q_len, d_model)), weights


class SymbolInvFeedForward(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int, activation_dropout: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.activation_dropout = activation_dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = F.dropout(F.relu(self.fc1(x)), p=self.activation_dropout, training=self.training)
        return self.fc2(hidden)


class SymbolInvSublayer(nn.Module):
    """Post-LN residual block around one attention: ``x = LN(x + Dropout(attention(x)))``."""

    def __init__(self, config: SymbolInvConfig, num_heads: int, aggregated: bool = False) -> None:
        super().__init__()
        self.attention = SymbolInvAttention(config, num_heads)
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout
        # How an aggregated attention pools the streams into its keys and values.
        self.pooling = make_stream_pooling(config) if aggregated else None

    def forward(
        self, hidden: torch.Tensor, layout: StreamLayout, attentions: list | None = None, **attention_kwargs
    ) -> torch.Tensor:
        attended, weights = self.attention(hidden, layout, **attention_kwargs)
        if attentions is not None:
            attentions.append(weights)
        return self.layer_norm(hidden + F.dropout(attended, p=self.dropout, training=self.training))


@dataclass
class _EncoderContext:
    layout: StreamLayout
    symbol_mask: torch.BoolTensor  # (N, L) own-symbol positions
    key_mask: torch.Tensor | None  # (N, 1, 1, L) boolean, None when nothing is padded
    rotary: tuple[torch.Tensor, torch.Tensor] | None
    attentions: list | None = None  # attention weights of every sublayer, when asked for


class SymbolInvEncoderLayer(GradientCheckpointingLayer):
    def __init__(self, config: SymbolInvConfig) -> None:
        super().__init__()
        heads = config.encoder_attention_heads
        self.self_attn = SymbolInvSublayer(config, heads) if config.uses("EP") else None
        self.aggregated_attn = SymbolInvSublayer(config, heads, aggregated=True) if config.uses("EA") else None
        self.feed_forward = SymbolInvFeedForward(config.d_model, config.encoder_ffn_dim, config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(self, hidden: torch.Tensor, ctx: _EncoderContext) -> torch.Tensor:
        rope = dict(q_rotary=ctx.rotary, k_rotary=ctx.rotary, attentions=ctx.attentions)
        if self.self_attn is not None:
            hidden = self.self_attn(hidden, ctx.layout, mask=ctx.key_mask, **rope)
        if self.aggregated_attn is not None:
            view = aggregate_streams(hidden, ctx.symbol_mask, ctx.layout, self.aggregated_attn.pooling)
            hidden = self.aggregated_attn(
                hidden, ctx.layout, kv_states=view, per_sample_kv=True, mask=ctx.key_mask, **rope
            )
        feed = self.feed_forward(hidden)
        return self.final_layer_norm(hidden + F.dropout(feed, p=self.dropout, training=self.training))


@dataclass
class _DecoderContext:
    layout: StreamLayout
    symbol_mask: torch.BoolTensor  # (N, T) own-symbol positions among the decoder tokens
    self_mask: torch.Tensor | None
    rotary: tuple[torch.Tensor, torch.Tensor] | None
    encoder_states: torch.Tensor  # (N, Le, d) per-stream encoder output
    encoder_symbol_mask: torch.BoolTensor | None  # (N, Le) own-symbol positions in the input (for CA)
    cross_mask: torch.Tensor | None
    encoder_rotary: tuple[torch.Tensor, torch.Tensor] | None
    cache: EncoderDecoderCache | None
    # The mean-aggregated encoder output, the same for every CA layer: computed once, before the layers
    # (not inside one, where gradient checkpointing would recompute it out of the graph).
    mean_encoder_view: torch.Tensor | None = None
    attentions: list | None = None  # attention weights of every sublayer, when asked for
    cross_attentions: list | None = None

    def aggregated_encoder(self, pooling: ComplexMultisetPooling | None) -> torch.Tensor:
        """The aggregated encoder output ``(B, Le, d)`` for a CA layer: the shared mean, or the layer's own
        complex pooling."""
        if pooling is not None:
            return aggregate_streams(self.encoder_states, self.encoder_symbol_mask, self.layout, pooling)
        return self.mean_encoder_view


class SymbolInvDecoderLayer(GradientCheckpointingLayer):
    def __init__(self, config: SymbolInvConfig, layer_index: int) -> None:
        super().__init__()
        heads = config.decoder_attention_heads
        self.self_attn = SymbolInvSublayer(config, heads) if config.uses("DP") else None
        self.aggregated_attn = SymbolInvSublayer(config, heads, aggregated=True) if config.uses("DA") else None
        self.cross_attn = SymbolInvSublayer(config, heads) if config.uses("CP") else None
        self.aggregated_cross_attn = SymbolInvSublayer(config, heads, aggregated=True) if config.uses("CA") else None
        self.cross_order = config.cross_attention_modes
        self.feed_forward = SymbolInvFeedForward(config.d_model, config.decoder_ffn_dim, config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout
        self.layer_index = layer_index

    def forward(self, hidden: torch.Tensor, ctx: _DecoderContext) -> torch.Tensor:
        cache = ctx.cache
        self_cache = cache.self_attention_cache if cache is not None else None
        cross_cache = cache.cross_attention_cache if cache is not None else None
        base_slot = self.layer_index * CACHE_SLOTS_PER_LAYER
        rope = dict(q_rotary=ctx.rotary, k_rotary=ctx.rotary, attentions=ctx.attentions)
        if self.self_attn is not None:
            hidden = self.self_attn(
                hidden, ctx.layout, mask=ctx.self_mask, causal=True, cache=self_cache, cache_index=base_slot, **rope
            )
        if self.aggregated_attn is not None:
            # The view at a position depends only on that position's stream states, so cached keys
            # of earlier positions stay valid while generating.
            view = aggregate_streams(hidden, ctx.symbol_mask, ctx.layout, self.aggregated_attn.pooling)
            hidden = self.aggregated_attn(
                hidden,
                ctx.layout,
                kv_states=view,
                per_sample_kv=True,
                mask=ctx.self_mask,
                causal=True,
                cache=self_cache,
                cache_index=base_slot + 1,
                **rope,
            )
        for mode in self.cross_order:
            per_stream = mode == "CP"
            sublayer = self.cross_attn if per_stream else self.aggregated_cross_attn
            index = base_slot + (0 if per_stream else 1)
            ready = bool(cache is not None and cache.is_updated.get(index, False))
            if per_stream:
                kv_states = ctx.encoder_states
            elif ready:  # the aggregated encoder's keys and values are cached
                kv_states = None
            else:
                kv_states = ctx.aggregated_encoder(sublayer.pooling)
            hidden = sublayer(
                hidden,
                ctx.layout,
                kv_states=kv_states,
                per_sample_kv=not per_stream,
                mask=ctx.cross_mask,
                q_rotary=ctx.rotary,
                k_rotary=ctx.encoder_rotary,
                cache=cross_cache,
                cache_index=index,
                cache_ready=ready,
                attentions=ctx.cross_attentions,
            )
            if cache is not None:
                cache.is_updated[index] = True
        feed = self.feed_forward(hidden)
        return self.final_layer_norm(hidden + F.dropout(feed, p=self.dropout, training=self.training))


# ---------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------
@dataclass
class SymbolInvEncoderOutput(ModelOutput):
    """Encoder output in the padded stream layout.

    last_hidden_state: ``(B, S, L, d)``; stream_slots / stream_mask: ``(B, S)``; input_ids: the
    encoder's token ids (the decoder needs the symbol positions for aggregated cross-attention).
    """

    last_hidden_state: torch.FloatTensor | None = None
    stream_slots: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None
    input_ids: torch.LongTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
@cache_field
class SymbolInvSeq2SeqOutput(ModelOutput):
    """Decoder streams ``(B, S, T, d)`` plus the encoder output they were computed from."""

    last_hidden_state: torch.FloatTensor | None = None
    stream_slots: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None
    cache: Cache | None = None  # named past_key_values before transformers 5.24 (cache_names.py)
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    decoder_attentions: tuple[torch.FloatTensor, ...] | None = None
    cross_attentions: tuple[torch.FloatTensor, ...] | None = None
    encoder_attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
@cache_field
class SymbolInvSeq2SeqLMOutput(ModelOutput):
    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    cache: Cache | None = None  # named past_key_values before transformers 5.24 (cache_names.py)
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    stream_slots: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None
    decoder_attentions: tuple[torch.FloatTensor, ...] | None = None
    cross_attentions: tuple[torch.FloatTensor, ...] | None = None
    encoder_attentions: tuple[torch.FloatTensor, ...] | None = None


#: How attention weights are returned (``output_attentions=True``, eager attention only): one entry per
#: attention sublayer in the order they run (per-stream before aggregated), each ``(B, S, heads, Tq, Tk)``
#: in the padded stream layout.
ATTENTIONS_LAYOUT = "(B, S, heads, Tq, Tk) per attention sublayer"


def _padded_attentions(weights: list | None, layout: StreamLayout, width: int) -> tuple | None:
    return None if weights is None else tuple(to_padded(w, layout, width) for w in weights)


def _returns_dict(config: SymbolInvConfig, return_dict: bool | None) -> bool:
    return config.return_dict if return_dict is None else return_dict


def _check_attention_output(config: SymbolInvConfig, output_attentions: bool | None) -> bool:
    if not output_attentions:
        return False
    if config._attn_implementation != "eager":
        raise ValueError(
            f"output_attentions=True needs attn_implementation='eager' (this model runs "
            f"{config._attn_implementation!r}, which does not return attention weights): load it with "
            "attn_implementation='eager' or call model.set_attn_implementation('eager')"
        )
    return True


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------
class SymbolInvPreTrainedModel(StrictLoadingMixin, PreTrainedModel):
    config_class = SymbolInvConfig
    config: SymbolInvConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_attention_backend = False  # eager and sdpa: other kernels take no boolean per-stream masks
    _no_split_modules = ["SymbolInvEncoderLayer", "SymbolInvDecoderLayer"]
    _skip_keys_device_placement = list(CACHE_NAMES)

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.init_std
        if isinstance(module, SymbolInvEmbedding):
            init.normal_(module.weight, mean=0.0, std=std)
            if self.config.embedding_type == "random":
                init.normal_(module.shared_symbol, mean=0.0, std=std)
                init.copy_(module.random_vectors, module.sample_random_vectors())
        elif isinstance(module, LearnedPositionAngles):
            module.reset_parameters()
        elif isinstance(module, SymbolInvForConditionalGeneration):
            init.constant_(module.logit_scale, module.initial_logit_scale())


def _stream_key_mask(mask: torch.Tensor | None, layout: StreamLayout) -> torch.BoolTensor | None:
    """A ``(B, L)`` padding mask as every stream's key mask ``(N, 1, 1, L)``; None when nothing is masked (kept
    inside a compiled graph, where whether anything is masked is not known while tracing)."""
    if mask is None or (not is_compiling() and bool(mask.all())):
        return None
    return mask.bool()[layout.sample_index][:, None, None, :]


def _check_ids(ids: torch.LongTensor, config: SymbolInvConfig, name: str, allow_ignore: bool = False) -> None:
    check_token_ids(ids, name, config.vocab_size, allow_ignore)
    if config.embedding_type in ("fixed", "alpha_renaming"):
        limit = config.num_base_tokens + config.num_symbol_embeddings
        over = ids >= limit
        if refused(over, f"{name} holds a symbol slot this {config.embedding_type!r} model has no row for"):
            sample, position = (int(v) for v in over.nonzero()[0])
            raise ValueError(
                f"{name}[{sample}, {position}] is symbol slot {int(ids[sample, position]) - config.num_base_tokens}, "
                f"but this {config.embedding_type!r} model has rows for {config.num_symbol_embeddings} symbols "
                "only (it cannot run inputs with more symbols than it was built for; a 'streams' model can)"
            )


class SymbolInvEncoder(SymbolInvPreTrainedModel):
    """The encoder stack. Called by ``generate`` through ``get_encoder()``."""

    def __init__(self, config: SymbolInvConfig, embedding: SymbolInvEmbedding | None = None) -> None:
        super().__init__(config)
        if embedding is None:  # a standalone encoder owns its embedding
            self.shared = SymbolInvEmbedding(config)
            embedding = self.shared
        # Inside SymbolInvModel the embedding is the model's; keep a reference outside the module tree so
        # the weight is stored once.
        self.__dict__["_embedding"] = embedding
        self.position_angles = make_position_angles(
            config.encoder_position_encoding, config, config.encoder_attention_heads
        )
        self.layers = nn.ModuleList(SymbolInvEncoderLayer(config) for _ in range(config.encoder_layers))
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        symbol_mask: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        embedding_rows: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        stream_slots: torch.LongTensor | None = None,
        **kwargs,
    ) -> SymbolInvEncoderOutput | tuple:
        config = self.config
        output_attentions = _check_attention_output(config, output_attentions)
        if input_ids is None:
            raise ValueError(
                "SymbolInvEncoder needs input_ids (inputs_embeds are not supported: the streams "
                "are built from the token ids)"
            )
        _check_ids(input_ids, config, "input_ids")
        if symbol_mask is not None:
            expected = input_ids >= config.num_base_tokens
            if symbol_mask.shape != input_ids.shape or refused(
                symbol_mask.bool() != expected, "symbol_mask does not match input_ids"
            ):
                raise ValueError(
                    "symbol_mask does not match input_ids: it must be 1 exactly where the id is a "
                    f"symbol (id >= {config.num_base_tokens}); was it padded differently?"
                )
        embedding = self.__dict__["_embedding"]
        rows = embedding.rows() if embedding_rows is None else embedding_rows
        slots, present = stream_table(input_ids, attention_mask, config, given=stream_slots)
        layout = make_layout(slots, present, packed=True, dtype=rows.dtype)
        hidden = embedding(input_ids, layout, rows)
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device)
        kind = config.encoder_position_encoding
        if kind == "tree":
            hidden = (
                hidden + tree_position_encoding(input_ids, attention_mask, config).to(hidden.dtype)[layout.sample_index]
            )
        added = additive_position_encoding(kind, positions, config.d_model, self.position_angles)
        if added is not None:
            hidden = hidden + added.to(hidden.dtype)
        rotary = rotary_position_tables(
            kind, positions, config.d_model // config.encoder_attention_heads, config.rope_theta, self.position_angles
        )
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)
        key_mask = _stream_key_mask(attention_mask, layout)
        ctx = _EncoderContext(
            layout,
            stream_symbol_mask(input_ids, layout, config.num_base_tokens),
            key_mask,
            rotary,
            attentions=[] if output_attentions else None,
        )
        width = slots.shape[1]
        all_hidden = [] if output_hidden_states else None
        for layer in self.layers:
            if all_hidden is not None:
                all_hidden.append(to_padded(hidden, layout, width))
            hidden = layer(hidden, ctx)
        if all_hidden is not None:
            all_hidden.append(to_padded(hidden, layout, width))
        output = SymbolInvEncoderOutput(
            last_hidden_state=to_padded(hidden, layout, width),
            stream_slots=slots,
            stream_mask=present,
            input_ids=input_ids,
            hidden_states=tuple(all_hidden) if all_hidden is not None else None,
            attentions=_padded_attentions(ctx.attentions, layout, width),
        )
        return output if _returns_dict(config, return_dict) else output.to_tuple()


class SymbolInvDecoder(SymbolInvPreTrainedModel):
    def __init__(self, config: SymbolInvConfig, embedding: SymbolInvEmbedding | None = None) -> None:
        super().__init__(config)
        if embedding is None:  # a standalone decoder owns its embedding
            self.shared = SymbolInvEmbedding(config)
            embedding = self.shared
        self.__dict__["_embedding"] = embedding
        self.position_angles = make_position_angles(
            config.decoder_position_encoding, config, config.decoder_attention_heads
        )
        self.layers = nn.ModuleList(SymbolInvDecoderLayer(config, i) for i in range(config.decoder_layers))
        self.post_init()

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: SymbolInvEncoderOutput,
        attention_mask: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        cache: EncoderDecoderCache | None = None,
        output_hidden_states: bool | None = None,
        embedding_rows: torch.Tensor | None = None,
        output_attentions: bool | None = None,
    ) -> tuple[torch.Tensor, tuple | None, tuple | None, tuple | None]:
        """Returns the decoder streams ``(B, S, T, d)`` (padded layout) and the optional hidden states,
        self-attention and cross-attention weights."""
        config = self.config
        output_attentions = _check_attention_output(config, output_attentions)
        _check_ids(decoder_input_ids, config, "decoder_input_ids")
        embedding = self.__dict__["_embedding"]
        rows = embedding.rows() if embedding_rows is None else embedding_rows
        slots, present = encoder_outputs.stream_slots, encoder_outputs.stream_mask
        batch, width = slots.shape
        if decoder_input_ids.shape[0] != batch:
            raise ValueError(
                f"decoder_input_ids has batch size {decoder_input_ids.shape[0]} but the encoder output has {batch}"
            )
        if cache is not None and not isinstance(cache, EncoderDecoderCache):
            raise TypeError(f"the cache must be an EncoderDecoderCache, got {type(cache).__name__}")
        # With a cache the padded layout keeps streams aligned with the cache's batch-major tensors.
        layout = make_layout(slots, present, packed=cache is None, dtype=rows.dtype)
        encoder_states = encoder_outputs.last_hidden_state.reshape(
            batch * width, *encoder_outputs.last_hidden_state.shape[2:]
        )
        if layout.padded_rows is not None:
            encoder_states = encoder_states[layout.padded_rows]
        past = 0
        if cache is not None:
            needed = config.decoder_layers * CACHE_SLOTS_PER_LAYER
            for sub in (cache.self_attention_cache, cache.cross_attention_cache):
                while len(sub.layers) < needed:
                    sub.layers.append(DynamicLayer())
            past = cache.self_attention_cache.get_seq_length(0 if config.uses("DP") else 1)
        steps = decoder_input_ids.shape[1]
        positions = torch.arange(past, past + steps, device=decoder_input_ids.device)
        hidden = embedding(decoder_input_ids, layout, rows)
        kind = config.decoder_position_encoding
        added = additive_position_encoding(kind, positions, config.d_model, self.position_angles)
        if added is not None:
            hidden = hidden + added.to(hidden.dtype)
        head_dim = config.d_model // config.decoder_attention_heads
        rotary = rotary_position_tables(kind, positions, head_dim, config.rope_theta, self.position_angles)
        # Cross-attention rotates the encoder's keys by their positions with the decoder's frequencies.
        encoder_rotary = rotary_position_tables(
            kind,
            torch.arange(encoder_states.shape[1], device=hidden.device),
            head_dim,
            config.rope_theta,
            self.position_angles,
        )
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)

        self_mask = None
        if past and steps > 1:  # several new tokens on top of a cache: causal mask with an offset
            keys = torch.arange(past + steps, device=hidden.device)
            self_mask = (keys[None, :] <= positions[:, None])[None, None]
        allowed = _stream_key_mask(decoder_attention_mask, layout)
        if allowed is not None:
            keys = torch.arange(allowed.shape[-1], device=hidden.device)
            causal = keys[None, :] <= (keys[-steps:] if allowed.shape[-1] >= steps else keys)[:, None]
            own = keys[None, :] == keys[-steps:][:, None]  # a query always sees itself: no empty rows
            self_mask = (allowed & causal) | own
        cross_mask = _stream_key_mask(attention_mask, layout)
        encoder_symbol_mask = None
        aggregated_cross_cached = cache is not None and cache.is_updated.get(1, False)
        if config.uses("CA") and not aggregated_cross_cached:
            encoder_symbol_mask = stream_symbol_mask(encoder_outputs.input_ids, layout, config.num_base_tokens)
        ctx = _DecoderContext(
            layout=layout,
            symbol_mask=stream_symbol_mask(decoder_input_ids, layout, config.num_base_tokens),
            self_mask=self_mask,
            rotary=rotary,
            encoder_states=encoder_states,
            encoder_symbol_mask=encoder_symbol_mask,
            cross_mask=cross_mask,
            encoder_rotary=encoder_rotary,
            cache=cache,
            attentions=[] if output_attentions else None,
            cross_attentions=[] if output_attentions else None,
        )
        if encoder_symbol_mask is not None and config.stream_aggregation == "mean":
            ctx.mean_encoder_view = aggregate_streams(encoder_states, encoder_symbol_mask, layout)
        all_hidden = [] if output_hidden_states else None
        for layer in self.layers:
            if all_hidden is not None:
                all_hidden.append(to_padded(hidden, layout, width))
            hidden = layer(hidden, ctx)
        if all_hidden is not None:
            all_hidden.append(to_padded(hidden, layout, width))
        return (
            to_padded(hidden, layout, width),
            tuple(all_hidden) if all_hidden is not None else None,
            _padded_attentions(ctx.attentions, layout, width),
            _padded_attentions(ctx.cross_attentions, layout, width),
        )


def _as_encoder_output(encoder_outputs) -> SymbolInvEncoderOutput:
    if isinstance(encoder_outputs, SymbolInvEncoderOutput):
        return encoder_outputs
    if isinstance(encoder_outputs, (tuple, list)) and len(encoder_outputs) >= 4:
        return SymbolInvEncoderOutput(*encoder_outputs[:4])
    if isinstance(encoder_outputs, dict) and "stream_slots" in encoder_outputs:
        return SymbolInvEncoderOutput(**encoder_outputs)
    raise ValueError(
        "encoder_outputs must come from SymbolInvEncoder (it carries the stream layout: "
        "last_hidden_state, stream_slots, stream_mask, input_ids)"
    )


class SymbolInvModel(SymbolInvPreTrainedModel):
    """Encoder-decoder returning the decoder's per-stream states (no projection)."""

    # Loading the base model from a SymbolInvForConditionalGeneration checkpoint leaves out the head's state.
    _keys_to_ignore_on_load_unexpected = [r"^logit_scale$"]

    def __init__(self, config: SymbolInvConfig) -> None:
        super().__init__(config)
        self.shared = SymbolInvEmbedding(config)
        self.encoder = SymbolInvEncoder(config, self.shared)
        self.decoder = SymbolInvDecoder(config, self.shared)
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.shared

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.shared = value
        self.encoder.__dict__["_embedding"] = value
        self.decoder.__dict__["_embedding"] = value

    def get_encoder(self, modality: str | None = None) -> SymbolInvEncoder:
        return self.encoder

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        symbol_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SymbolInvEncoderOutput | tuple | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        embedding_rows: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        past_key_values: Cache | None = None,
        stream_slots: torch.LongTensor | None = None,
        **kwargs,
    ) -> SymbolInvSeq2SeqOutput | tuple:
        """``cache``: an ``EncoderDecoderCache`` (``past_key_values``, its name before transformers 5.24, is
        accepted too). ``stream_slots``: ``(B, S)``, every sample's symbol slots in order of first appearance
        (-1 where unused), as ``streams.stream_table`` computes them; optional, and checked against
        the ids. Its width fixes the stream count, which a compiled model needs to know before the data."""
        cache = given_cache(cache, past_key_values)
        output_attentions = _check_attention_output(self.config, output_attentions)
        if kwargs.get("inputs_embeds") is not None or kwargs.get("decoder_inputs_embeds") is not None:
            raise ValueError("inputs_embeds are not supported: the streams are built from token ids")
        rows = self.shared.rows() if embedding_rows is None else embedding_rows
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                symbol_mask=symbol_mask,
                output_hidden_states=output_hidden_states,
                embedding_rows=rows,
                output_attentions=output_attentions,
                stream_slots=stream_slots,
                return_dict=True,
            )
        else:
            encoder_outputs = _as_encoder_output(encoder_outputs)
        if decoder_input_ids is None:
            raise ValueError("decoder_input_ids (or labels, from which they are built) are required")
        use_cache = use_cache if use_cache is not None else (self.config.use_cache and not self.training)
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        if not use_cache:
            cache = None
        decoder_states, decoder_hidden, decoder_attentions, cross_attentions = self.decoder(
            decoder_input_ids,
            encoder_outputs,
            attention_mask=attention_mask,
            decoder_attention_mask=decoder_attention_mask,
            cache=cache,
            output_hidden_states=output_hidden_states,
            embedding_rows=rows,
            output_attentions=output_attentions,
        )
        output = SymbolInvSeq2SeqOutput(
            last_hidden_state=decoder_states,
            stream_slots=encoder_outputs.stream_slots,
            stream_mask=encoder_outputs.stream_mask,
            **cache_keyword(cache),
            decoder_hidden_states=decoder_hidden,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            decoder_attentions=decoder_attentions,
            cross_attentions=cross_attentions,
            encoder_attentions=encoder_outputs.attentions,
        )
        return output if _returns_dict(self.config, return_dict) else output.to_tuple()


def shift_tokens_right(labels: torch.LongTensor, pad_token_id: int, decoder_start_token_id: int) -> torch.LongTensor:
    shifted = labels.new_zeros(labels.shape)
    shifted[:, 1:] = labels[:, :-1].clone()
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == -100, pad_token_id)


class SymbolInvForConditionalGeneration(SymbolInvPreTrainedModel, GenerationMixin):
    """The SIT with its projection (paper Alg. 5), loss (AdaCos or cross-entropy) and ``generate``.

    Three-way weight tying holds by construction: the encoder, the decoder and the projection all use
    ``model.shared``, the model's only embedding matrix.
    """

    def __init__(self, config: SymbolInvConfig) -> None:
        super().__init__(config)
        self.model = SymbolInvModel(config)
        # The AdaCos scale is state, not a parameter: saved with the weights, never trained by SGD.
        self.register_buffer("logit_scale", torch.tensor(self.initial_logit_scale()), persistent=True)
        self.post_init()

    def initial_logit_scale(self) -> float:
        """AdaCos' s0 = √2·ln(C − 1) for C output classes."""
        return math.sqrt(2.0) * math.log(self.config.vocab_size - 1)

    def get_encoder(self, modality: str | None = None) -> SymbolInvEncoder:
        return self.model.encoder

    def get_input_embeddings(self) -> nn.Module:
        return self.model.shared

    def get_output_embeddings(self) -> None:
        # The projection reads model.shared directly; there is no separate head to tie.
        return None

    def stream_inputs(
        self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None
    ) -> dict[str, torch.LongTensor]:
        """``{"stream_slots": (B, S)}``: every sample's symbol slots in order of first appearance, -1 where unused.
        Given to ``forward`` (a data collator computes them), they fix the stream count of a batch before it is
        seen, which a compiled model needs."""
        return {"stream_slots": stream_table(input_ids, attention_mask, self.config)[0]}

    def resample_random_embeddings(self, generator: torch.Generator | None = None) -> None:
        """New random symbol vectors for a ``random``-embedding model (one evaluation draw)."""
        self.model.shared.resample(generator)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        symbol_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SymbolInvEncoderOutput | tuple | None = None,
        cache: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        stream_slots: torch.LongTensor | None = None,
        **kwargs,
    ) -> SymbolInvSeq2SeqLMOutput | tuple:
        """``cache``: an ``EncoderDecoderCache`` (``past_key_values``, its name before transformers 5.24, is
        accepted too). ``stream_slots``: ``(B, S)``, every sample's symbol slots in order of first appearance
        (-1 where unused), as ``streams.stream_table`` computes them; optional, and checked against
        the ids. Its width fixes the stream count, which a compiled model needs to know before the data."""
        config = self.config
        cache = given_cache(cache, past_key_values)
        if labels is not None:
            _check_ids(labels, config, "labels", allow_ignore=True)
            # <pad> is never a target; a tokenizer padding labels with it (rather than -100) means "ignore".
            labels = labels.masked_fill(labels == config.pad_token_id, -100)
            if decoder_input_ids is None:
                decoder_input_ids = shift_tokens_right(labels, config.pad_token_id, config.decoder_start_token_id)
            use_cache = False if use_cache is None else use_cache
        rows = self.model.shared.rows()
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            symbol_mask=symbol_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=cache,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            embedding_rows=rows,
            return_dict=True,
            stream_slots=stream_slots,
            **kwargs,
        )
        scores = self.model.shared.project(outputs.last_hidden_state, outputs.stream_slots, outputs.stream_mask, rows)
        loss = None
        if labels is not None:
            if config.feature_normalization and config.loss_type == "adacos" and self.training:
                self._update_adacos_scale(scores, labels)
            logits = self._scale(scores)
            loss = self._loss(logits, labels, num_items_in_batch)
        else:
            logits = self._scale(scores)
        output = SymbolInvSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **cache_keyword(output_cache(outputs)),
            decoder_hidden_states=outputs.decoder_hidden_states,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            stream_slots=outputs.stream_slots,
            stream_mask=outputs.stream_mask,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_attentions=outputs.encoder_attentions,
        )
        return output if _returns_dict(config, return_dict) else output.to_tuple()

    def _scale(self, scores: torch.Tensor) -> torch.Tensor:
        if not self.config.feature_normalization:
            return scores
        scale = self.logit_scale if self.config.loss_type == "adacos" else self.initial_logit_scale()
        return scores * scale

    @torch.no_grad()
    def _update_adacos_scale(self, cosines: torch.Tensor, labels: torch.LongTensor) -> None:
        """AdaCos: s <- ln(B_avg) / cos(min(π/4, θ_med)) over the batch's non-padding targets."""
        # Over all positions with padding masked out (not selected: a selection's size depends on the data,
        # which a compiled graph cannot have).
        valid = labels != -100
        cos = cosines.float()  # (B, T, V), -inf for classes the input cannot produce
        target = labels.clamp(min=0)[..., None]
        target_cos = cos.gather(-1, target).squeeze(-1)
        others = torch.exp(self.logit_scale.float() * cos).scatter(-1, target, 0.0)
        count = valid.sum()
        b_avg = torch.where(valid, others.sum(-1), 0.0).sum() / count.clamp(min=1)
        angles = torch.arccos(target_cos.clamp(-1 + 1e-7, 1 - 1e-7))
        theta_med = torch.nanmedian(torch.where(valid, angles, float("nan")))
        new_scale = torch.log(b_avg) / torch.cos(torch.clamp(theta_med, max=math.pi / 4))
        # With few classes B_avg can fall below e (even below 1: a negative scale), and the scale
        # collapses while accuracy is perfect; never go below the fixed AdaCos scale s0.
        floor = min(self.initial_logit_scale(), self.config.adacos_max_scale)
        new_scale = new_scale.clamp(floor, self.config.adacos_max_scale).to(self.logit_scale.dtype)
        self.logit_scale.copy_(torch.where(count > 0, new_scale, self.logit_scale))  # no target: unchanged

    def _loss(
        self, logits: torch.Tensor, labels: torch.LongTensor, num_items_in_batch: int | torch.Tensor | None
    ) -> torch.Tensor:
        def why(label: int) -> str:
            if label >= self.config.num_base_tokens:
                return "a symbol that does not occur in the input: the model can only emit symbols of its input"
            return "a token the model never emits (<start>)"

        return stream_cross_entropy(logits, labels, num_items_in_batch, why)

    def save_pretrained(self, save_directory, *args, **kwargs):
        # Record the symbolic-generation pipeline so pipeline(..., trust_remote_code=True) finds it; the
        # relative import also makes save_pretrained copy the pipeline file next to this one.
        from .pipeline_symbolinv import PIPELINE_TASK, custom_pipeline_entry

        self.config.custom_pipelines = {PIPELINE_TASK: custom_pipeline_entry()}
        return super().save_pretrained(save_directory, *args, **kwargs)

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)


__all__ = [
    "SymbolInvEncoder",
    "SymbolInvForConditionalGeneration",
    "SymbolInvModel",
    "SymbolInvPreTrainedModel",
]
