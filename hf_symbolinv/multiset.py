"""Digit-multiset models of the multiset-automata paper (§5): ``DeepSets`` (a real sum) against
``ComplexDeepSets`` (the commutative complex pooling of the SIT's ``stream_aggregation="complex"``).

They are examples (``examples/multiset_digits.py``), not part of any model family's Hub files.
"""

from __future__ import annotations

import torch
from torch import nn

from .models.symbolinv.pooling import ComplexMultisetPooling, complex_multiset_pool

__all__ = ["ComplexDeepSets", "ComplexMultisetPooling", "DeepSets", "check_digits", "complex_multiset_pool"]


# The digit tasks of §5 (sum of a multiset of digits; units digit of that sum). Both models take a padded
# ``(batch, max_set_size)`` LongTensor of digits with 0 as padding. The embeddings have 11 rows (row 0
# belongs to the padding, which is masked out, and row 10 is never used): that is what gives the paper's
# parameter counts, 4,161 and 1,801.
DIGIT_EMBEDDINGS = 11
MAX_DIGIT = 9


def check_digits(digits: torch.Tensor) -> torch.Tensor:
    """Validate a padded ``(batch, max_set_size)`` tensor of digits 0..9 (0 = padding); return it as long.

    Raises ValueError naming the shape, dtype, or first offending value and its ``[set, position]``.
    """
    if not isinstance(digits, torch.Tensor):
        raise ValueError(f"digits must be a torch.Tensor, got {type(digits).__name__}")
    if digits.dim() != 2:
        raise ValueError(f"digits must have shape (batch, max_set_size); got shape {tuple(digits.shape)}")
    if digits.dtype.is_floating_point or digits.dtype.is_complex or digits.dtype == torch.bool:
        raise ValueError(f"digits must be an integer tensor; got dtype {digits.dtype}")
    bad = (digits < 0) | (digits > MAX_DIGIT)
    if bad.any():
        row, column = (int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"digits must be 1..{MAX_DIGIT} (0 = padding); got {int(digits[row, column])} at set {row}, "
            f"position {column}"
        )
    return digits.long()


class DeepSets(nn.Module):
    """The DeepSets digit-sum baseline (Zaheer et al. 2017) as the paper ran it: a real sum over the set.

    Embedding(11, 100) -> Linear(100, 30) + tanh per element -> sum over the present elements ->
    Linear(30, 1). The sum makes it order invariant and lets it count exactly (it extrapolates the sum of
    digits to larger sets), but a linear map of a real sum cannot wrap around, so it cannot learn the
    units digit of the sum. 4,161 parameters.
    """

    def __init__(self, embedding_dim: int = 100, hidden_dim: int = 30) -> None:
        super().__init__()
        self.embedding = nn.Embedding(DIGIT_EMBEDDINGS, embedding_dim)
        self.hidden = nn.Linear(embedding_dim, hidden_dim)
        self.output = nn.Linear(hidden_dim, 1)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        """``(batch, max_set_size)`` digits (0 = padding) -> ``(batch,)`` predictions."""
        digits = check_digits(digits)
        # An element's features depend on its digit alone: compute them once per embedding row and look
        # them up, the same function as embedding every element but several times cheaper to train.
        features = nn.functional.embedding(digits, torch.tanh(self.hidden(self.embedding.weight)))
        # Mask rather than trust a zero padding row: tanh(bias) of a padding element is not zero.
        present = (digits != 0).unsqueeze(-1).to(features.dtype)
        return self.output((features * present).sum(dim=1)).squeeze(-1)


class ComplexDeepSets(nn.Module):
    """Complex DeepSets (the paper's §5): a diagonal complex multiset automaton with ``num_states`` states.

    Each digit has, per state, a log-magnitude ``r`` and a pair ``(a, b)`` whose direction is its unit
    complex weight (angle ``atan2(b, a)``): three Embedding(11, 50). The weights are multiplied over the
    set (``Σ r``, ``cos Σ θ``, ``sin Σ θ`` through :func:`complex_multiset_pool`, sums rather than means so
    that the size counts), and Linear(150, 1) reads the result. Rotations wrap around, so the model can
    count modulo 10 and get the units digit of the sum right at any set size. 1,801 parameters.

    ``r``, ``a`` and ``b`` start from N(0, ``init_std``²) rather than the embeddings' N(0, 1). A small
    ``(a, b)`` makes each optimizer step turn the angle further (by about step / |(a, b)|), which is what
    lets the states find the rotations by multiples of 2π/10 (the pair grows as training goes on, so the
    turns get finer by themselves); a small ``r`` keeps ``Σ r`` of a 50-digit set from swamping the
    output at the start. Trained on the units digit as in ``examples/multiset_digits.py`` (at most 30
    epochs), 11 of 16 seeds stalled short of 100% from N(0, 1), 3 of 16 from N(0, 0.1²).
    """

    def __init__(self, num_states: int = 50, init_std: float = 0.1) -> None:
        super().__init__()
        self.log_magnitude = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.real = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.imaginary = nn.Embedding(DIGIT_EMBEDDINGS, num_states)
        self.output = nn.Linear(3 * num_states, 1)
        for embedding in (self.log_magnitude, self.real, self.imaginary):
            nn.init.normal_(embedding.weight, std=init_std)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        """``(batch, max_set_size)`` digits (0 = padding) -> ``(batch,)`` predictions."""
        digits = check_digits(digits)
        batch, size = digits.shape
        flat = digits.reshape(-1)
        # Only the direction of (a, b) matters, so the angle is all the pooling needs; computed once per
        # embedding row and looked up, as it depends on the digit alone.
        angles = nn.functional.embedding(flat, torch.atan2(self.imaginary.weight, self.real.weight))
        set_of_element = torch.arange(batch, device=digits.device).repeat_interleave(size)
        pooled = complex_multiset_pool(
            self.log_magnitude(flat), angles, set_of_element, batch, present=flat != 0, mean=False
        )
        return self.output(pooled).squeeze(-1)


__all__ = ["ComplexDeepSets", "ComplexMultisetPooling", "DeepSets", "check_digits", "complex_multiset_pool"]
