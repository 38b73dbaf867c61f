"""Position encodings of the Symbol-Invariant Transformer: the tree encoding of Polish-notation formulas,
sinusoidal and automaton encodings (added to the embeddings), and RoPE (rotating queries and keys)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from .configuration_symbolinv import SymbolInvConfig
from .streams import refused


def tree_position_encoding(
    input_ids: torch.LongTensor, attention_mask: torch.Tensor | None, config: SymbolInvConfig
) -> torch.Tensor:
    """Tree positional encoding over the Polish-notation parse, ``(B, L, d_model)``.

    A token's vector concatenates one-hot steps from the token up to the root: [1, 0] for a left (or
    unary) child, [0, 1] for a right child; the root is all zeros, paths are cut at d_model / 2
    steps, EOS and padding get zeros.

    Computed with tensor operations on the ids' device (no host round trip): in Polish notation the
    subtree of token i ends at the first token k >= i where the count of open operand slots falls below
    its value before i, which gives every token's ancestors as an ``(L, L)`` mask per sample.
    """
    batch, length = input_ids.shape
    device = input_ids.device
    max_steps = config.d_model // 2
    arities = torch.tensor(config.token_arities, dtype=torch.long, device=device)
    is_base = input_ids < config.num_base_tokens
    arity = torch.where(is_base, arities[input_ids.clamp(max=config.num_base_tokens - 1)], 0)
    valid = (input_ids != config.eos_token_id) & (input_ids != config.pad_token_id)
    if attention_mask is not None:
        valid = valid & attention_mask.bool()
    contains = polish_subtrees(input_ids, valid, arity)
    rank = torch.cumsum(valid.long(), dim=1) - 1  # position among the valid tokens
    positions = torch.arange(length, device=device)
    depth = contains.sum(1) - 1  # strict ancestors of each token
    strict = contains & (positions[None, :, None] != positions[None, None, :])
    # A token's parent is its deepest strict ancestor: the one that starts last.
    parent = torch.where(strict, positions[None, :, None], -1).amax(dim=1)  # (B, L), -1 for the root
    parent_rank = torch.gather(rank, 1, parent.clamp(min=0))
    direction = (rank != parent_rank + 1).long()  # 0: first (left or only) child, 1: second child
    # The path of token j takes, k steps up, the direction of its ancestor-or-self at depth D_j - k.
    steps_up = depth[:, None, :] - depth[:, :, None]  # (B, i, j): D_j - D_i
    on_path = contains & (depth[:, :, None] >= 1) & (steps_up < max_steps)
    # Token j's one-hot steps, one per ancestor i on its path: a dense scatter along j's row (the
    # ancestors off the path write to one extra column, dropped after), no data-dependent shapes.
    column = torch.where(on_path, steps_up * 2 + direction[:, :, None], max_steps * 2)  # (B, i, j)
    encoding = torch.zeros(batch, length, max_steps * 2 + 1, device=device)
    encoding = encoding.scatter(2, column.transpose(1, 2), 1.0)[..., : max_steps * 2]
    if encoding.shape[-1] < config.d_model:
        encoding = F.pad(encoding, (0, config.d_model - encoding.shape[-1]))
    return encoding


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


def _last_valid(valid: torch.BoolTensor) -> torch.LongTensor:
    positions = torch.arange(valid.shape[1], device=valid.device)
    return torch.where(valid, positions, 0).amax(dim=1)


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
