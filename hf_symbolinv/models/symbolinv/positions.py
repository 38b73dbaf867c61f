"""Position encodings of the Symbol-Invariant Transformer: the tree encoding of Polish-notation formulas,
sinusoidal and automaton encodings (added to the embeddings), and RoPE (rotating queries and keys)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from .configuration_symbolinv import SymbolInvConfig


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
            where = (
                f"the operator at position {stack[-1][3]} (id {row[stack[-1][3]]}) is missing "
                f"{stack[-1][1] - stack[-1][2]} operand(s)"
                if stack
                else "it has no token"
            )
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
