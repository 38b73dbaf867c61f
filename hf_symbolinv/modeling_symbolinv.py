"""The Symbol-Invariant Transformer (SIT) and its fixed / alpha-renaming / random-embedding baselines.

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
from transformers.modeling_outputs import ModelOutput

from .configuration_symbolinv import SymbolInvConfig
from .multiset import ComplexMultisetPooling

#: Score penalty per rank of first appearance: far below any meaningful score difference, far above
#: float rounding of the (bit-identical) scores it separates.
TIE_BREAK = 1e-5
#: Cache entries per decoder layer: per-stream and aggregated, for self- and for cross-attention.
CACHE_SLOTS_PER_LAYER = 2


# ---------------------------------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------------------------------
@dataclass
class StreamLayout:
    """Which sample and symbol slot each of the N flat streams stands for."""

    sample_index: torch.LongTensor  # (N,)
    slot: torch.LongTensor  # (N,) symbol slot, -1 for the stream of a symbol-free input / padding
    present: torch.BoolTensor  # (N,) False for padding streams of the padded layout
    counts: torch.Tensor  # (B,) present streams per sample, as the hidden dtype's float
    num_samples: int
    padded_rows: torch.LongTensor | None  # (N,) row of each stream in the padded (B * S) layout
    all_present: bool


def first_appearance_streams(
    token_slots: torch.LongTensor, num_slots: int, max_streams: int
) -> tuple[torch.LongTensor, torch.BoolTensor]:
    """Streams of every sample from its tokens' symbol slots ``(B, L)`` (-1 for a base token or padding).

    Returns slots ``(B, S)`` in order of first appearance (-1 where unused) and presence ``(B, S)``;
    a sample without symbols gets one present stream of slot -1.
    """
    batch, length = token_slots.shape
    device = token_slots.device
    is_symbol = token_slots >= 0
    # First position of every slot (length where it does not occur).
    positions = torch.arange(length, device=device).expand(batch, length)
    first = torch.full((batch, num_slots), length, dtype=torch.long, device=device)
    first.scatter_reduce_(1, token_slots.clamp(min=0), torch.where(is_symbol, positions, length), reduce="amin")
    occurs = first < length
    counts = occurs.sum(1)
    largest = int(counts.max()) if batch else 0
    if largest > max_streams:
        sample = int(counts.argmax())
        raise ValueError(
            f"input {sample} has {largest} distinct symbols, more than max_streams={max_streams} "
            "(raise the config's max_streams to run it)"
        )
    width = max(largest, 1)
    # Streams in order of first appearance: an order that renaming preserves, so a renamed input
    # runs the very same computations (bit for bit) with the symbol columns permuted.
    order = torch.argsort(first, dim=1, stable=True)[:, :width]
    present = torch.arange(width, device=device)[None, :] < counts[:, None]
    slots = torch.where(present, order, torch.full_like(order, -1))
    present[:, 0] |= counts == 0  # a symbol-free input still runs as one stream
    return slots, present


def stream_table(
    input_ids: torch.LongTensor, attention_mask: torch.Tensor | None, config: SymbolInvConfig
) -> tuple[torch.LongTensor, torch.BoolTensor]:
    """Slots ``(B, S)`` (in order of first appearance, -1 where unused) and presence ``(B, S)`` of every
    sample's streams."""
    batch = input_ids.shape[0]
    device = input_ids.device
    if config.embedding_type != "streams":
        return (
            torch.full((batch, 1), -1, dtype=torch.long, device=device),
            torch.ones(batch, 1, dtype=torch.bool, device=device),
        )
    is_symbol = input_ids >= config.num_base_tokens
    if attention_mask is not None:
        is_symbol = is_symbol & attention_mask.bool()
    token_slots = torch.where(is_symbol, input_ids - config.num_base_tokens, -1)
    return first_appearance_streams(token_slots, config.num_symbol_slots, config.max_streams)


def make_layout(
    slots: torch.LongTensor, present: torch.BoolTensor, packed: bool, dtype: torch.dtype
) -> StreamLayout:
    batch, width = slots.shape
    sample_index = torch.arange(batch, device=slots.device).repeat_interleave(width)
    flat_present = present.reshape(-1)
    counts = present.sum(1).to(dtype)
    if packed:
        rows = flat_present.nonzero().squeeze(1)
        return StreamLayout(sample_index[rows], slots.reshape(-1)[rows], flat_present[rows], counts, batch,
                            rows, True)
    return StreamLayout(sample_index, slots.reshape(-1), flat_present, counts, batch, None,
                        bool(flat_present.all()))


def stream_symbol_mask(ids: torch.LongTensor, layout: StreamLayout, num_base: int) -> torch.BoolTensor:
    """``(N, L)``: where each stream's own symbol occurs."""
    per_stream = ids[layout.sample_index]
    slot = layout.slot[:, None]
    return (per_stream == num_base + slot) & (slot >= 0)


def aggregate_streams(
    hidden: torch.Tensor,
    symbol_mask: torch.BoolTensor,
    layout: StreamLayout,
    pooling: ComplexMultisetPooling | None = None,
) -> torch.Tensor:
    """AggregateAPS (paper Alg. 2) for every sample: a commutative pooling of its present streams
    (their mean, or the complex multiset pooling when given), with stream i's own state restored where
    symbol i occurs. ``(N, L, d) -> (B, L, d)``. Sums commute, so the result does not depend on the
    order of the streams (the invariance argument)."""
    batch = layout.num_samples
    if pooling is not None:
        pooled = pooling(hidden, layout.sample_index, batch, None if layout.all_present else layout.present)
    else:
        weighted = hidden if layout.all_present else hidden * layout.present[:, None, None].to(hidden.dtype)
        total = hidden.new_zeros(batch, *hidden.shape[1:]).index_add_(0, layout.sample_index, weighted)
        pooled = total / layout.counts[:, None, None]
    own = symbol_mask.unsqueeze(-1).to(hidden.dtype)
    restored = hidden.new_zeros(batch, *hidden.shape[1:]).index_add_(0, layout.sample_index, hidden * own)
    at_symbol = hidden.new_zeros(batch, hidden.shape[1]).index_add_(0, layout.sample_index, own.squeeze(-1))
    return torch.where(at_symbol.unsqueeze(-1) > 0, restored, pooled)


def make_stream_pooling(config: SymbolInvConfig) -> ComplexMultisetPooling | None:
    """The pooling of one aggregated attention: None for the parameter-free mean."""
    if config.stream_aggregation == "complex":
        return ComplexMultisetPooling(config.d_model, config.num_aggregation_states)
    return None


def to_padded(packed: torch.Tensor, layout: StreamLayout, width: int) -> torch.Tensor:
    """``(N, L, d)`` packed streams -> ``(B, S, L, d)``."""
    if layout.padded_rows is None:
        return packed.reshape(layout.num_samples, width, *packed.shape[1:])
    out = packed.new_zeros(layout.num_samples * width, *packed.shape[1:])
    out[layout.padded_rows] = packed
    return out.reshape(layout.num_samples, width, *packed.shape[1:])


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
            self.register_buffer(
                "random_vectors", torch.zeros(config.num_symbol_slots, config.random_embedding_dim)
            )

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

    def project(self, hidden: torch.Tensor, slots: torch.LongTensor, present: torch.BoolTensor,
                rows: torch.Tensor) -> torch.Tensor:
        """Scores over the whole vocabulary, ``(B, S, T, d) -> (B, T, vocab_size)`` (paper Alg. 5).

        Base tokens: the mean over the sample's present streams. Symbol i: stream i's score for the
        *actual* row. Symbols absent from the input, and slots the model has no row for: -inf.
        """
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
        owned = present & (slots >= 0)
        batch_idx, stream_idx = owned.nonzero(as_tuple=True)
        # Symbols of a symmetric input (|ab) score exactly alike; an answer must then not depend on
        # which slot ids the names got. Streams are in order of first appearance, so a tiny penalty
        # by that rank breaks such ties the same way under any renaming (ids would not).
        own_scores = scores[batch_idx, stream_idx, :, self.num_base] - TIE_BREAK * stream_idx[:, None]
        out[batch_idx, :, self.num_base + slots[batch_idx, stream_idx]] = own_scores
        return self._never_emitted(out)

    def _never_emitted(self, scores: torch.Tensor) -> torch.Tensor:
        # <pad> and <start> are never a target (labels use -100 for padding): keep them out of generation.
        scores[..., self.config.pad_token_id] = float("-inf")
        scores[..., self.config.decoder_start_token_id] = float("-inf")
        return scores


def tree_position_encoding(
    input_ids: torch.LongTensor, attention_mask: torch.Tensor | None, config: SymbolInvConfig
) -> torch.Tensor:
    """Tree positional encoding over the Polish-notation parse, ``(B, L, d_model)``.

    A token's vector concatenates one-hot steps from the token up to the root: [1, 0] for a left (or
    unary) child, [0, 1] for a right child; the root is all zeros, paths are cut at d_model / 2
    steps, EOS and padding get zeros.
    """
    batch, length = input_ids.shape
    max_steps = config.d_model // 2
    arities = config.token_arities
    num_base = config.num_base_tokens
    ids_rows = input_ids.tolist()
    mask_rows = attention_mask.tolist() if attention_mask is not None else None
    index: list[int] = []
    for b, row in enumerate(ids_rows):
        stack: list[list] = []  # [path, arity, children seen, position]
        done = False
        for j, token in enumerate(row):
            if (mask_rows is not None and not mask_rows[b][j]) or token in (config.eos_token_id, config.pad_token_id):
                continue
            if done:
                raise ValueError(
                    f"input {b} is not one formula in Polish notation: token {j} (id {token}) follows a "
                    "complete formula. The tree position encoding needs whole formulas; use "
                    "encoder_position_encoding='rope' for other inputs."
                )
            if stack:
                parent = stack[-1]
                path = [0 if parent[2] == 0 else 1] + parent[0]
                parent[2] += 1
                if parent[2] == parent[1]:
                    stack.pop()
            else:
                path = []
            for step, direction in enumerate(path[:max_steps]):
                index.append(((b * length + j) * max_steps + step) * 2 + direction)
            arity = arities[token] if token < num_base else 0
            if arity:
                stack.append([path, arity, 0, j])
            elif not stack:
                done = True
        if stack or not done:
            where = (f"the operator at position {stack[-1][3]} (id {row[stack[-1][3]]}) is missing "
                     f"{stack[-1][1] - stack[-1][2]} operand(s)" if stack else "it has no token")
            raise ValueError(
                f"input {b} is not a complete formula in Polish notation: {where}. The tree position "
                "encoding needs whole formulas; use encoder_position_encoding='rope' for other inputs."
            )
    flat = torch.zeros(batch * length * max_steps * 2)
    flat[torch.tensor(index, dtype=torch.long)] = 1.0
    encoding = flat.view(batch, length, max_steps * 2)
    if encoding.shape[-1] < config.d_model:
        encoding = F.pad(encoding, (0, config.d_model - encoding.shape[-1]))
    return encoding.to(input_ids.device)


def initial_automaton_angles(pairs: int, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Phases φ and transition angles θ for which the automaton encoding is the sinusoidal one:
    φ = π/2, θ_j = -10000^(-j / pairs) (multiset-automata paper, §4.1)."""
    steps = torch.arange(pairs, device=device, dtype=torch.float)
    return torch.full((pairs,), math.pi / 2, device=device), -torch.exp(-math.log(10000.0) * steps / pairs)


def automaton_encoding(positions: torch.Tensor, phases: torch.Tensor, angles: torch.Tensor, dim: int) -> torch.Tensor:
    """Forward weights of a diagonal complex unary automaton with unit-modulus weights just before each
    position, in real form: pair j is ``cos(φ_j + pθ_j), sin(φ_j + pθ_j)``. ``(T,) -> (T, dim)`` with all
    first components, then all second ones (the sinusoidal layout), zero-padded to ``dim``."""
    turned = phases[None, :] + positions.float()[:, None] * angles[None, :]
    encoding = torch.cat([turned.cos(), turned.sin()], dim=-1)
    return F.pad(encoding, (0, dim - encoding.shape[-1]))


def sinusoidal_encoding(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Classic sine/cosine position vectors ``[sin pω, cos pω]``, ``(T,) -> (T, dim)``: the automaton
    encoding at its initial angles."""
    return automaton_encoding(positions, *initial_automaton_angles(dim // 2, positions.device), dim)


def initial_rotary_frequencies(head_dim: int, theta: float, device: torch.device | None = None) -> torch.Tensor:
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float) / head_dim))


def rotary_tables(
    positions: torch.Tensor, head_dim: int, theta: float, frequencies: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables of RoPE, ``(T, head_dim)`` each; ``frequencies`` overrides the fixed ones."""
    if frequencies is None:
        frequencies = initial_rotary_frequencies(head_dim, theta, positions.device)
    angles = positions.float()[:, None] * frequencies[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


class LearnedPositionAngles(nn.Module):
    """The learnable angles of a position encoding, initialised to the fixed encoding's values.

    ``automaton_learned``: phases φ and transition angles θ of the automaton encoding (the paper's
    "diagonal polar, learned angles"). ``rope_learned``: RoPE's frequencies.
    """

    def __init__(self, kind: str, d_model: int, num_heads: int, rope_theta: float) -> None:
        super().__init__()
        self.kind = kind
        self.d_model = d_model
        self.rope_theta = rope_theta
        self.head_dim = d_model // num_heads
        if kind == "automaton_learned":
            self.phases = nn.Parameter(torch.empty(d_model // 2))
            self.angles = nn.Parameter(torch.empty(d_model // 2))
        elif kind == "rope_learned":
            self.angles = nn.Parameter(torch.empty(self.head_dim // 2))
        else:
            raise ValueError(f"no learned angles for the position encoding {kind!r}")

    def reset_parameters(self) -> None:
        with torch.no_grad():
            if self.kind == "automaton_learned":
                phases, angles = initial_automaton_angles(self.d_model // 2, self.angles.device)
                init.copy_(self.phases, phases)
                init.copy_(self.angles, angles)
            else:
                init.copy_(self.angles, initial_rotary_frequencies(self.head_dim, self.rope_theta, self.angles.device))


def make_position_angles(kind: str, config: SymbolInvConfig, num_heads: int) -> LearnedPositionAngles | None:
    if kind.endswith("_learned"):
        return LearnedPositionAngles(kind, config.d_model, num_heads, config.rope_theta)
    return None


def additive_position_encoding(
    kind: str, positions: torch.Tensor, dim: int, learned: LearnedPositionAngles | None
) -> torch.Tensor | None:
    """The vectors added to the embeddings for ``sinusoidal`` / ``automaton*`` encodings, else None."""
    if kind in ("sinusoidal", "automaton"):
        return sinusoidal_encoding(positions, dim)
    if kind == "automaton_learned":
        return automaton_encoding(positions, learned.phases, learned.angles, dim)
    return None


def rotary_position_tables(
    kind: str, positions: torch.Tensor, head_dim: int, theta: float, learned: LearnedPositionAngles | None
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """RoPE tables for ``rope`` / ``rope_learned`` encodings, else None."""
    if kind == "rope":
        return rotary_tables(positions, head_dim, theta)
    if kind == "rope_learned":
        return rotary_tables(positions, head_dim, theta, learned.angles)
    return None


def apply_rotary(x: torch.Tensor, tables: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """RoPE on ``(..., T, head_dim)``."""
    if tables is None:
        return x
    cos, sin = tables
    first, second = x.chunk(2, dim=-1)
    return x * cos.to(x.dtype) + torch.cat([-second, first], dim=-1) * sin.to(x.dtype)


# ---------------------------------------------------------------------------------------------------
# Attention and layers
# ---------------------------------------------------------------------------------------------------
class SymbolInvAttention(nn.Module):
    """Multi-head attention with biased projections (the reference layout), run with SDPA.

    Queries come from the streams ``(N, Tq, d)``. Keys and values come from the streams themselves
    (self), from ``kv_states`` aligned with the streams (per-stream cross), or from per-sample states
    ``(B, Tk, d)`` gathered to the streams by ``layout.sample_index`` (aggregated modes): projecting
    before gathering computes each sample's keys once, not once per stream.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
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
    ) -> torch.Tensor:
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
        use_causal = causal and mask is None and q_len == key.shape[-2] and q_len > 1
        attended = F.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
            is_causal=use_causal,
        )
        return self.out_proj(attended.transpose(1, 2).reshape(streams, q_len, d_model))


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
        self.attention = SymbolInvAttention(config.d_model, num_heads, config.attention_dropout)
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout
        # How an aggregated attention pools the streams into its keys and values.
        self.pooling = make_stream_pooling(config) if aggregated else None

    def forward(self, hidden: torch.Tensor, layout: StreamLayout, **attention_kwargs) -> torch.Tensor:
        attended = self.attention(hidden, layout, **attention_kwargs)
        return self.layer_norm(hidden + F.dropout(attended, p=self.dropout, training=self.training))


@dataclass
class _EncoderContext:
    layout: StreamLayout
    symbol_mask: torch.BoolTensor  # (N, L) own-symbol positions
    key_mask: torch.Tensor | None  # (N, 1, 1, L) boolean, None when nothing is padded
    rotary: tuple[torch.Tensor, torch.Tensor] | None


class SymbolInvEncoderLayer(nn.Module):
    def __init__(self, config: SymbolInvConfig) -> None:
        super().__init__()
        heads = config.encoder_attention_heads
        self.self_attn = SymbolInvSublayer(config, heads) if config.uses("EP") else None
        self.aggregated_attn = SymbolInvSublayer(config, heads, aggregated=True) if config.uses("EA") else None
        self.feed_forward = SymbolInvFeedForward(config.d_model, config.encoder_ffn_dim, config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(self, hidden: torch.Tensor, ctx: _EncoderContext) -> torch.Tensor:
        rope = dict(q_rotary=ctx.rotary, k_rotary=ctx.rotary)
        if self.self_attn is not None:
            hidden = self.self_attn(hidden, ctx.layout, mask=ctx.key_mask, **rope)
        if self.aggregated_attn is not None:
            view = aggregate_streams(hidden, ctx.symbol_mask, ctx.layout, self.aggregated_attn.pooling)
            hidden = self.aggregated_attn(hidden, ctx.layout, kv_states=view, per_sample_kv=True,
                                          mask=ctx.key_mask, **rope)
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
    mean_encoder_view: torch.Tensor | None = None  # computed by the first CA layer that needs it

    def aggregated_encoder(self, pooling: ComplexMultisetPooling | None) -> torch.Tensor:
        """The aggregated encoder output ``(B, Le, d)`` for a CA layer: the parameter-free mean is the
        same for every layer and computed once; a complex pooling is the layer's own."""
        if pooling is not None:
            return aggregate_streams(self.encoder_states, self.encoder_symbol_mask, self.layout, pooling)
        if self.mean_encoder_view is None:
            self.mean_encoder_view = aggregate_streams(self.encoder_states, self.encoder_symbol_mask, self.layout)
        return self.mean_encoder_view


class SymbolInvDecoderLayer(nn.Module):
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
        rope = dict(q_rotary=ctx.rotary, k_rotary=ctx.rotary)
        if self.self_attn is not None:
            hidden = self.self_attn(hidden, ctx.layout, mask=ctx.self_mask, causal=True, cache=self_cache,
                                    cache_index=base_slot, **rope)
        if self.aggregated_attn is not None:
            # The view at a position depends only on that position's stream states, so cached keys
            # of earlier positions stay valid while generating.
            view = aggregate_streams(hidden, ctx.symbol_mask, ctx.layout, self.aggregated_attn.pooling)
            hidden = self.aggregated_attn(hidden, ctx.layout, kv_states=view, per_sample_kv=True,
                                          mask=ctx.self_mask, causal=True, cache=self_cache,
                                          cache_index=base_slot + 1, **rope)
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
                hidden, ctx.layout,
                kv_states=kv_states,
                per_sample_kv=not per_stream, mask=ctx.cross_mask,
                q_rotary=ctx.rotary, k_rotary=ctx.encoder_rotary,
                cache=cross_cache, cache_index=index, cache_ready=ready,
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


@dataclass
class SymbolInvSeq2SeqOutput(ModelOutput):
    """Decoder streams ``(B, S, T, d)`` plus the encoder output they were computed from."""

    last_hidden_state: torch.FloatTensor | None = None
    stream_slots: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None
    past_key_values: Cache | None = None
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class SymbolInvSeq2SeqLMOutput(ModelOutput):
    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    past_key_values: Cache | None = None
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    stream_slots: torch.LongTensor | None = None
    stream_mask: torch.BoolTensor | None = None


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------
class SymbolInvPreTrainedModel(PreTrainedModel):
    config_class = SymbolInvConfig
    config: SymbolInvConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False
    _supports_sdpa = True
    _no_split_modules = ["SymbolInvEncoderLayer", "SymbolInvDecoderLayer"]
    _skip_keys_device_placement = ["past_key_values"]

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


def _check_ids(ids: torch.LongTensor, config: SymbolInvConfig, name: str, allow_ignore: bool = False) -> None:
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, length), got {tuple(ids.shape)}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)}): give at least one token per input")
    low = -100 if allow_ignore else 0
    bad = ((ids < 0) & (ids != low)) | (ids >= config.vocab_size)
    if bad.any():
        sample, position = (int(v) for v in bad.nonzero()[0])
        raise ValueError(
            f"{name}[{sample}, {position}] = {int(ids[sample, position])} is outside the vocabulary "
            f"(0..{config.vocab_size - 1}: {config.num_base_tokens} base tokens, "
            f"{config.num_symbol_slots} symbol slots)"
        )
    if config.embedding_type in ("fixed", "alpha_renaming"):
        limit = config.num_base_tokens + config.num_symbol_embeddings
        over = ids >= limit
        if over.any():
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
        # The embedding is owned by SymbolInvModel; keep a reference outside the module tree so the
        # weight is stored once.
        self.__dict__["_embedding"] = embedding
        self.position_angles = make_position_angles(config.encoder_position_encoding, config,
                                                    config.encoder_attention_heads)
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
        **kwargs,
    ) -> SymbolInvEncoderOutput:
        config = self.config
        if input_ids is None:
            raise ValueError("SymbolInvEncoder needs input_ids (inputs_embeds are not supported: the streams "
                             "are built from the token ids)")
        _check_ids(input_ids, config, "input_ids")
        if symbol_mask is not None:
            expected = input_ids >= config.num_base_tokens
            if symbol_mask.shape != input_ids.shape or bool((symbol_mask.bool() != expected).any()):
                raise ValueError("symbol_mask does not match input_ids: it must be 1 exactly where the id is a "
                                 f"symbol (id >= {config.num_base_tokens}); was it padded differently?")
        embedding = self.__dict__["_embedding"]
        rows = embedding.rows() if embedding_rows is None else embedding_rows
        slots, present = stream_table(input_ids, attention_mask, config)
        layout = make_layout(slots, present, packed=True, dtype=rows.dtype)
        hidden = embedding(input_ids, layout, rows)
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device)
        kind = config.encoder_position_encoding
        if kind == "tree":
            hidden = hidden + tree_position_encoding(input_ids, attention_mask, config).to(hidden.dtype)[
                layout.sample_index]
        added = additive_position_encoding(kind, positions, config.d_model, self.position_angles)
        if added is not None:
            hidden = hidden + added.to(hidden.dtype)
        rotary = rotary_position_tables(kind, positions, config.d_model // config.encoder_attention_heads,
                                        config.rope_theta, self.position_angles)
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)
        key_mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            key_mask = attention_mask.bool()[layout.sample_index][:, None, None, :]
        ctx = _EncoderContext(layout, stream_symbol_mask(input_ids, layout, config.num_base_tokens), key_mask, rotary)
        width = slots.shape[1]
        all_hidden = [] if output_hidden_states else None
        for layer in self.layers:
            if all_hidden is not None:
                all_hidden.append(to_padded(hidden, layout, width))
            hidden = layer(hidden, ctx)
        if all_hidden is not None:
            all_hidden.append(to_padded(hidden, layout, width))
        return SymbolInvEncoderOutput(
            last_hidden_state=to_padded(hidden, layout, width),
            stream_slots=slots,
            stream_mask=present,
            input_ids=input_ids,
            hidden_states=tuple(all_hidden) if all_hidden is not None else None,
        )


class SymbolInvDecoder(SymbolInvPreTrainedModel):
    def __init__(self, config: SymbolInvConfig, embedding: SymbolInvEmbedding | None = None) -> None:
        super().__init__(config)
        self.__dict__["_embedding"] = embedding
        self.position_angles = make_position_angles(config.decoder_position_encoding, config,
                                                    config.decoder_attention_heads)
        self.layers = nn.ModuleList(SymbolInvDecoderLayer(config, i) for i in range(config.decoder_layers))
        self.post_init()

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: SymbolInvEncoderOutput,
        attention_mask: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        past_key_values: EncoderDecoderCache | None = None,
        output_hidden_states: bool | None = None,
        embedding_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Returns the decoder streams ``(B, S, T, d)`` (padded layout) and optional hidden states."""
        config = self.config
        _check_ids(decoder_input_ids, config, "decoder_input_ids")
        embedding = self.__dict__["_embedding"]
        rows = embedding.rows() if embedding_rows is None else embedding_rows
        slots, present = encoder_outputs.stream_slots, encoder_outputs.stream_mask
        batch, width = slots.shape
        if decoder_input_ids.shape[0] != batch:
            raise ValueError(f"decoder_input_ids has batch size {decoder_input_ids.shape[0]} but the encoder "
                             f"output has {batch}")
        cache = past_key_values
        if cache is not None and not isinstance(cache, EncoderDecoderCache):
            raise TypeError(f"past_key_values must be an EncoderDecoderCache, got {type(cache).__name__}")
        # With a cache the padded layout keeps streams aligned with the cache's batch-major tensors.
        layout = make_layout(slots, present, packed=cache is None, dtype=rows.dtype)
        encoder_states = encoder_outputs.last_hidden_state.reshape(batch * width,
                                                                   *encoder_outputs.last_hidden_state.shape[2:])
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
        encoder_rotary = rotary_position_tables(kind, torch.arange(encoder_states.shape[1], device=hidden.device),
                                                head_dim, config.rope_theta, self.position_angles)
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)

        self_mask = None
        if past and steps > 1:  # several new tokens on top of a cache: causal mask with an offset
            keys = torch.arange(past + steps, device=hidden.device)
            self_mask = (keys[None, :] <= positions[:, None])[None, None]
        if decoder_attention_mask is not None and not bool(decoder_attention_mask.all()):
            allowed = decoder_attention_mask.bool()[layout.sample_index][:, None, None, :]
            keys = torch.arange(allowed.shape[-1], device=hidden.device)
            causal = keys[None, :] <= (keys[-steps:] if allowed.shape[-1] >= steps else keys)[:, None]
            own = keys[None, :] == keys[-steps:][:, None]  # a query always sees itself: no empty rows
            self_mask = (allowed & causal) | own
        cross_mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            cross_mask = attention_mask.bool()[layout.sample_index][:, None, None, :]
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
        )
        all_hidden = [] if output_hidden_states else None
        for layer in self.layers:
            if all_hidden is not None:
                all_hidden.append(to_padded(hidden, layout, width))
            hidden = layer(hidden, ctx)
        if all_hidden is not None:
            all_hidden.append(to_padded(hidden, layout, width))
        return to_padded(hidden, layout, width), tuple(all_hidden) if all_hidden is not None else None


def _as_encoder_output(encoder_outputs) -> SymbolInvEncoderOutput:
    if isinstance(encoder_outputs, SymbolInvEncoderOutput):
        return encoder_outputs
    if isinstance(encoder_outputs, (tuple, list)) and len(encoder_outputs) >= 4:
        return SymbolInvEncoderOutput(*encoder_outputs[:4])
    if isinstance(encoder_outputs, dict) and "stream_slots" in encoder_outputs:
        return SymbolInvEncoderOutput(**encoder_outputs)
    raise ValueError("encoder_outputs must come from SymbolInvEncoder (it carries the stream layout: "
                     "last_hidden_state, stream_slots, stream_mask, input_ids)")


class SymbolInvModel(SymbolInvPreTrainedModel):
    """Encoder-decoder returning the decoder's per-stream states (no projection)."""

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
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        embedding_rows: torch.Tensor | None = None,
        **kwargs,
    ) -> SymbolInvSeq2SeqOutput:
        if kwargs.get("output_attentions"):
            raise ValueError("output_attentions is not supported: attention runs through scaled_dot_product_"
                             "attention, which does not return weights")
        if kwargs.get("inputs_embeds") is not None or kwargs.get("decoder_inputs_embeds") is not None:
            raise ValueError("inputs_embeds are not supported: the streams are built from token ids")
        rows = self.shared.rows() if embedding_rows is None else embedding_rows
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                           symbol_mask=symbol_mask, output_hidden_states=output_hidden_states,
                                           embedding_rows=rows)
        else:
            encoder_outputs = _as_encoder_output(encoder_outputs)
        if decoder_input_ids is None:
            raise ValueError("decoder_input_ids (or labels, from which they are built) are required")
        use_cache = use_cache if use_cache is not None else (self.config.use_cache and not self.training)
        if use_cache and past_key_values is None:
            past_key_values = EncoderDecoderCache(DynamicCache(), DynamicCache())
        if not use_cache:
            past_key_values = None
        decoder_states, decoder_hidden = self.decoder(
            decoder_input_ids, encoder_outputs, attention_mask=attention_mask,
            decoder_attention_mask=decoder_attention_mask, past_key_values=past_key_values,
            output_hidden_states=output_hidden_states, embedding_rows=rows,
        )
        return SymbolInvSeq2SeqOutput(
            last_hidden_state=decoder_states,
            stream_slots=encoder_outputs.stream_slots,
            stream_mask=encoder_outputs.stream_mask,
            past_key_values=past_key_values,
            decoder_hidden_states=decoder_hidden,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
        )


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
        past_key_values: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> SymbolInvSeq2SeqLMOutput:
        config = self.config
        if labels is not None:
            _check_ids(labels, config, "labels", allow_ignore=True)
            # <pad> is never a target; a tokenizer padding labels with it (rather than -100) means "ignore".
            labels = labels.masked_fill(labels == config.pad_token_id, -100)
            if decoder_input_ids is None:
                decoder_input_ids = shift_tokens_right(labels, config.pad_token_id, config.decoder_start_token_id)
            use_cache = False if use_cache is None else use_cache
        rows = self.model.shared.rows()
        outputs = self.model(
            input_ids=input_ids, attention_mask=attention_mask, symbol_mask=symbol_mask,
            decoder_input_ids=decoder_input_ids, decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs, past_key_values=past_key_values, use_cache=use_cache,
            output_hidden_states=output_hidden_states, embedding_rows=rows, **kwargs,
        )
        scores = self.model.shared.project(outputs.last_hidden_state, outputs.stream_slots, outputs.stream_mask,
                                           rows)
        loss = None
        if labels is not None:
            if config.feature_normalization and config.loss_type == "adacos" and self.training:
                self._update_adacos_scale(scores, labels)
            logits = self._scale(scores)
            loss = self._loss(logits, labels, num_items_in_batch)
        else:
            logits = self._scale(scores)
        return SymbolInvSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            past_key_values=outputs.past_key_values,
            decoder_hidden_states=outputs.decoder_hidden_states,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            stream_slots=outputs.stream_slots,
            stream_mask=outputs.stream_mask,
        )

    def _scale(self, scores: torch.Tensor) -> torch.Tensor:
        if not self.config.feature_normalization:
            return scores
        scale = self.logit_scale if self.config.loss_type == "adacos" else self.initial_logit_scale()
        return scores * scale

    @torch.no_grad()
    def _update_adacos_scale(self, cosines: torch.Tensor, labels: torch.LongTensor) -> None:
        """AdaCos: s <- ln(B_avg) / cos(min(π/4, θ_med)) over the batch's non-padding targets."""
        valid = labels != -100
        if not bool(valid.any()):
            return
        cos = cosines[valid].float()  # (M, V), -inf for classes the input cannot produce
        target = labels[valid]
        target_cos = cos.gather(1, target[:, None]).squeeze(1)
        others = torch.exp(self.logit_scale.float() * cos)
        others = others.scatter(1, target[:, None], 0.0)
        b_avg = others.sum(1).mean()
        theta_med = torch.median(torch.arccos(target_cos.clamp(-1 + 1e-7, 1 - 1e-7)))
        new_scale = torch.log(b_avg) / torch.cos(torch.clamp(theta_med, max=math.pi / 4))
        # With few classes B_avg can fall below e (even below 1: a negative scale), and the scale
        # collapses while accuracy is perfect; never go below the fixed AdaCos scale s0.
        floor = min(self.initial_logit_scale(), self.config.adacos_max_scale)
        self.logit_scale.copy_(new_scale.clamp(floor, self.config.adacos_max_scale).to(self.logit_scale.dtype))

    def _loss(self, logits: torch.Tensor, labels: torch.LongTensor,
              num_items_in_batch: int | torch.Tensor | None) -> torch.Tensor:
        valid = labels != -100
        target_logits = logits.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        impossible = valid & torch.isinf(target_logits)
        if bool(impossible.any()):
            sample, position = (int(v) for v in impossible.nonzero()[0])
            value = int(labels[sample, position])
            what = ("a symbol that does not occur in the input: the model can only emit symbols of its input"
                    if value >= self.config.num_base_tokens else "a token the model never emits (<start>)")
            raise ValueError(f"labels[{sample}, {position}] = {value} is {what}")
        reduction = "mean" if num_items_in_batch is None else "sum"
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100, reduction=reduction)
        if num_items_in_batch is not None:
            loss = loss / num_items_in_batch
        return loss

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
