"""FOLNet, the First-Order Logic Network: neural logic operators forward-chained over layers.

Atoms. Every token x has unary atoms u(x) of size D1 = H * S (logits of D1 properties) and every pair
(x, y) binary atoms u(x, y) of size D2 (logits of D2 relations). Binary atoms are kept channels-last,
``(batch, x, y, D2)``; the operators of ``operators.py`` take them channels-first.

One layer = one step of forward chaining. Each operator of ``config.operators`` computes its kernel and
its premise as linear projections of the previous layer's atoms and deduces new atoms (Table 2):

* unary-output ops (join, mu, cjoin) give ``(batch, x, H, S)`` each; they are concatenated and projected
  to D1: ``u(x) <- LN(u(x) + W_U [join; mu; cjoin])``;
* binary-output ops (assoc, prod, trans) give ``(batch, H, x, y)`` each, H channels per op; they are
  concatenated and projected to D2: ``u(x, y) <- LN(u(x, y) + W_B [assoc; prod; trans])``;
* ``bool`` is cascaded after them, as a transformer's feed-forward (Appendix A.3): a GeLU MLP of
  width ffn_dim on the unary atoms and one of width binary_ffn_dim on the binary atoms, each with
  residual and layer norm.

Choices where the paper is silent:

* join's kernel. The paper writes the transformer as join after assoc (Fig. 3): assoc deduces the
  attention scores q(x).k(a)/sqrt(S), join attends with them. Here join's kernel logits are
  ``K_h(x, a) = assoc_h(x, a) + W_h u(x, a)``: the same layer's assoc deduction (sharing assoc's kernel
  and premise projections, the query and key) plus the linear projection of the binary atoms the paper
  prescribes. join therefore runs through the transformers attention interface (eager, sdpa) with the
  binary term as an additive attention bias. Without assoc the kernel is the binary term alone.
  With ``operators=["join", "assoc"]``, a zero binary term and no ``bool``, a layer's unary branch is
  exactly post-LN multi-head self-attention: q/k/v/out of the attention map to ``assoc_kernel``,
  ``assoc_premise``, ``join_premise`` and ``unary_output``.
* sigma(z) = ln(1 + 2e^z) (Modus Ponens in logit space, eq. 9) is applied to the deduced atoms of
  ``config.activated_operators`` (default cjoin, mu, prod, trans); join and assoc stay linear, as
  attention is.
* Every binary-output op has H output channels; prod's kernel has W = D2 (its premise is a D2 -> D2
  projection of the binary atoms); mu's premise has S channels, so its output is ``(x, H, S)``.
* Base atoms: token embedding (+ token type, the paper's SeqID) for u0(x); for u0(x, y) the embedding
  of the paper's clipped distance dist_Delta (Appendix A.4: [CLS] row/column and cross-segment ids) in
  the encoder, and of clip(y - x, -Delta, Delta) in the decoder, whose relations to the input tokens
  get one more id. Each base atom goes through layer norm and dropout, as BERT's embeddings do.
* The decoder (Appendix A.5) has binary atoms u(x, y) for x a target token and y an input or a target
  token. Its masks are Table 5's: join's and mu's kernels, mu's, cjoin's and prod's premises, trans'
  kernel and premise. Its binary atoms are zeroed above the diagonal after each layer (the causal
  pattern of Fig. 4). join/assoc premises and cjoin's kernel are [projected encoder atoms; decoder
  atoms]; trans uses the encoder's last binary atoms as v^E (A.5's equation).
* The renaming-invariant relational variant (``config.symbol_invariant``; no paper has it). Every symbol
  (an id from ``num_base_tokens`` on) has one shared unary base atom, the embedding row after the base
  tokens'; its identity enters only through the binary base atom same_symbol(x, y) (not both symbols /
  different symbols / the same symbol), in the encoder and in the decoder (to the input tokens and to
  earlier targets). With ``token_arities`` the parse-tree relation of x and y (self, parent, child,
  sibling, ancestor, descendant) joins the binary base atoms. The decoder chooses a symbol by pointing:
  its score for input position i is a linear read-out of the decoder's last binary atom u(x, i) plus a
  bilinear form of the unary atoms, and a slot's logit is the logsumexp over the input positions holding
  that symbol (-inf for slots absent from the input); base tokens come from the tied language-model
  head. Renaming the symbols therefore changes no atom and permutes the slot logits: invariant by
  construction, with no weight per symbol, at O(L^2) per sample.
* The key/value cache (an ``EncoderDecoderCache``) holds, per decoder layer, the past positions'
  column projections (assoc's key, join's value, cjoin's kernel, trans' premise rows) and the
  encoder's projections; trans' premise rows over the target grow in both dimensions, so their lower
  triangle is stored flat (row-major), which concatenation along the sequence dimension extends.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, EncoderDecoderCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    MaskedLMOutput,
    ModelOutput,
    Seq2SeqLMOutput,
    SequenceClassifierOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from .cache_names import CACHE_NAMES, cache_keyword, given_cache
from .configuration_folnet import FOLNetConfig
from .loading import StrictLoadingMixin
from .operators import (
    BINARY_OUTPUT,
    UNARY_OUTPUT,
    folnet_activation,
    op_assoc,
    op_cjoin,
    op_join,
    op_mu,
    op_prod,
    op_trans,
)

#: Cache entries per decoder layer (see ``FOLNetLayer._columns``).
CACHE_SLOTS_PER_LAYER = 3


# Copied from hf_symbolinv.models.symbolinv.streams.is_compiling
def is_compiling() -> bool:
    """Whether ``torch.compile`` is tracing this call (its graph then needs shapes that do not depend on data)."""
    return torch.compiler.is_compiling()


# Copied from hf_symbolinv.models.symbolinv.streams.refused
def refused(bad: torch.Tensor, compiled_message: str) -> bool:
    """Whether any element of ``bad`` is set, so that the caller raises its detailed error (which reads the
    position from the data). Inside a compiled graph the check is an assertion the graph keeps, raising
    ``compiled_message`` without the position, and this returns False."""
    if is_compiling():
        torch._assert_async(~bad.any(), compiled_message)
        return False
    return bool(bad.any())


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention written out. ``attention_mask`` is additive (the join kernel's binary term, very
    negative where masked). Returns the output ``(batch, q, H, S)`` and the weights."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-2, -1)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1)
    weights = F.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def relative_distance_ids(token_type_ids: torch.LongTensor, delta: int) -> torch.LongTensor:
    """The paper's dist_Delta (Appendix A.4) shifted to ``[0, 2 Delta + 1]``: ``(batch, T, T)`` ids.

    Same segment: clip(tau - t, 1 - Delta, Delta - 1); different segments: Delta + 1; from the first token
    ([CLS]) to others: Delta; from others to it: -Delta; itself: 0."""
    length = token_type_ids.shape[1]
    pos = torch.arange(length, device=token_type_ids.device)
    dist = (pos[None, :] - pos[:, None]).clamp(1 - delta, delta - 1)
    dist = dist[None].expand(token_type_ids.shape[0], length, length).clone()
    other_segment = token_type_ids[:, :, None] != token_type_ids[:, None, :]
    dist = dist.masked_fill(other_segment, delta + 1)
    dist[:, 0, :] = delta
    dist[:, :, 0] = -delta
    dist[:, 0, 0] = 0
    return dist + delta


#: Ids of the binary base atom same_symbol(x, y).
NOT_BOTH_SYMBOLS, OTHER_SYMBOL, SAME_SYMBOL = 0, 1, 2
#: Ids of the binary base atom tree_relation(x, y): what y is to x in the parse tree.
TREE_RELATIONS = ("unrelated", "self", "parent", "child", "sibling", "ancestor", "descendant")


def symbol_slots(ids: torch.LongTensor, num_base_tokens: int) -> torch.LongTensor:
    """The symbol slot of each token, -1 for base tokens."""
    return torch.where(ids >= num_base_tokens, ids - num_base_tokens, -1)


def same_symbol_ids(row_slots: torch.LongTensor, column_slots: torch.LongTensor) -> torch.LongTensor:
    """``(batch, rows, columns)`` ids of same_symbol(x, y) from each side's symbol slots (-1: a base token)."""
    rows, columns = row_slots[:, :, None], column_slots[:, None, :]
    both = (rows >= 0) & (columns >= 0)
    same = torch.where(rows == columns, SAME_SYMBOL, OTHER_SYMBOL)
    return torch.where(both, same, NOT_BOTH_SYMBOLS)


def tree_relation_ids(
    input_ids: torch.LongTensor, attention_mask: torch.Tensor | None, config: FOLNetConfig
) -> torch.LongTensor:
    """``(batch, T, T)`` ids of :data:`TREE_RELATIONS` over the Polish-notation parse of each input (one whole
    formula; <eos>, <pad> and masked tokens are unrelated to everything)."""
    nb = config.num_base_tokens
    arities = torch.tensor(config.token_arities, dtype=torch.long, device=input_ids.device)
    arity = torch.where(input_ids < nb, arities[input_ids.clamp(max=nb - 1)], 0)
    valid = input_ids != config.pad_token_id
    if config.eos_token_id is not None:
        valid = valid & (input_ids != config.eos_token_id)
    if attention_mask is not None:
        valid = valid & attention_mask.bool()
    contains = polish_subtrees(input_ids, valid, arity)  # [b, i, j]: j in the subtree of i
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    itself = positions[:, None] == positions[None, :]
    strict = contains & ~itself
    # A token's parent is its deepest strict ancestor: the one that starts last.
    parent = torch.where(strict, positions[None, :, None], -1).amax(dim=1)  # (B, T), -1 for the root
    is_parent = positions[None, None, :] == parent[:, :, None]  # [b, x, y]: y is x's parent
    is_child = is_parent.transpose(1, 2)
    sibling = (parent[:, :, None] == parent[:, None, :]) & (parent[:, :, None] >= 0) & ~itself
    ancestor = strict.transpose(1, 2)  # [b, x, y]: y contains x
    ids = torch.zeros_like(contains, dtype=torch.long)
    ids = ids.masked_fill(strict, TREE_RELATIONS.index("descendant"))
    ids = ids.masked_fill(ancestor, TREE_RELATIONS.index("ancestor"))
    ids = ids.masked_fill(sibling & valid[:, :, None] & valid[:, None, :], TREE_RELATIONS.index("sibling"))
    ids = ids.masked_fill(is_child & strict, TREE_RELATIONS.index("child"))
    ids = ids.masked_fill(is_parent & ancestor, TREE_RELATIONS.index("parent"))
    return ids.masked_fill(itself & valid[:, :, None], TREE_RELATIONS.index("self"))


# Copied from hf_symbolinv.models.symbolinv.positions.polish_subtrees
def polish_subtrees(input_ids: torch.LongTensor, valid: torch.BoolTensor, arity: torch.LongTensor) -> torch.BoolTensor:
    """``contains[b, i, j]``: token j lies in the subtree of token i (i itself included), ``(B, L, L)``, for
    inputs that are each one formula in Polish notation over the ``valid`` tokens (else ``ValueError``).

    The subtree of token i ends at the first token k >= i where the count of open operand slots falls below
    its value before i."""
    length = input_ids.shape[1]
    # Open operand slots after each token (before the first token: one, the root).
    open_after = 1 + torch.cumsum(torch.where(valid, arity - 1, 0), dim=1)
    open_before = open_after - torch.where(valid, arity - 1, 0)
    _check_complete_formulas(input_ids, valid, arity, open_before, open_after)
    positions = torch.arange(length, device=input_ids.device)
    # ends_by[b, i, k]: the subtree of token i is complete after token k (k >= i).
    ends_by = (positions[None, None, :] >= positions[None, :, None]) & (
        open_after[:, None, :] < open_before[:, :, None]
    )
    ends_by = ends_by & valid[:, None, :]
    subtree_end = torch.where(ends_by, positions[None, None, :], length).amin(dim=2)  # (B, L)
    return (
        (positions[None, None, :] >= positions[None, :, None])
        & (positions[None, None, :] <= subtree_end[:, :, None])
        & valid[:, :, None]
        & valid[:, None, :]
    )


# Copied from hf_symbolinv.models.symbolinv.positions._check_complete_formulas
def _check_complete_formulas(
    input_ids: torch.LongTensor,
    valid: torch.BoolTensor,
    arity: torch.LongTensor,
    open_before: torch.LongTensor,
    open_after: torch.LongTensor,
) -> None:
    """Every sample must be exactly one formula in Polish notation: no token after the formula ends,
    no operator short of operands. One reduction decides; only a bad batch looks further, for the message."""
    follows = valid & (open_before <= 0)
    incomplete = valid.any(1) & (open_after.gather(1, _last_valid(valid)[:, None]).squeeze(1) > 0)
    empty = ~valid.any(1)
    if not refused(follows.any(1) | incomplete | empty, "an input is not one formula in Polish notation"):
        return
    # Both families' tree encodings read the parse (another family's folder holds a copy): the hint names no field.
    hint = "Tree encodings need whole formulas: configure the model without them for other inputs."
    for b in range(input_ids.shape[0]):
        if bool(follows[b].any()):
            j = int(follows[b].nonzero()[0])
            raise ValueError(
                f"input {b} is not one formula in Polish notation: token {j} (id {int(input_ids[b, j])}) follows "
                f"a complete formula. {hint}"
            )
        if bool(empty[b]):
            raise ValueError(f"input {b} is not a complete formula in Polish notation: it has no token. {hint}")
        if bool(incomplete[b]):
            # The innermost unfinished operator: the last one whose operands do not all follow it.
            row_valid, row_arity = valid[b], arity[b]
            positions = row_valid.nonzero().squeeze(1).tolist()
            open_slots = open_after[b]
            for p in reversed(positions):
                if row_arity[p] == 0:
                    continue
                later = [k for k in positions if k > p]
                closed = any(int(open_slots[k]) < int(open_before[b, p]) for k in later)
                if not closed:
                    # Its descendants are complete, so the slots still open at the end are its own.
                    missing = int(open_slots[positions[-1]]) - int(open_before[b, p]) + 1
                    raise ValueError(
                        f"input {b} is not a complete formula in Polish notation: the operator at position {p} "
                        f"(id {int(input_ids[b, p])}) is missing {missing} operand(s). {hint}"
                    )


# Copied from hf_symbolinv.models.symbolinv.positions._last_valid
def _last_valid(valid: torch.BoolTensor) -> torch.LongTensor:
    positions = torch.arange(valid.shape[1], device=valid.device)
    return torch.where(valid, positions, 0).amax(dim=1)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(batch, len, H * S) -> (batch, H, len, S)."""
    return x.view(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)


def _channels_first(x: torch.Tensor) -> torch.Tensor:
    """(batch, x, y, C) -> (batch, C, x, y)."""
    return x.permute(0, 3, 1, 2)


class FOLNetFeedForward(nn.Module):
    """The Boolean operator as cascaded in the paper (A.3): ``LN(u + W2 act(W1 u))``."""

    def __init__(self, config: FOLNetConfig, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.act = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.dropout(self.fc2(self.act(self.fc1(x))), p=self.dropout, training=self.training)
        return self.norm(x + out)


@dataclass
class _LayerContext:
    """What every layer of one stack needs besides its atoms."""

    mask: torch.Tensor | None  # (batch, x, a) True where x may use a; None: everything (no padding)
    premise_mask: torch.Tensor | None = None  # (batch, a, y) for trans in the decoder
    encoder_unary: torch.Tensor | None = None  # (batch, I, D1), decoder only
    encoder_binary: torch.Tensor | None = None  # (batch, I, I, D2), decoder only
    cache: EncoderDecoderCache | None = None
    past: int = 0  # target positions already in the cache


class FOLNetLayer(GradientCheckpointingLayer):
    """One forward-chaining step. ``cross=True``: a decoder layer (Appendix A.5), whose columns a are
    the input tokens followed by the target tokens."""

    def __init__(self, config: FOLNetConfig, layer_index: int = 0, cross: bool = False) -> None:
        super().__init__()
        self.config = config
        self.layer_index = layer_index
        self.cross = cross
        ops = set(config.operators)
        self.ops = ops
        d1, d2, heads, size = config.unary_dim, config.binary_dim, config.num_heads, config.head_dim
        self.num_heads, self.head_dim = heads, size
        self.scaling = size**-0.5
        self.is_causal = False  # masks are passed explicitly
        self.attention_dropout = config.dropout

        def linear(n_in: int, n_out: int, bias: bool = True) -> nn.Linear:
            return nn.Linear(n_in, n_out, bias=bias)

        if "assoc" in ops:  # B <- U x U: kernel K_hw(x), premise v_hw(y) (attention's query and key)
            self.assoc_kernel = linear(d1, d1)
            self.assoc_premise = linear(d1, d1)
        if "join" in ops:  # U <- B x U: kernel K_h(x, a) (+ assoc), premise v_hs(a) (attention's value)
            self.join_kernel = linear(d2, heads)
            self.join_premise = linear(d1, d1)
        if "mu" in ops:  # U <- B x B: kernel K_h(x, a), premise v_s(x, a)
            self.mu_kernel = linear(d2, heads)
            self.mu_premise = linear(d2, size)
        if "cjoin" in ops:  # U <- U x B: kernel K_hs(a), premise v_h(x, a)
            self.cjoin_kernel = linear(d1, d1)
            self.cjoin_premise = linear(d2, heads)
        if "prod" in ops:  # B <- U x B: kernel K_hw(x), premise v_w(x, y)
            self.prod_kernel = linear(d1, heads * d2)
            self.prod_premise = linear(d2, d2)
        if "trans" in ops:  # B <- B x B: kernel K_h(x, a), premise v_h(a, y)
            self.trans_kernel = linear(d2, heads)
            self.trans_premise = linear(d2, heads)
        if cross:  # the encoder's atoms enter the decoder's premises/kernels through their own projections
            if "assoc" in ops:
                self.cross_assoc_premise = linear(d1, d1)
            if "join" in ops:
                self.cross_join_premise = linear(d1, d1)
            if "cjoin" in ops:
                self.cross_cjoin_kernel = linear(d1, d1)
            if "trans" in ops:
                self.cross_trans_premise = linear(d2, heads)
        self.unary_ops = [op for op in UNARY_OUTPUT if op in ops and op != "bool"]
        self.binary_ops = [op for op in BINARY_OUTPUT if op in ops]
        self.unary_output = linear(len(self.unary_ops) * d1, d1)
        self.unary_norm = nn.LayerNorm(d1, eps=config.layer_norm_eps)
        self.binary_output = linear(len(self.binary_ops) * heads, d2)
        self.binary_norm = nn.LayerNorm(d2, eps=config.layer_norm_eps)
        self.unary_ffn = FOLNetFeedForward(config, d1, config.ffn_dim) if "bool" in ops else None
        self.binary_ffn = FOLNetFeedForward(config, d2, config.binary_ffn_dim) if "bool" in ops else None
        self.activated = set(config.activated_operators)
        self.dropout = config.dropout

    # -- columns: the a / y positions, with the decoder's cache -----------------------------------------
    def _columns(self, unary: torch.Tensor, binary: torch.Tensor, ctx: _LayerContext) -> dict[str, torch.Tensor | None]:
        """Per-column projections over every column a: assoc's key, join's value, cjoin's kernel
        ``(batch, H, C, S)`` and trans' premise ``(batch, H, C, C)`` (rows a, columns y)."""
        heads = self.num_heads
        batch, rows = unary.shape[:2]
        new = {
            "key": _heads(self.assoc_premise(unary), heads) if "assoc" in self.ops else None,
            "value": _heads(self.join_premise(unary), heads) if "join" in self.ops else None,
            "cjoin": _heads(self.cjoin_kernel(unary), heads) if "cjoin" in self.ops else None,
            "trans": _channels_first(self.trans_premise(binary)) if "trans" in self.ops else None,
        }
        if not self.cross:
            return new
        enc_unary, enc_binary = ctx.encoder_unary, ctx.encoder_binary
        inputs = enc_unary.shape[1]
        total = ctx.past + rows
        # This step's rows of trans' premise over the targets: the lower triangle, row-major. Index pairs, not a
        # boolean mask: their count is known from the shapes, so a compiled graph needs no data-dependent size.
        square_rows, square_columns = torch.tril_indices(total, total, device=unary.device)
        cached_entries = ctx.past * (ctx.past + 1) // 2  # the triangle's rows before this step
        step_rows, step_columns = square_rows[cached_entries:] - ctx.past, square_columns[cached_entries:]
        placeholder = unary.new_zeros(batch, 1, rows, 1)  # absent ops still advance the cache's length
        trans_inputs = new["trans"][..., :inputs] if new["trans"] is not None else placeholder
        trans_tri = (
            new["trans"][..., inputs:][:, :, step_rows, step_columns][..., None] if new["trans"] is not None else None
        )
        cache = ctx.cache
        base = self.layer_index * CACHE_SLOTS_PER_LAYER
        if cache is not None:
            own = cache.self_attention_cache
            key, value = own.update(_or(new["key"], placeholder), _or(new["value"], placeholder), base)
            cjoin, trans_inputs = own.update(_or(new["cjoin"], placeholder), trans_inputs, base + 1)
            tri_placeholder = unary.new_zeros(batch, 1, 1, 1)
            trans_tri, _ = own.update(_or(trans_tri, tri_placeholder), tri_placeholder, base + 2)
            new = {"key": key, "value": value, "cjoin": cjoin, "trans": None if new["trans"] is None else trans_tri}
            ready = bool(cache.is_updated.get(self.layer_index, False))
            cross_cache = cache.cross_attention_cache
        else:
            new = {**new, "trans": trans_tri}
            ready, cross_cache = False, None
        trans_inputs = trans_inputs if "trans" in self.ops else None
        if ready:
            enc = {
                "key": cross_cache.layers[base].keys,
                "value": cross_cache.layers[base].values,
                "cjoin": cross_cache.layers[base + 1].keys,
                "trans": cross_cache.layers[base + 1].values,
            }
        else:
            enc_placeholder = enc_unary.new_zeros(batch, 1, inputs, 1)
            enc = {
                "key": _heads(self.cross_assoc_premise(enc_unary), heads) if "assoc" in self.ops else None,
                "value": _heads(self.cross_join_premise(enc_unary), heads) if "join" in self.ops else None,
                "cjoin": _heads(self.cross_cjoin_kernel(enc_unary), heads) if "cjoin" in self.ops else None,
                "trans": _channels_first(self.cross_trans_premise(enc_binary)) if "trans" in self.ops else None,
            }
            if cross_cache is not None:
                cross_cache.update(_or(enc["key"], enc_placeholder), _or(enc["value"], enc_placeholder), base)
                cross_cache.update(_or(enc["cjoin"], enc_placeholder), _or(enc["trans"], enc_placeholder), base + 1)
                cache.is_updated[self.layer_index] = True
        columns: dict[str, torch.Tensor | None] = {}
        for name in ("key", "value", "cjoin"):
            columns[name] = None if enc[name] is None else torch.cat([enc[name], new[name]], dim=-2)
        if "trans" in self.ops:
            # Rows a in the input: [v^E(a, y in I), 0]; rows a in the target: [v^D(a, y in I), v^D(a, y <= a)].
            target = trans_inputs.new_zeros(batch, heads, total, total)
            target[:, :, square_rows, square_columns] = new["trans"][..., 0]
            top = torch.cat([enc["trans"], enc["trans"].new_zeros(batch, heads, inputs, total)], dim=-1)
            bottom = torch.cat([trans_inputs, target], dim=-1)
            columns["trans"] = torch.cat([top, bottom], dim=-2)
        else:
            columns["trans"] = None
        return columns

    # -- one deduction step ------------------------------------------------------------------------------
    def forward(self, unary: torch.Tensor, binary: torch.Tensor, ctx: _LayerContext) -> tuple[torch.Tensor, ...]:
        """unary ``(batch, n, D1)``, binary ``(batch, n, C, D2)`` (rows: the n new tokens, columns: all)."""
        batch, rows = unary.shape[:2]
        heads, size = self.num_heads, self.head_dim
        columns = self._columns(unary, binary, ctx)
        mask = ctx.mask
        mask4 = None if mask is None else mask[:, None]  # broadcasts over the channel dimension
        unary_out: list[torch.Tensor] = []
        binary_out: list[torch.Tensor] = []
        query = _heads(self.assoc_kernel(unary), heads) if "assoc" in self.ops else None
        if "assoc" in self.ops:
            scores = op_assoc(query.transpose(1, 2), columns["key"].transpose(1, 2)) * self.scaling
            binary_out.append(scores)
        if "join" in self.ops:
            bias = _channels_first(self.join_kernel(binary))
            if query is not None:
                if mask4 is not None:
                    bias = bias.masked_fill(~mask4, torch.finfo(bias.dtype).min)
                attention = ALL_ATTENTION_FUNCTIONS.get_interface(
                    self.config._attn_implementation, eager_attention_forward
                )
                joined, _ = attention(
                    self,
                    query,
                    columns["key"],
                    columns["value"],
                    bias.to(query.dtype),
                    scaling=self.scaling,
                    dropout=self.attention_dropout if self.training else 0.0,
                    is_causal=False,
                )
            else:
                joined = op_join(bias, columns["value"].transpose(1, 2), mask4)
            unary_out.append(self._activate("join", joined))
        if "mu" in self.ops:
            mu = op_mu(_channels_first(self.mu_kernel(binary)), _channels_first(self.mu_premise(binary)), mask4)
            unary_out.append(self._activate("mu", mu))
        if "cjoin" in self.ops:
            premise = _channels_first(self.cjoin_premise(binary))
            unary_out.append(self._activate("cjoin", op_cjoin(columns["cjoin"].transpose(1, 2), premise, mask)))
        if "prod" in self.ops:
            kernel = self.prod_kernel(unary).view(batch, rows, heads, -1)
            prod = op_prod(kernel, _channels_first(self.prod_premise(binary)), mask4)
            binary_out.append(self._activate("prod", prod))
        if "trans" in self.ops:
            premise_mask = None if ctx.premise_mask is None else ctx.premise_mask[:, None]
            if premise_mask is None and mask4 is not None:
                premise_mask = mask4
            trans = op_trans(_channels_first(self.trans_kernel(binary)), columns["trans"], mask4, premise_mask)
            binary_out.append(self._activate("trans", trans))
        deduced = torch.cat([u.reshape(batch, rows, heads * size) for u in unary_out], dim=-1)
        deduced = F.dropout(self.unary_output(deduced), p=self.dropout, training=self.training)
        unary = self.unary_norm(unary + deduced)
        relations = torch.cat(binary_out, dim=1).permute(0, 2, 3, 1)
        relations = F.dropout(self.binary_output(relations), p=self.dropout, training=self.training)
        binary = self.binary_norm(binary + relations)
        if self.unary_ffn is not None:
            unary = self.unary_ffn(unary)
            binary = self.binary_ffn(binary)
        if self.cross and mask is not None:
            binary = binary * mask[..., None].to(binary.dtype)  # the causal pattern of Fig. 4(c)
        return unary, binary

    def _activate(self, op: str, atoms: torch.Tensor) -> torch.Tensor:
        return folnet_activation(atoms) if op in self.activated else atoms


def _or(tensor: torch.Tensor | None, fallback: torch.Tensor) -> torch.Tensor:
    return fallback if tensor is None else tensor


# ---------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------
@dataclass
class FOLNetModelOutput(ModelOutput):
    """The encoder's deduced atoms.

    last_hidden_state: unary atoms u_L(x), ``(batch, T, D1)``.
    last_binary_state: binary atoms u_L(x, y), ``(batch, T, T, D2)``.
    hidden_states: u_0(x) .. u_L(x) when asked for.
    symbol_slots: each input token's symbol slot (-1 for base tokens), ``(batch, T)``, in the
    symbol-invariant variant: its decoder points at them.
    """

    last_hidden_state: torch.FloatTensor | None = None
    last_binary_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    symbol_slots: torch.LongTensor | None = None


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------
class FOLNetPreTrainedModel(StrictLoadingMixin, PreTrainedModel):
    """Weights initialisation, strict loading (``loading.py``) and the shared settings of the FOLNet models."""

    config_class = FOLNetConfig
    config: FOLNetConfig
    base_model_prefix = "folnet"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_attention_backend = False
    _no_split_modules = ["FOLNetLayer"]
    _skip_keys_device_placement = list(CACHE_NAMES)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, FOLNetLMHead):
            init.zeros_(module.bias)


class FOLNetEmbeddings(nn.Module):
    """The encoder's base atoms: u0(x) from TokenID and SeqID, u0(x, y) from RelDist (eq. 10)."""

    def __init__(self, config: FOLNetConfig) -> None:
        super().__init__()
        self.config = config
        self.delta = config.max_relative_distance
        self.word_embeddings = nn.Embedding(embedding_rows(config), config.unary_dim)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.unary_dim)
        self.distance_embeddings = nn.Embedding(2 * self.delta + 2, config.binary_dim)
        if config.symbol_invariant:
            self.same_symbol_embeddings = nn.Embedding(3, config.binary_dim)
        if config.token_arities is not None:
            self.tree_relation_embeddings = nn.Embedding(len(TREE_RELATIONS), config.binary_dim)
        self.unary_norm = nn.LayerNorm(config.unary_dim, eps=config.layer_norm_eps)
        self.binary_norm = nn.LayerNorm(config.binary_dim, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(
        self, input_ids: torch.LongTensor, token_type_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        config = self.config
        unary = self.word_embeddings(embedding_ids(input_ids, config)) + self.token_type_embeddings(token_type_ids)
        binary = self.distance_embeddings(relative_distance_ids(token_type_ids, self.delta))
        if config.symbol_invariant:
            slots = symbol_slots(input_ids, config.num_base_tokens)
            binary = binary + self.same_symbol_embeddings(same_symbol_ids(slots, slots))
        if config.token_arities is not None:
            binary = binary + self.tree_relation_embeddings(tree_relation_ids(input_ids, attention_mask, config))
        unary = F.dropout(self.unary_norm(unary), p=self.dropout, training=self.training)
        binary = F.dropout(self.binary_norm(binary), p=self.dropout, training=self.training)
        return unary, binary


def embedding_rows(config: FOLNetConfig) -> int:
    """Rows of the token embedding: one per id, or, in the symbol-invariant variant, one per base token and one
    shared by every symbol."""
    return config.num_base_tokens + 1 if config.symbol_invariant else config.vocab_size


def embedding_ids(ids: torch.LongTensor, config: FOLNetConfig) -> torch.LongTensor:
    """The embedding row of each token id: every symbol shares the row after the base tokens' in the
    symbol-invariant variant."""
    return ids.clamp(max=config.num_base_tokens) if config.symbol_invariant else ids


def _return_dict(config: FOLNetConfig, return_dict: bool | None) -> bool:
    return return_dict if return_dict is not None else getattr(config, "return_dict", True)


def _check_ids(ids: torch.Tensor, name: str, vocab_size: int) -> None:
    if refused((ids < 0) | (ids >= vocab_size), f"{name} must lie in [0, {vocab_size})"):
        raise ValueError(f"{name} must lie in [0, {vocab_size}), got values in [{int(ids.min())}, {int(ids.max())}]")


def _check_symbol_mask(
    input_ids: torch.LongTensor, symbol_mask: torch.Tensor, attention_mask: torch.Tensor | None, num_base: int | None
) -> None:
    if symbol_mask.shape != input_ids.shape:
        raise ValueError(f"symbol_mask has shape {tuple(symbol_mask.shape)}, input_ids {tuple(input_ids.shape)}")
    if num_base is None:
        return  # a config without num_base_tokens does not know its symbols
    wrong = symbol_mask.bool() != (input_ids >= num_base)
    if attention_mask is not None:
        wrong &= attention_mask.bool()
    if refused(wrong, "symbol_mask disagrees with input_ids: were the ids made by another tokenizer?"):
        row, position = (int(i) for i in wrong.nonzero()[0])
        token = int(input_ids[row, position])
        raise ValueError(
            f"symbol_mask disagrees with input_ids at row {row}, position {position} (id {token}; symbols are the "
            f"ids from num_base_tokens={num_base} on): were the ids made by another tokenizer?"
        )


class FOLNetModel(FOLNetPreTrainedModel):
    """The FOLNet encoder: base atoms, then ``num_layers`` forward-chaining steps. Returns the unary
    atoms u_L(x) as ``last_hidden_state`` and the binary atoms u_L(x, y) as ``last_binary_state``."""

    def __init__(self, config: FOLNetConfig) -> None:
        super().__init__(config)
        self.embeddings = FOLNetEmbeddings(config)
        self.layers = nn.ModuleList(FOLNetLayer(config, i) for i in range(config.num_layers))
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.embeddings.word_embeddings = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        output_attentions: bool | None = None,
        symbol_mask: torch.Tensor | None = None,
    ) -> FOLNetModelOutput | tuple:
        """input_ids ``(batch, T)``; attention_mask ``(batch, T)``, 1 for tokens and 0 for padding;
        token_type_ids: the segment (SeqID) of each token, 0 by default. ``output_attentions`` is accepted
        (``generate`` passes it) but only False: the deduced binary atoms are the model's relations.
        ``symbol_mask`` (the family tokenizer's output, 1 for symbols) is only checked: symbols are the ids from
        ``num_base_tokens`` on, and a mask that says otherwise means another tokenizer made the ids."""
        if output_attentions:
            raise ValueError("output_attentions is not supported; last_binary_state holds the deduced relations")
        if input_ids is None:
            raise ValueError("input_ids are required (inputs_embeds are not supported)")
        _check_ids(input_ids, "input_ids", self.config.vocab_size)
        if symbol_mask is not None:
            _check_symbol_mask(input_ids, symbol_mask, attention_mask, self.config.num_base_tokens)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        _check_ids(token_type_ids, "token_type_ids", self.config.type_vocab_size)
        unary, binary = self.embeddings(input_ids, token_type_ids, attention_mask)
        mask = None
        # Eager mode skips the masks of an unpadded batch; a compiled graph cannot read the data to decide.
        if attention_mask is not None and (is_compiling() or not bool(attention_mask.bool().all())):
            mask = attention_mask.bool()[:, None, :].expand(-1, input_ids.shape[1], -1)
        ctx = _LayerContext(mask=mask)
        hidden = [unary] if output_hidden_states else None
        for layer in self.layers:
            unary, binary = layer(unary, binary, ctx)
            if hidden is not None:
                hidden.append(unary)
        output = FOLNetModelOutput(
            last_hidden_state=unary,
            last_binary_state=binary,
            hidden_states=tuple(hidden) if hidden is not None else None,
            symbol_slots=symbol_slots(input_ids, self.config.num_base_tokens) if self.config.symbol_invariant else None,
        )
        return output if _return_dict(self.config, return_dict) else output.to_tuple()


class FOLNetLMHead(nn.Module):
    """BERT-style prediction head: dense + activation + layer norm, then the (tied) vocabulary projection."""

    def __init__(self, config: FOLNetConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.unary_dim, config.unary_dim)
        self.act = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(config.unary_dim, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.unary_dim, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.act(self.dense(hidden)))) + self.bias


class FOLNetForMaskedLM(FOLNetPreTrainedModel):
    """Masked language modelling from the unary atoms u_L(x) (Appendix A.4)."""

    _tied_weights_keys = {"lm_head.decoder.weight": "folnet.embeddings.word_embeddings.weight"}

    def __init__(self, config: FOLNetConfig) -> None:
        if config.symbol_invariant:
            raise ValueError(
                "FOLNetConfig.symbol_invariant: FOLNetForMaskedLM predicts every token from a fixed vocabulary, which "
                "the invariant variant has not; use FOLNetForConditionalGeneration (it points at input symbols) or "
                "FOLNetForSequenceClassification"
            )
        super().__init__(config)
        self.folnet = FOLNetModel(config)
        self.lm_head = FOLNetLMHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head.decoder

    def set_output_embeddings(self, value: nn.Module) -> None:
        self.lm_head.decoder = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        symbol_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> MaskedLMOutput | tuple:
        """labels ``(batch, T)``: the original token at masked positions, -100 elsewhere."""
        outputs = self.folnet(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            symbol_mask=symbol_mask,
        )
        logits = self.lm_head(outputs.last_hidden_state)
        loss = None
        if labels is not None:
            loss = _token_loss(logits, labels, kwargs.get("num_items_in_batch"))
        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if _return_dict(self.config, return_dict) else output.to_tuple()


def _token_loss(
    logits: torch.Tensor, labels: torch.LongTensor, num_items_in_batch: int | torch.Tensor | None
) -> torch.Tensor:
    """Cross-entropy over the tokens whose label is not -100; summed and divided by ``num_items_in_batch``
    when the Trainer accumulates gradients over several batches."""
    flat_logits, flat_labels = logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1).to(logits.device)
    if num_items_in_batch is None:
        return F.cross_entropy(flat_logits, flat_labels, ignore_index=-100)
    total = F.cross_entropy(flat_logits, flat_labels, ignore_index=-100, reduction="sum")
    return total / torch.as_tensor(num_items_in_batch, device=total.device)


class FOLNetForSequenceClassification(FOLNetPreTrainedModel):
    """Classification / regression from the first token's unary atoms u_L(x_0) (the [CLS] of A.4)."""

    def __init__(self, config: FOLNetConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.folnet = FOLNetModel(config)
        self.pooler = nn.Linear(config.unary_dim, config.unary_dim)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.dropout
        self.classifier_dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.unary_dim, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        symbol_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput | tuple:
        """labels ``(batch,)``: class indices, or floats when ``num_labels == 1`` (regression)."""
        outputs = self.folnet(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            symbol_mask=symbol_mask,
        )
        pooled = torch.tanh(self.pooler(outputs.last_hidden_state[:, 0]))
        logits = self.classifier(self.classifier_dropout(pooled))
        loss = None
        if labels is not None:
            problem = self.config.problem_type
            if problem is None:
                if self.num_labels == 1:
                    problem = "regression"
                elif labels.dtype in (torch.long, torch.int):
                    problem = "single_label_classification"
                else:
                    problem = "multi_label_classification"
            if problem == "regression":
                loss = F.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
            elif problem == "single_label_classification":
                loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
            else:
                loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if _return_dict(self.config, return_dict) else output.to_tuple()


class FOLNetDecoder(nn.Module):
    """The decoder stack of Appendix A.5: target tokens' unary atoms and binary atoms u(x, y) for x a
    target token and y an input token (first) or a target token. Shares the encoder's token embedding."""

    def __init__(self, config: FOLNetConfig, word_embeddings: nn.Embedding) -> None:
        super().__init__()
        self.config = config
        self.delta = config.max_relative_distance
        # Not registered: the module is the encoder's, owned (and saved) there.
        self.__dict__["_word_embeddings"] = word_embeddings
        # ids 0 .. 2 Delta: clip(y - x, -Delta, Delta) + Delta between targets; 2 Delta + 1: y is an input token.
        self.distance_embeddings = nn.Embedding(2 * self.delta + 2, config.binary_dim)
        if config.symbol_invariant:
            self.same_symbol_embeddings = nn.Embedding(3, config.binary_dim)
        self.unary_norm = nn.LayerNorm(config.unary_dim, eps=config.layer_norm_eps)
        self.binary_norm = nn.LayerNorm(config.binary_dim, eps=config.layer_norm_eps)
        self.dropout = config.dropout
        self.layers = nn.ModuleList(FOLNetLayer(config, i, cross=True) for i in range(config.decoder_layers))

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_unary: torch.Tensor,
        encoder_binary: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        cache: EncoderDecoderCache | None = None,
        output_hidden_states: bool = False,
        encoder_symbol_slots: torch.LongTensor | None = None,
        decoder_history_ids: torch.LongTensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, tuple | None]:
        """Returns the last unary atoms, the last binary atoms ``(batch, rows, inputs + targets, D2)`` and the
        hidden states. The symbol-invariant variant needs the input's ``encoder_symbol_slots`` and, with a
        filled cache, every target id so far (``decoder_history_ids``): same_symbol reaches earlier targets."""
        batch, rows = decoder_input_ids.shape
        inputs = encoder_unary.shape[1]
        device = decoder_input_ids.device
        past = 0
        if cache is not None:
            needed = len(self.layers) * CACHE_SLOTS_PER_LAYER
            for sub in (cache.self_attention_cache, cache.cross_attention_cache):
                while len(sub.layers) < needed:
                    sub.layers.append(DynamicLayer())
            past = cache.self_attention_cache.get_seq_length(0)
        total = past + rows
        target_rows = torch.arange(past, total, device=device)
        targets = torch.arange(total, device=device)
        distance = (targets[None, :] - target_rows[:, None]).clamp(-self.delta, self.delta) + self.delta
        ids = torch.cat([distance.new_full((rows, inputs), 2 * self.delta + 1), distance], dim=1)
        binary = self.distance_embeddings(ids)[None].expand(batch, -1, -1, -1)
        if self.config.symbol_invariant:
            binary = binary + self.same_symbol_embeddings(
                self._same_symbol(decoder_input_ids, encoder_symbol_slots, decoder_history_ids, past)
            )
        unary = self.__dict__["_word_embeddings"](embedding_ids(decoder_input_ids, self.config))
        unary = F.dropout(self.unary_norm(unary), p=self.dropout, training=self.training)
        binary = F.dropout(self.binary_norm(binary), p=self.dropout, training=self.training)
        # Table 5 masks. Columns: the input tokens (not padding), then the targets up to the row itself.
        input_ok = (
            attention_mask.bool()
            if attention_mask is not None
            else torch.ones(batch, inputs, dtype=torch.bool, device=device)
        )
        causal = targets[None, :] <= target_rows[:, None]  # (rows, total)
        square = torch.ones(total, total, dtype=torch.bool, device=device).tril()
        if decoder_attention_mask is not None and decoder_attention_mask.shape[-1] == total:
            target_ok = decoder_attention_mask.bool()[:, None, :]
            causal, square = causal[None] & target_ok, square[None] & target_ok
        mask = torch.cat([input_ok[:, None, :].expand(batch, rows, inputs), causal.expand(batch, rows, total)], dim=-1)
        premise_mask = torch.cat(
            [
                torch.cat(
                    [input_ok[:, None, :].expand(batch, inputs, inputs), input_ok.new_zeros(batch, inputs, total)],
                    dim=-1,
                ),
                torch.cat([input_ok[:, None, :].expand(batch, total, inputs), square.expand(batch, total, total)], -1),
            ],
            dim=-2,
        )
        binary = binary * mask[..., None].to(binary.dtype)
        ctx = _LayerContext(
            mask=mask,
            premise_mask=premise_mask,
            encoder_unary=encoder_unary,
            encoder_binary=encoder_binary,
            cache=cache,
            past=past,
        )
        hidden = [unary] if output_hidden_states else None
        for layer in self.layers:
            unary, binary = layer(unary, binary, ctx)
            if hidden is not None:
                hidden.append(unary)
        return unary, binary, (tuple(hidden) if hidden is not None else None)

    def _same_symbol(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_symbol_slots: torch.LongTensor | None,
        decoder_history_ids: torch.LongTensor | None,
        past: int,
    ) -> torch.LongTensor:
        """same_symbol ids of the new target rows against the inputs, then every target so far."""
        if encoder_symbol_slots is None:
            raise ValueError("the symbol-invariant decoder needs the encoder output's symbol_slots")
        history = decoder_input_ids
        if past:
            if decoder_history_ids is None or decoder_history_ids.shape[1] != past + decoder_input_ids.shape[1]:
                raise ValueError(
                    f"the symbol-invariant decoder with {past} cached target positions needs decoder_history_ids: "
                    "every target id so far (generate passes them)"
                )
            history = decoder_history_ids
        nb = self.config.num_base_tokens
        rows = symbol_slots(decoder_input_ids, nb)
        columns = torch.cat([encoder_symbol_slots, symbol_slots(history, nb)], dim=1)
        return same_symbol_ids(rows, columns)


def shift_tokens_right(labels: torch.LongTensor, pad_token_id: int, decoder_start_token_id: int) -> torch.LongTensor:
    """Teacher forcing: the decoder reads ``<start> y_1 .. y_{n-1}`` to predict ``y_1 .. y_n``."""
    shifted = labels.new_zeros(labels.shape)
    shifted[:, 1:] = labels[:, :-1].clone()
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == -100, pad_token_id)


class FOLNetForConditionalGeneration(FOLNetPreTrainedModel, GenerationMixin):
    """The encoder-decoder FOLNet of Appendix A.5 with a language-model head tied to the token embedding;
    ``generate`` (greedy, beam search) with an ``EncoderDecoderCache``. In the symbol-invariant variant the
    head gives the base tokens' logits and a pointer over the input positions the symbols' (module docstring)."""

    _tied_weights_keys = {"lm_head.weight": "folnet.embeddings.word_embeddings.weight"}

    def __init__(self, config: FOLNetConfig) -> None:
        config.is_encoder_decoder = True
        super().__init__(config)
        self.folnet = FOLNetModel(config)
        self.decoder = FOLNetDecoder(config, self.folnet.embeddings.word_embeddings)
        self.lm_head = nn.Linear(config.unary_dim, embedding_rows(config), bias=False)
        if config.symbol_invariant:
            self.pointer_query = nn.Linear(config.unary_dim, config.unary_dim)
            self.pointer_key = nn.Linear(config.unary_dim, config.unary_dim)
            self.pointer_relation = nn.Linear(config.binary_dim, 1)
        self.post_init()

    def get_encoder(self, modality: str | None = None) -> FOLNetModel:
        return self.folnet

    def get_input_embeddings(self) -> nn.Module:
        return self.folnet.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.folnet.embeddings.word_embeddings = value
        self.decoder.__dict__["_word_embeddings"] = value

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Module) -> None:
        self.lm_head = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: FOLNetModelOutput | tuple | None = None,
        cache: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        decoder_history_ids: torch.LongTensor | None = None,
        symbol_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """``labels`` ``(batch, n)`` (-100 or <pad> ignored) build ``decoder_input_ids`` when those are absent.
        ``decoder_history_ids``: every target id so far, for the symbol-invariant variant with a filled cache
        (``generate`` passes them). ``cache``: an ``EncoderDecoderCache`` (``past_key_values``, its name before
        transformers 5.24, is accepted too)."""
        config = self.config
        cache = given_cache(cache, past_key_values)
        if encoder_outputs is None:
            encoder_outputs = self.folnet(
                input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                output_hidden_states=output_hidden_states,
                return_dict=True,
                symbol_mask=symbol_mask,
            )
        elif not isinstance(encoder_outputs, FOLNetModelOutput):
            encoder_outputs = _encoder_output_from_tuple(encoder_outputs)
        if labels is not None:
            labels = labels.masked_fill(labels == config.pad_token_id, -100)
            if decoder_input_ids is None:
                decoder_input_ids = shift_tokens_right(labels, config.pad_token_id, config.decoder_start_token_id)
        if decoder_input_ids is None:
            raise ValueError("decoder_input_ids (or labels, from which they are built) are required")
        _check_ids(decoder_input_ids, "decoder_input_ids", config.vocab_size)
        if use_cache is None:
            use_cache = config.use_cache and not self.training and labels is None
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        if not use_cache:
            cache = None
        if cache is not None and not isinstance(cache, EncoderDecoderCache):
            raise TypeError(f"the cache must be an EncoderDecoderCache, got {type(cache).__name__}")
        decoded, decoder_binary, decoder_hidden = self.decoder(
            decoder_input_ids,
            encoder_outputs.last_hidden_state,
            encoder_outputs.last_binary_state,
            attention_mask=attention_mask,
            decoder_attention_mask=decoder_attention_mask,
            cache=cache,
            output_hidden_states=bool(output_hidden_states),
            encoder_symbol_slots=encoder_outputs.symbol_slots,
            decoder_history_ids=decoder_history_ids,
        )
        logits = self.lm_head(decoded)
        if config.symbol_invariant:
            logits = torch.cat(
                [
                    logits[..., : config.num_base_tokens],
                    self._pointer_logits(decoded, decoder_binary, encoder_outputs, attention_mask),
                ],
                dim=-1,
            )
        loss = None if labels is None else _token_loss(logits, labels, num_items_in_batch)
        output = Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **cache_keyword(cache),
            decoder_hidden_states=decoder_hidden,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
        )
        return output if _return_dict(config, return_dict) else output.to_tuple()

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def prepare_inputs_for_generation(self, input_ids: torch.LongTensor, **kwargs) -> dict:
        """GenerationMixin's, plus every target id so far for the symbol-invariant decoder (it relates each new
        target to the earlier ones by same_symbol, while the cache passes only the new ones)."""
        inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
        if self.config.symbol_invariant:
            inputs["decoder_history_ids"] = input_ids
        return inputs

    def _pointer_logits(
        self,
        decoded: torch.Tensor,
        decoder_binary: torch.Tensor,
        encoder_outputs: FOLNetModelOutput,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """``(batch, rows, slots)``: slot s scores logsumexp_i score(x, i) over the input positions i holding
        symbol s; score(x, i) reads the decoder's binary atom u(x, i) and compares unary atoms. -inf for slots
        absent from the input."""
        encoder_unary, slots = encoder_outputs.last_hidden_state, encoder_outputs.symbol_slots
        inputs = encoder_unary.shape[1]
        scores = self.pointer_relation(decoder_binary[:, :, :inputs]).squeeze(-1)
        query, key = self.pointer_query(decoded), self.pointer_key(encoder_unary)
        scores = scores + torch.einsum("bxd,bid->bxi", query, key) * query.shape[-1] ** -0.5
        num_slots = self.config.num_symbol_slots
        pointable = slots >= 0
        if attention_mask is not None:
            pointable = pointable & attention_mask.bool()
        # Base tokens and padding go to one extra column, dropped at the end.
        index = torch.where(pointable, slots, num_slots)[:, None, :].expand_as(scores)
        top = scores.new_full((*scores.shape[:2], num_slots + 1), float("-inf"))
        top = top.scatter_reduce(2, index, scores, reduce="amax", include_self=True)
        total = scores.new_zeros(top.shape).scatter_add(2, index, torch.exp(scores - top.gather(2, index)))
        present = total > 0
        pooled = torch.where(present, top + torch.log(total.clamp_min(torch.finfo(total.dtype).tiny)), float("-inf"))
        return pooled[..., :num_slots]


def _encoder_output_from_tuple(outputs: tuple) -> FOLNetModelOutput:
    """``FOLNetModel(..., return_dict=False)``'s tuple (which leaves out None fields) back as an output, each
    field told by its kind: unary atoms (3-d), binary atoms (4-d), hidden states (a tuple), symbol slots (2-d)."""
    fields: dict[str, object] = {}
    for item in outputs:
        if isinstance(item, tuple):
            fields["hidden_states"] = item
        elif isinstance(item, torch.Tensor) and item.dim() in (2, 3, 4):
            name = {2: "symbol_slots", 3: "last_hidden_state", 4: "last_binary_state"}[item.dim()]
            fields[name] = item
        else:
            raise ValueError(f"encoder_outputs: unexpected item {type(item).__name__} in a FOLNet encoder output tuple")
    return FOLNetModelOutput(**fields)


__all__ = [
    "FOLNetForConditionalGeneration",
    "FOLNetForMaskedLM",
    "FOLNetForSequenceClassification",
    "FOLNetLayer",
    "FOLNetModel",
    "FOLNetPreTrainedModel",
]
