"""The stream layout of the Symbol-Invariant Transformer: which sample and symbol slot each stream stands for.

Each sample has one stream per distinct symbol of its input (one stream when it has none). Two layouts hold
them as a flat ``(N, length, d_model)`` tensor:

* packed: only the streams that exist, ``N = sum of the samples' symbol counts``. Training and
  cache-free forwards use it, so cost follows the mean symbol count, not the maximum.
* padded: ``N = batch * S`` with ``S`` the largest symbol count of the batch, padding streams
  flagged absent. The encoder's output and the generation caches use it because generation
  reorders and repeats every tensor on dim 0 (beams): batch stays on dim 0 and streams are
  folded into the heads dimension of the caches.

Absent streams never enter a mean, a restore or a logit, so they never change a present stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedConfig

#: Score penalty per rank of first appearance: far below any meaningful score difference, far above
#: float rounding of the (bit-identical) scores it separates.
TIE_BREAK = 1e-5


def is_compiling() -> bool:
    """Whether ``torch.compile`` is tracing this call (its graph then needs shapes that do not depend on data)."""
    return torch.compiler.is_compiling()


def refused(bad: torch.Tensor, compiled_message: str) -> bool:
    """Whether any element of ``bad`` is set, so that the caller raises its detailed error (which reads the
    position from the data). Inside a compiled graph the check is an assertion the graph keeps, raising
    ``compiled_message`` without the position, and this returns False."""
    if is_compiling():
        torch._assert_async(~bad.any(), compiled_message)
        return False
    return bool(bad.any())


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


def stream_table(
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None,
    config: PreTrainedConfig,
    given: torch.LongTensor | None = None,
) -> tuple[torch.LongTensor, torch.BoolTensor]:
    """Slots ``(B, S)`` (in order of first appearance, -1 where unused) and presence ``(B, S)`` of every
    sample's streams.

    ``given``: the slots as a data collator computed them (``stream_slots``); their width sets ``S``, so that
    a compiled model sees the same shapes for every batch of a bucket. They must be what the ids give.
    """
    batch = input_ids.shape[0]
    device = input_ids.device
    if config.embedding_type != "streams":
        slots = torch.full((batch, 1), -1, dtype=torch.long, device=device)
        present = torch.ones(batch, 1, dtype=torch.bool, device=device)
    else:
        is_symbol = input_ids >= config.num_base_tokens
        if attention_mask is not None:
            is_symbol = is_symbol & attention_mask.bool()
        token_slots = torch.where(is_symbol, input_ids - config.num_base_tokens, -1)
        width = given.shape[-1] if given is not None and given.dim() == 2 else None
        slots, present = first_appearance_streams(token_slots, config.num_symbol_slots, config.max_streams, width)
    if given is not None:
        check_given_streams(given, slots, "stream_slots")
    return slots, present


def check_given_streams(given: torch.LongTensor, computed: torch.LongTensor, name: str) -> None:
    """Streams a data collator gave (``name``) must be those the model computes from the ids."""
    if given.shape != computed.shape or refused(given != computed, f"{name} differ from the ids' streams"):
        raise ValueError(
            f"{name} (shape {tuple(given.shape)}) does not match input_ids: it must hold every sample's "
            f"symbols in order of first appearance, -1 where unused (here {computed.tolist()})"
        )


def make_layout(slots: torch.LongTensor, present: torch.BoolTensor, packed: bool, dtype: torch.dtype) -> StreamLayout:
    """The layout of ``(B, S)`` streams; a compiled graph always gets the padded one (packing is data-dependent)."""
    packed = packed and not is_compiling()
    batch, width = slots.shape
    sample_index = torch.arange(batch, device=slots.device).repeat_interleave(width)
    flat_present = present.reshape(-1)
    counts = present.sum(1).to(dtype)
    if packed:
        rows = flat_present.nonzero().squeeze(1)
        return StreamLayout(sample_index[rows], slots.reshape(-1)[rows], flat_present[rows], counts, batch, rows, True)
    all_present = False if is_compiling() else bool(flat_present.all())  # masking an all-present batch changes nothing
    return StreamLayout(sample_index, slots.reshape(-1), flat_present, counts, batch, None, all_present)


def stream_symbol_mask(ids: torch.LongTensor, layout: StreamLayout, num_base: int) -> torch.BoolTensor:
    """``(N, L)``: where each stream's own symbol occurs."""
    per_stream = ids[layout.sample_index]
    slot = layout.slot[:, None]
    return (per_stream == num_base + slot) & (slot >= 0)


def aggregate_streams(
    hidden: torch.Tensor,
    symbol_mask: torch.BoolTensor,
    layout: StreamLayout,
    pooling: nn.Module | None = None,
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


def to_padded(packed: torch.Tensor, layout: StreamLayout, width: int) -> torch.Tensor:
    """``(N, L, d)`` packed streams -> ``(B, S, L, d)``."""
    if layout.padded_rows is None:
        return packed.reshape(layout.num_samples, width, *packed.shape[1:])
    out = packed.new_zeros(layout.num_samples * width, *packed.shape[1:])
    out[layout.padded_rows] = packed
    return out.reshape(layout.num_samples, width, *packed.shape[1:])


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
