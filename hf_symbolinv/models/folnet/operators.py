"""The seven neural logic operators of the FOLNet paper (Table 2), as batched einsums.

Layouts: unary kernels/premises are ``(batch, x, h, s)`` (D1 = H * S factored as in the paper);
binary ones are ``(batch, channel, x, y)``. ``mask`` is a boolean ``(x, a)`` matrix, True where a
position may be used (Table 5: the decoder's causal mask), or a per-sample ``(batch, 1, x, a)`` one
(padding); ``op_cjoin`` takes ``(x, a)`` or ``(batch, x, a)``. Masked softmax-kernel entries are set to
-inf before the softmax and masked premise entries are zeroed, so no masked value can reach the output.
"""

from __future__ import annotations

import math

import torch

OPERATORS = ("bool", "cjoin", "join", "mu", "assoc", "prod", "trans")
# The operators whose kernel is a softmax over the reduction dimension a (Table 2, "Kernel act.").
SOFTMAX_OPERATORS = ("cjoin", "join", "mu", "trans")
UNARY_OUTPUT = ("bool", "cjoin", "join", "mu")
BINARY_OUTPUT = ("assoc", "prod", "trans")


def folnet_activation(z: torch.Tensor) -> torch.Tensor:
    """sigma(z) = ln(1 + 2 e^z): Modus Ponens in logit space (paper eq. 27), computed stably.

    As ``logaddexp(z + ln 2, 0)`` rather than ``softplus``: torch.compile (2.13) takes the strides of softplus'
    backward from its decomposition, laid out as the atoms, while the kernel lays the result out as the incoming
    gradient; where the two differ (einsum outputs, channel permutes) a view in the compiled backward fails."""
    return torch.logaddexp(z + math.log(2.0), z.new_zeros(()))


def _softmax_kernel(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    # logits (..., x, a); a fully masked row would give NaN, so such rows become zeros instead.
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.nan_to_num(probs, nan=0.0)


def _zero(v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return v if mask is None else v.masked_fill(~mask, 0.0)


def op_bool(kernel: torch.Tensor, premise: torch.Tensor) -> torch.Tensor:
    """U <- U x U: u_hs(x) = sum_w K_hw(x) v_ws(x); kernel (B, x, H, W), premise (B, x, W, S)."""
    return torch.einsum("bxhw,bxws->bxhs", kernel, premise)


def op_cjoin(kernel_logits: torch.Tensor, premise: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """U <- U x B: u_hs(x) = sum_a K_hs(a) v_h(x, a); kernel (B, a, H, S) softmaxed over a, premise (B, H, x, a)."""
    if mask is None:
        return torch.einsum("bahs,bhxa->bxhs", torch.softmax(kernel_logits, dim=1), premise)
    # K_hs(a) does not depend on x, so a causal version must normalise over the a each x may see
    # (a softmax over every a would leak the future through its denominator). The shift for
    # stability is the largest logit that some x may see: hidden (padding) logits must not set it.
    visible = mask.any(dim=-2)  # (a) or (batch, a)
    visible = visible[None, :, None, None] if mask.dim() == 2 else visible[:, :, None, None]
    hidden_out = kernel_logits.masked_fill(~visible, float("-inf"))  # before exp: no inf, no NaN gradient
    shift = hidden_out.amax(dim=1, keepdim=True).clamp_min(torch.finfo(kernel_logits.dtype).min)
    weights = torch.exp(hidden_out - shift)
    premise_mask = mask if mask.dim() == 2 else mask[:, None]
    numerator = torch.einsum("bahs,bhxa->bxhs", weights, _zero(premise, premise_mask))
    pattern = "bahs,xa->bxhs" if mask.dim() == 2 else "bahs,bxa->bxhs"
    denominator = torch.einsum(pattern, weights, mask.to(weights.dtype))
    return numerator / denominator.clamp_min(torch.finfo(weights.dtype).tiny)


def op_join(kernel_logits: torch.Tensor, premise: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """U <- B x U: u_hs(x) = sum_a K_h(x, a) v_hs(a); kernel (B, H, x, a), premise (B, a, H, S). Self-attention."""
    return torch.einsum("bhxa,bahs->bxhs", _softmax_kernel(kernel_logits, mask), premise)


def op_mu(kernel_logits: torch.Tensor, premise: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """U <- B x B: u_hs(x) = sum_a K_h(x, a) v_s(x, a); kernel (B, H, x, a), premise (B, S, x, a)."""
    return torch.einsum("bhxa,bsxa->bxhs", _softmax_kernel(kernel_logits, mask), _zero(premise, mask))


def op_assoc(kernel: torch.Tensor, premise: torch.Tensor) -> torch.Tensor:
    """B <- U x U: u_h(x, y) = sum_w K_hw(x) v_hw(y); kernel (B, x, H, W), premise (B, y, H, W)."""
    return torch.einsum("bxhw,byhw->bhxy", kernel, premise)


def op_prod(kernel: torch.Tensor, premise: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """B <- U x B: u_h(x, y) = sum_w K_hw(x) v_w(x, y); kernel (B, x, H, W), premise (B, W, x, y)."""
    return torch.einsum("bxhw,bwxy->bhxy", kernel, _zero(premise, mask))


def op_trans(
    kernel_logits: torch.Tensor,
    premise: torch.Tensor,
    mask: torch.Tensor | None = None,
    premise_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """B <- B x B: u_h(x, y) = sum_a K_h(x, a) v_h(a, y); kernel (B, H, x, a), premise (B, H, a, y). O(L^3).

    ``premise_mask`` (the (a, y) pattern of the premise) defaults to ``mask``; it differs when the rows x
    are not all the rows a (a decoder's new rows against every row, Appendix A.5)."""
    premise_mask = mask if premise_mask is None else premise_mask
    return torch.einsum("bhxa,bhay->bhxy", _softmax_kernel(kernel_logits, mask), _zero(premise, premise_mask))
