"""Streams of the wrapper: one per distinct symbol of an input, in order of first appearance.

The same concepts as the SIT's ``streams.py``; the pieces are copied (and checked to stay equal) so that a
wrapper checkpoint's folder holds only this family's files.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

# Copied from hf_symbolinv.models.symbolinv.streams.TIE_BREAK
#: Score penalty per rank of first appearance: far below any meaningful score difference, far above
#: float rounding of the (bit-identical) scores it separates.
TIE_BREAK = 1e-5


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


# Copied from hf_symbolinv.models.symbolinv.streams.first_appearance_streams
def first_appearance_streams(
    token_slots: torch.LongTensor, num_slots: int, max_streams: int, width: int | None = None
) -> tuple[torch.LongTensor, torch.BoolTensor]:
    """Streams of every sample from its tokens' symbol slots ``(B, L)`` (-1 for a base token or padding).

    Returns slots ``(B, S)`` in order of first appearance (-1 where unused) and presence ``(B, S)``;
    a sample without symbols gets one present stream of slot -1. ``S`` is the batch's largest symbol count,
    or ``width`` when given: a width known before the data is seen keeps a compiled graph free of
    data-dependent shapes (``max_streams`` when compiling without one).
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
    limit = max_streams if width is None else min(width, max_streams)
    if limit == max_streams:
        bound = f"max_streams={max_streams} (raise the config's max_streams to run it)"
    else:
        bound = f"the {limit} streams given"
    if is_compiling():  # the check stays in the graph; the width cannot come from the data
        refused(counts > limit, f"an input has more distinct symbols than {bound}")
        width = limit
    else:  # one read of the data decides both the check and the width
        largest = int(counts.max()) if batch else 0
        if largest > limit:
            raise ValueError(f"input {int(counts.argmax())} has {largest} distinct symbols, more than {bound}")
        width = max(largest, 1) if width is None else width
    # Streams in order of first appearance: an order that renaming preserves, so a renamed input
    # runs the very same computations (bit for bit) with the symbol columns permuted.
    order = torch.argsort(first, dim=1, stable=True)[:, :width]
    present = torch.arange(width, device=device)[None, :] < counts[:, None]
    slots = torch.where(present, order, torch.full_like(order, -1))
    present[:, 0] |= counts == 0  # a symbol-free input still runs as one stream
    return slots, present


# Copied from hf_symbolinv.models.symbolinv.streams.check_given_streams
def check_given_streams(given: torch.LongTensor, computed: torch.LongTensor, name: str) -> None:
    """Streams a data collator gave (``name``) must be those the model computes from the ids."""
    if given.shape != computed.shape or refused(given != computed, f"{name} differ from the ids' streams"):
        raise ValueError(
            f"{name} (shape {tuple(given.shape)}) does not match input_ids: it must hold every sample's "
            f"symbols in order of first appearance, -1 where unused (here {computed.tolist()})"
        )


# Copied from hf_symbolinv.models.symbolinv.streams.check_token_ids
def check_token_ids(ids: torch.LongTensor, name: str, vocab_size: int, allow_ignore: bool = False) -> None:
    """Token ids must be ``(batch, length)``, non-empty and inside the vocabulary (``-100`` allowed in labels);
    the error names the first bad ``[sample, position]``."""
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, length), got {tuple(ids.shape)}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)}): give at least one token per input")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    low = -100 if allow_ignore else 0
    bad = ((ids < 0) & (ids != low)) | (ids >= vocab_size)
    if refused(bad, f"{name} holds an id outside the vocabulary (0..{vocab_size - 1})"):
        sample, position = (int(v) for v in bad.nonzero()[0])
        value = int(ids[sample, position])
        raise ValueError(f"{name}[{sample}, {position}] = {value} is outside the vocabulary (0..{vocab_size - 1})")


# Copied from hf_symbolinv.models.symbolinv.streams.stream_cross_entropy
def stream_cross_entropy(
    logits: torch.Tensor,
    labels: torch.LongTensor,
    num_items_in_batch: int | torch.Tensor | None,
    describe_impossible: Callable[[int], str],
) -> torch.Tensor:
    """Cross-entropy over the stream projection's logits, where symbols absent from the input score -inf.

    A label the projection cannot produce (an absent symbol) would give an infinite loss: it is refused,
    naming ``labels[sample, position]`` and, through ``describe_impossible(label)``, why. With
    ``num_items_in_batch`` (Trainer's gradient accumulation) the loss is summed and divided by it.
    """
    valid = labels != -100
    target_logits = logits.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    impossible = valid & torch.isinf(target_logits)
    if refused(impossible, "labels hold a token the model cannot emit for its input"):
        sample, position = (int(v) for v in impossible.nonzero()[0])
        value = int(labels[sample, position])
        raise ValueError(f"labels[{sample}, {position}] = {value} is {describe_impossible(value)}")
    reduction = "mean" if num_items_in_batch is None else "sum"
    loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100, reduction=reduction)
    if num_items_in_batch is not None:
        loss = loss / num_items_in_batch
    return loss
