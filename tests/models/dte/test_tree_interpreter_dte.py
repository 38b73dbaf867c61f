"""The tree interpreter: exact car/cdr/cons identities, encode/decode, depth errors, differentiability."""

import pytest
import torch

from hf_symbolinv.models.dte import TreeInterpreter, num_roles_for_depth

LABELS = ["a", "b", "c", "d", "f", "g", "s"]


def _fillers(dim: int = 8, dtype=torch.float32) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(len(LABELS), dim, dtype=dtype)


def _vocab() -> dict[str, int]:
    return {label: i for i, label in enumerate(LABELS)}


def test_num_roles():
    assert num_roles_for_depth(1) == 3
    assert num_roles_for_depth(3) == 15
    assert TreeInterpreter(3).D0.shape == (15, 15)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_car_cdr_undo_cons(dtype):
    interp = TreeInterpreter(3)
    fillers = _fillers(dtype=dtype)
    a = interp.encode(("f", "a", ("g", "b", "c")), fillers, _vocab())
    b = interp.encode(("g", "d", "a"), fillers, _vocab())
    s = fillers[_vocab()["s"]]
    tree = interp.cons(a, b, s)
    torch.testing.assert_close(interp.car(tree), a, rtol=0, atol=1e-6)
    torch.testing.assert_close(interp.cdr(tree), b, rtol=0, atol=1e-6)
    # The root of the new tree is exactly the new filler.
    torch.testing.assert_close(tree[:, 0], s)


def test_cons_drops_nodes_below_max_depth():
    interp = TreeInterpreter(2)
    fillers = _fillers()
    deep = interp.encode(("f", ("g", "a", "b"), "c"), fillers, _vocab())
    tree = interp.cons(deep, deep, fillers[_vocab()["s"]])
    assert interp.decode(tree, fillers, LABELS) == ("s", ("f", "g", "c"), ("f", "g", "c"))


def test_encode_decode_round_trip():
    interp = TreeInterpreter(3)
    fillers = _fillers()
    tree = ("f", ("g", "a", None), ("g", "b", ("f", "c", "d")))
    assert interp.decode(interp.encode(tree, fillers, _vocab()), fillers, LABELS) == tree


def test_tree_deeper_than_max_depth_names_the_node():
    interp = TreeInterpreter(1)
    with pytest.raises(ValueError, match=r"deeper than max_depth=1.*path '00'.*depth 2"):
        interp.encode(("f", ("g", "a", "b"), "c"), _fillers(), _vocab())


def test_unknown_label_is_named():
    with pytest.raises(ValueError, match=r"unknown label 'zz' at position 2"):
        TreeInterpreter(2).encode(("f", "a", "zz"), _fillers(), _vocab())


def test_step_with_one_hot_weights_is_exact():
    interp = TreeInterpreter(3)
    fillers = _fillers()
    v = _vocab()
    t0 = interp.encode(("f", "a", ("g", "b", "c")), fillers, v)
    t1 = interp.encode(("g", "d", "a"), fillers, v)
    memory = torch.stack([t0, t1]).unsqueeze(0)  # (1, 2, F, R)
    args = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # car/cons-left <- t0, cdr/cons-right <- t1
    s = fillers[v["s"]].unsqueeze(0)
    for op, expected in ((0, interp.car(t0)), (1, interp.cdr(t1)), (2, interp.cons(t0, t1, s[0]))):
        w = torch.zeros(1, 3)
        w[0, op] = 1.0
        torch.testing.assert_close(interp.step(memory, w, args, s)[0], expected, rtol=0, atol=1e-6)
    assert interp.decode(interp.step(memory, torch.tensor([[0.0, 0.0, 1.0]]), args, s)[0], fillers, LABELS) == (
        "s",
        ("f", "a", ("g", "b", "c")),
        ("g", "d", "a"),
    )


def test_step_with_four_arguments():
    interp = TreeInterpreter(2)
    fillers = _fillers()
    v = _vocab()
    trees = [interp.encode(t, fillers, v) for t in (("f", "a", "b"), ("g", "c", "d"), "a", "b")]
    memory = torch.stack(trees).unsqueeze(0)
    args = torch.eye(4).unsqueeze(0)  # car <- 0, cdr <- 1, cons-left <- 2, cons-right <- 3
    out = interp.step(memory, torch.tensor([[0.0, 0.0, 1.0]]), args, fillers[v["s"]].unsqueeze(0))
    assert interp.decode(out[0], fillers, LABELS) == ("s", "a", "b")
    with pytest.raises(ValueError, match="arg_weights"):
        interp.step(memory, torch.tensor([[0.0, 0.0, 1.0]]), torch.ones(1, 3, 4), fillers[:1])


def test_blended_step_gradcheck():
    interp = TreeInterpreter(2)
    torch.manual_seed(1)
    memory = torch.randn(1, 2, 3, interp.num_roles, dtype=torch.float64, requires_grad=True)
    op_logits = torch.randn(1, 3, dtype=torch.float64, requires_grad=True)
    arg_logits = torch.randn(1, 2, 2, dtype=torch.float64, requires_grad=True)
    root = torch.randn(1, 3, dtype=torch.float64, requires_grad=True)

    def f(memory, op_logits, arg_logits, root):
        return interp.step(memory, op_logits.softmax(-1), arg_logits.softmax(-1), root)

    assert torch.autograd.gradcheck(f, (memory, op_logits, arg_logits, root))


@pytest.mark.parametrize("name", ["D0", "D1", "E0", "E1"])
def test_operators_apply_as_their_matrices(name):
    # The operators run as gathers; they must equal the dense linear maps they stand for.
    interp = TreeInterpreter(4)
    torch.manual_seed(1)
    tpr = torch.randn(3, 5, interp.num_roles, dtype=torch.float64)
    dense = tpr @ getattr(interp, name).double().T
    torch.testing.assert_close(interp._apply_op(tpr, name), dense, rtol=0, atol=0)
