"""Each FOLNet operator against a loop implementation written directly from Table 2 / Table 5."""

from __future__ import annotations

import math

import pytest
import torch

from hf_symbolinv.models.folnet.operators import (
    folnet_activation,
    op_assoc,
    op_bool,
    op_cjoin,
    op_join,
    op_mu,
    op_prod,
    op_trans,
)

B, T, H, S, W = 2, 5, 3, 4, 6


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def causal() -> torch.Tensor:
    return torch.ones(T, T).tril().bool()


def ref_softmax_row(logits: list[float], allowed: list[bool]) -> list[float]:
    exps = [math.exp(v) if ok else 0.0 for v, ok in zip(logits, allowed, strict=True)]
    total = sum(exps)
    return [e / total for e in exps]


def allowed(mask: torch.Tensor | None, x: int, a: int) -> bool:
    return True if mask is None else bool(mask[x, a])


def test_activation_is_ln_one_plus_two_exp() -> None:
    z = torch.linspace(-30, 30, 61, dtype=torch.float64)
    torch.testing.assert_close(folnet_activation(z), torch.log1p(2 * torch.exp(z)))


def test_bool() -> None:
    k, v = torch.randn(B, T, H, W), torch.randn(B, T, W, S)
    out = torch.zeros(B, T, H, S)
    for b in range(B):
        for x in range(T):
            for h in range(H):
                for s in range(S):
                    out[b, x, h, s] = sum(k[b, x, h, w] * v[b, x, w, s] for w in range(W))
    torch.testing.assert_close(op_bool(k, v), out, atol=1e-5, rtol=1e-5)


def test_assoc() -> None:
    k, v = torch.randn(B, T, H, W), torch.randn(B, T, H, W)
    out = torch.zeros(B, H, T, T)
    for b in range(B):
        for h in range(H):
            for x in range(T):
                for y in range(T):
                    out[b, h, x, y] = sum(k[b, x, h, w] * v[b, y, h, w] for w in range(W))
    torch.testing.assert_close(op_assoc(k, v), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_prod(masked: bool) -> None:
    mask = causal() if masked else None
    k, v = torch.randn(B, T, H, W), torch.randn(B, W, T, T)
    out = torch.zeros(B, H, T, T)
    for b in range(B):
        for h in range(H):
            for x in range(T):
                for y in range(T):
                    if allowed(mask, x, y):
                        out[b, h, x, y] = sum(k[b, x, h, w] * v[b, w, x, y] for w in range(W))
    torch.testing.assert_close(op_prod(k, v, mask), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_join(masked: bool) -> None:
    mask = causal() if masked else None
    k, v = torch.randn(B, H, T, T), torch.randn(B, T, H, S)
    out = torch.zeros(B, T, H, S)
    for b in range(B):
        for h in range(H):
            for x in range(T):
                p = ref_softmax_row(k[b, h, x].tolist(), [allowed(mask, x, a) for a in range(T)])
                for s in range(S):
                    out[b, x, h, s] = sum(p[a] * v[b, a, h, s] for a in range(T))
    torch.testing.assert_close(op_join(k, v, mask), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_mu(masked: bool) -> None:
    mask = causal() if masked else None
    k, v = torch.randn(B, H, T, T), torch.randn(B, S, T, T)
    out = torch.zeros(B, T, H, S)
    for b in range(B):
        for h in range(H):
            for x in range(T):
                ok = [allowed(mask, x, a) for a in range(T)]
                p = ref_softmax_row(k[b, h, x].tolist(), ok)
                for s in range(S):
                    out[b, x, h, s] = sum(p[a] * v[b, s, x, a] for a in range(T) if ok[a])
    torch.testing.assert_close(op_mu(k, v, mask), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_cjoin(masked: bool) -> None:
    mask = causal() if masked else None
    k, v = torch.randn(B, T, H, S), torch.randn(B, H, T, T)
    out = torch.zeros(B, T, H, S)
    for b in range(B):
        for h in range(H):
            for s in range(S):
                for x in range(T):
                    # Normalised over the positions x may see: K_hs(a) is a softmax over a.
                    ok = [allowed(mask, x, a) for a in range(T)]
                    p = ref_softmax_row(k[b, :, h, s].tolist(), ok)
                    out[b, x, h, s] = sum(p[a] * v[b, h, x, a] for a in range(T) if ok[a])
    torch.testing.assert_close(op_cjoin(k, v, mask), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_trans(masked: bool) -> None:
    mask = causal() if masked else None
    k, v = torch.randn(B, H, T, T), torch.randn(B, H, T, T)
    out = torch.zeros(B, H, T, T)
    for b in range(B):
        for h in range(H):
            for x in range(T):
                p = ref_softmax_row(k[b, h, x].tolist(), [allowed(mask, x, a) for a in range(T)])
                for y in range(T):
                    # Table 5 masks the premise v_h(a, y) as well: a may only use y <= a.
                    out[b, h, x, y] = sum(p[a] * v[b, h, a, y] for a in range(T) if allowed(mask, a, y))
    torch.testing.assert_close(op_trans(k, v, mask), out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["cjoin", "join", "mu", "prod", "trans"])
def test_causal_mask_hides_the_future(name: str) -> None:
    """Changing every input at positions > 2 leaves outputs at positions <= 2 unchanged."""
    shapes = {
        "cjoin": ((B, T, H, S), (B, H, T, T)),
        "join": ((B, H, T, T), (B, T, H, S)),
        "mu": ((B, H, T, T), (B, S, T, T)),
        "prod": ((B, T, H, W), (B, W, T, T)),
        "trans": ((B, H, T, T), (B, H, T, T)),
    }
    fn = {"cjoin": op_cjoin, "join": op_join, "mu": op_mu, "prod": op_prod, "trans": op_trans}[name]
    k, v = (torch.randn(shape) for shape in shapes[name])
    k2, v2 = k.clone(), v.clone()
    # Perturb every future slot: positions are the dims of size T after the batch dim.
    for t, t2 in ((k, k2), (v, v2)):
        for dim in range(1, t.dim()):
            if t.shape[dim] == T:
                idx = [slice(None)] * t.dim()
                idx[dim] = slice(3, None)
                t2[tuple(idx)] = torch.randn_like(t2[tuple(idx)])
    out, out2 = fn(k, v, causal()), fn(k2, v2, causal())
    # The output's position dim: unary outputs (B, x, H, S), binary outputs (B, H, x, y).
    if name in ("cjoin", "join", "mu"):
        torch.testing.assert_close(out[:, :3], out2[:, :3])
    else:
        torch.testing.assert_close(out[:, :, :3, :3], out2[:, :, :3, :3])


def padding_masks() -> torch.Tensor:
    """(B, T, T): sample b may use positions a < T - b (right padding), and causally for b odd."""
    masks = torch.zeros(B, T, T, dtype=torch.bool)
    for b in range(B):
        masks[b, :, : T - 1 - b] = True
        if b % 2:
            masks[b] &= causal()
    return masks


@pytest.mark.parametrize("name", ["cjoin", "join", "mu", "prod", "trans"])
def test_per_sample_masks_equal_the_per_sample_results(name: str) -> None:
    """A per-sample mask (the model's padding) gives, sample by sample, the 2-D masked result that the
    tests above check against the loops."""
    shapes = {
        "cjoin": ((B, T, H, S), (B, H, T, T)),
        "join": ((B, H, T, T), (B, T, H, S)),
        "mu": ((B, H, T, T), (B, S, T, T)),
        "prod": ((B, T, H, W), (B, W, T, T)),
        "trans": ((B, H, T, T), (B, H, T, T)),
    }
    fn = {"cjoin": op_cjoin, "join": op_join, "mu": op_mu, "prod": op_prod, "trans": op_trans}[name]
    k, v = (torch.randn(shape) for shape in shapes[name])
    masks = padding_masks()
    batched = fn(k, v, masks if name == "cjoin" else masks[:, None])
    for b in range(B):
        torch.testing.assert_close(batched[b : b + 1], fn(k[b : b + 1], v[b : b + 1], masks[b]), atol=1e-5, rtol=1e-5)


def test_cjoin_ignores_huge_hidden_kernel_logits() -> None:
    """A hidden position's kernel logit, however large, neither enters nor underflows the softmax."""
    k, v = torch.randn(B, T, H, S), torch.randn(B, H, T, T)
    mask = causal().clone()
    mask[:, T - 1] = False  # nobody sees the last position
    reference = op_cjoin(k, v, mask)
    k[:, T - 1] = 1e4
    out = op_cjoin(k, v, mask)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, reference, atol=1e-5, rtol=1e-5)


def test_trans_with_a_premise_mask_of_its_own() -> None:
    """Rows x that are not all the rows a (a decoder's new rows): K masked by ``mask`` (x, a), v by
    ``premise_mask`` (a, y), as the loop computes."""
    rows = 2
    k, v = torch.randn(B, H, rows, T), torch.randn(B, H, T, T)
    mask = torch.ones(rows, T, dtype=torch.bool)
    mask[0, T - 1] = False
    premise_mask = causal()
    out = torch.zeros(B, H, rows, T)
    for b in range(B):
        for h in range(H):
            for x in range(rows):
                p = ref_softmax_row(k[b, h, x].tolist(), [bool(mask[x, a]) for a in range(T)])
                for y in range(T):
                    out[b, h, x, y] = sum(p[a] * v[b, h, a, y] for a in range(T) if premise_mask[a, y])
    torch.testing.assert_close(op_trans(k, v, mask, premise_mask), out, atol=1e-5, rtol=1e-5)
