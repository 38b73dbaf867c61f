"""Streams of the wrapper: one per distinct symbol of an input, in order of first appearance.

The same concepts as the SIT's ``streams.py``; the pieces are copied (and checked to stay equal) so that a
wrapper checkpoint's folder holds only this family's files.
"""

from __future__ import annotations

import torch

# Copied from hf_symbolinv.models.symbolinv.streams.TIE_BREAK
#: Score penalty per rank of first appearance: far below any meaningful score difference, far above
#: float rounding of the (bit-identical) scores it separates.
TIE_BREAK = 1e-5


# Copied from hf_symbolinv.models.symbolinv.streams.first_appearance_streams
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
