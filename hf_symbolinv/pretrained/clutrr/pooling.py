"""Commutative complex pooling of multisets: diagonal complex multiset automata (the
multiset-automata paper, §5, "complex DeepSets").

A diagonal complex multiset automaton gives every element x a complex weight ``exp(r(x)) · exp(iθ(x))``
per state and multiplies them over the multiset. The product's log-magnitude is ``Σ r`` and its angle
``Σ θ``, both sums, so the result does not depend on the order of the elements. Unlike a sum of real
features, the angle wraps around: a product of rotations can count modulo m (the units digit of a
sum, the parity of a xor), which a real sum followed by a small network cannot do at unseen sizes.

The pooled vector of a group of k elements is ``[Σ r / k, cos Σ θ, sin Σ θ]`` (``3 · num_states``
features; ``Σ r`` instead of the mean where the size itself matters, as in a sum of digits).

This module imports only torch; ``save_pretrained`` copies it next to the SIT's weights.
"""

from __future__ import annotations

import torch
from torch import nn


def complex_multiset_pool(
    magnitudes: torch.Tensor,
    angles: torch.Tensor,
    group_index: torch.LongTensor,
    num_groups: int,
    present: torch.Tensor | None = None,
    mean: bool = True,
) -> torch.Tensor:
    """Pool the elements of each group: ``(N, ..., n)`` twice -> ``(num_groups, ..., 3n)``.

    ``group_index[j]`` is the group of element j; ``present`` (``(N,)`` bool) drops padding elements.
    ``mean=True`` divides Σr by the group's number of present elements. Empty groups give
    ``[0, 1, 0]`` (the automaton's initial weight) instead of dividing by zero.
    """
    if magnitudes.shape != angles.shape:
        raise ValueError(f"magnitudes {tuple(magnitudes.shape)} and angles {tuple(angles.shape)} differ in shape")
    if group_index.shape != magnitudes.shape[:1]:
        raise ValueError(f"group_index has shape {tuple(group_index.shape)}; expected ({magnitudes.shape[0]},)")
    if present is not None:
        keep = present.to(magnitudes.dtype).reshape(-1, *([1] * (magnitudes.dim() - 1)))
        magnitudes, angles = magnitudes * keep, angles * keep
    shape = (num_groups, *magnitudes.shape[1:])
    radius = magnitudes.new_zeros(shape).index_add_(0, group_index, magnitudes)
    angle = angles.new_zeros(shape).index_add_(0, group_index, angles)
    if mean:
        ones = torch.ones_like(group_index, dtype=magnitudes.dtype) if present is None else present.to(magnitudes.dtype)
        counts = magnitudes.new_zeros(num_groups).index_add_(0, group_index, ones).clamp(min=1)
        radius = radius / counts.reshape(-1, *([1] * (magnitudes.dim() - 1)))
    return torch.cat([radius, angle.cos(), angle.sin()], dim=-1)


class ComplexMultisetPooling(nn.Module):
    """Linear maps to ``num_states`` magnitudes and angles per element, commutative complex pooling
    per group, and a linear map of the pooled ``3 · num_states`` features to ``output_dim``.

    ``forward(x, group_index, num_groups)`` maps ``(N, ..., input_dim)`` to
    ``(num_groups, ..., output_dim)``; permuting the elements of a group never changes its output.
    """

    def __init__(self, input_dim: int, num_states: int, output_dim: int | None = None, mean: bool = True) -> None:
        super().__init__()
        if input_dim < 1 or num_states < 1:
            raise ValueError(f"input_dim ({input_dim}) and num_states ({num_states}) must be positive")
        self.num_states = num_states
        self.mean = mean
        self.magnitude = nn.Linear(input_dim, num_states)
        self.angle = nn.Linear(input_dim, num_states)
        self.output = nn.Linear(3 * num_states, output_dim or input_dim)

    def forward(
        self,
        x: torch.Tensor,
        group_index: torch.LongTensor,
        num_groups: int,
        present: torch.Tensor | None = None,
    ) -> torch.Tensor:
        pooled = complex_multiset_pool(self.magnitude(x), self.angle(x), group_index, num_groups, present, self.mean)
        return self.output(pooled)
