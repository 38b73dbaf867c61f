"""The differentiable tree interpreter of the Differentiable Tree Machine / Differentiable Tree Experts.

A binary tree of depth at most ``max_depth`` is a Tensor Product Representation (TPR): a matrix
``(filler_dim, num_roles)`` whose column ``r`` is the filler of the node at tree position ``r``. Roles
are one-hot (so unbinding is exact), positions are numbered breadth-first (root 0, children of
``i`` at ``2i+1`` and ``2i+2``). The structural operations are linear maps on the role axis,
precomputed once as buffers (and applied as the gathers they are: each row of a matrix holds at most one 1, so
``tpr @ M.T`` reads one source column per target role, or none):

- ``D0`` / ``D1`` (car / cdr) move the left / right subtree up to the root;
- ``E0`` / ``E1`` move a whole tree down into the left / right subtree (nodes that would fall below
  ``max_depth`` are dropped);
- ``CONS(a, b, s) = E0 a + E1 b + s ⊗ r_root``.

A tree in plain Python is a leaf label (``str``) or a tuple ``(label, left, right)`` whose children
may be ``None``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .bracketed import Tree


def num_roles_for_depth(max_depth: int) -> int:
    """Number of tree positions of a binary tree whose deepest node is at depth ``max_depth``."""
    return 2 ** (max_depth + 1) - 1


def _position_paths(max_depth: int) -> list[tuple[int, ...]]:
    # Breadth-first order matches the heap numbering: position i has children 2i+1, 2i+2.
    paths: list[tuple[int, ...]] = [()]
    for path in paths:
        if len(path) < max_depth:
            paths.append(path + (0,))
            paths.append(path + (1,))
    return paths


def _operator_matrices(max_depth: int) -> dict[str, torch.Tensor]:
    paths = _position_paths(max_depth)
    index = {path: i for i, path in enumerate(paths)}
    n = len(paths)
    mats = {name: torch.zeros(n, n) for name in ("D0", "D1", "E0", "E1")}
    for path, i in index.items():
        for branch, (down, up) in enumerate((("E0", "D0"), ("E1", "D1"))):
            child = (branch,) + path
            if child in index:
                # Column = source role, row = target role: new_tpr = tpr @ M.T in role space.
                mats[down][index[child], i] = 1.0
                mats[up][i, index[child]] = 1.0
    return mats


class TreeInterpreter(nn.Module):
    """car / cdr / cons on TPRs, the blended step of the DTM, and encoding/decoding of trees.

    Args:
        max_depth: the deepest node depth representable (the root is depth 0).
    """

    def __init__(self, max_depth: int) -> None:
        super().__init__()
        if not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be an int >= 1, got {max_depth!r}")
        self.max_depth = max_depth
        self.num_roles = num_roles_for_depth(max_depth)
        for name, mat in _operator_matrices(max_depth).items():
            self.register_buffer(name, mat, persistent=False)
            self.register_buffer(f"{name}_source", torch.zeros(self.num_roles, dtype=torch.long), persistent=False)
        self.register_buffer("root_role", torch.zeros(self.num_roles), persistent=False)
        self.reset_operators()

    @torch.no_grad()
    def reset_operators(self) -> None:
        """(Re)compute the operator buffers in place. They are not saved (they follow from ``max_depth``), so a
        model loaded with ``from_pretrained``, which builds modules without filling such buffers, calls this
        from its ``_init_weights``."""
        for name, mat in _operator_matrices(self.max_depth).items():
            getattr(self, name).copy_(mat)
            # The source role of each target role; num_roles (a zero column appended) where none moves there.
            source = torch.where(mat.sum(-1) > 0, mat.argmax(-1), torch.full_like(mat.argmax(-1), self.num_roles))
            getattr(self, f"{name}_source").copy_(source)
        self.root_role.zero_()
        self.root_role[0] = 1.0

    # -- the operators (tpr: (..., filler_dim, num_roles)) -------------------------------------
    def _apply_op(self, tpr: torch.Tensor, name: str) -> torch.Tensor:
        # Equal to ``tpr @ M.T`` (tested), in O(roles) instead of O(roles²): the dense product dominated training.
        source = getattr(self, f"{name}_source").to(tpr.device)
        return F.pad(tpr, (0, 1)).index_select(-1, source)

    def car(self, tpr: torch.Tensor) -> torch.Tensor:
        """The left subtree, moved to the root."""
        return self._apply_op(tpr, "D0")

    def cdr(self, tpr: torch.Tensor) -> torch.Tensor:
        """The right subtree, moved to the root."""
        return self._apply_op(tpr, "D1")

    def cons(self, left: torch.Tensor, right: torch.Tensor, root_filler: torch.Tensor) -> torch.Tensor:
        """A new tree with ``root_filler`` (``(..., filler_dim)``) at the root over ``left`` and ``right``."""
        root = self.root_role.to(dtype=left.dtype, device=left.device)
        return self._apply_op(left, "E0") + self._apply_op(right, "E1") + root_filler.unsqueeze(-1) * root

    def step(
        self,
        memory: torch.Tensor,
        op_weights: torch.Tensor,
        arg_weights: torch.Tensor,
        root_filler: torch.Tensor,
    ) -> torch.Tensor:
        """One blended interpreter step.

        Args:
            memory: past trees, ``(batch, num_trees, filler_dim, num_roles)``.
            op_weights: ``(batch, 3)`` weights of car, cdr, cons (usually a softmax).
            arg_weights: ``(batch, 2, num_trees)`` weights over memory for the car argument and the cdr
                argument, which cons reuses as its left and right (as in the DTM); or
                ``(batch, 4, num_trees)`` for separate car, cdr, cons-left and cons-right arguments.
            root_filler: ``(batch, filler_dim)`` the new root of cons.

        Returns:
            the new tree ``w_car·CAR(x0) + w_cdr·CDR(x1) + w_cons·CONS(x0, x1, s)``.
        """
        if memory.dim() != 4:
            raise ValueError(f"memory must be (batch, num_trees, filler_dim, num_roles), got {tuple(memory.shape)}")
        if op_weights.shape[-1] != 3:
            raise ValueError(f"op_weights must end with 3 (car, cdr, cons), got {tuple(op_weights.shape)}")
        # Arguments are weighted sums of past trees: (batch, 3, filler, roles).
        args = torch.einsum("bkt,btfr->bkfr", arg_weights, memory)
        if args.shape[1] == 2:
            car_arg, cdr_arg, cons_left, cons_right = args[:, 0], args[:, 1], args[:, 0], args[:, 1]
        elif args.shape[1] == 4:
            car_arg, cdr_arg, cons_left, cons_right = args.unbind(1)
        else:
            raise ValueError(f"arg_weights must be (batch, 2 or 4, num_trees), got {tuple(arg_weights.shape)}")
        w = op_weights.unsqueeze(-1).unsqueeze(-1)
        return (
            w[:, 0] * self.car(car_arg)
            + w[:, 1] * self.cdr(cdr_arg)
            + w[:, 2] * self.cons(cons_left, cons_right, root_filler)
        )

    # -- Python trees <-> TPRs -------------------------------------------------------------------
    def tree_to_positions(self, tree: Tree | None) -> dict[int, str]:
        """The labels of ``tree`` by position; a ValueError names the first node below ``max_depth``."""
        out: dict[int, str] = {}

        def visit(node: Tree | None, pos: int, depth: int, path: str) -> None:
            if node is None:
                return
            if depth > self.max_depth:
                raise ValueError(
                    f"tree is deeper than max_depth={self.max_depth}: node at path {path or 'root'!r} has depth {depth}"
                )
            if isinstance(node, str):
                out[pos] = node
                return
            if not (isinstance(node, tuple) and len(node) == 3 and isinstance(node[0], str)):
                raise ValueError(f"a tree node must be a str or (label, left, right), got {node!r} at path {path!r}")
            out[pos] = node[0]
            visit(node[1], 2 * pos + 1, depth + 1, path + "0")
            visit(node[2], 2 * pos + 2, depth + 1, path + "1")

        visit(tree, 0, 0, "")
        return out

    def encode(
        self, tree: Tree | None, fillers: dict[str, torch.Tensor] | torch.Tensor, vocab: dict[str, int] | None = None
    ) -> torch.Tensor:
        """The TPR ``(filler_dim, num_roles)`` of ``tree``.

        ``fillers`` is either a mapping label -> vector, or a matrix indexed through ``vocab`` (label -> row).
        """
        positions = self.tree_to_positions(tree)
        if isinstance(fillers, dict):
            dim = next(iter(fillers.values())).shape[-1]
            ref = next(iter(fillers.values()))
        else:
            dim, ref = fillers.shape[-1], fillers
        tpr = torch.zeros(dim, self.num_roles, dtype=ref.dtype, device=ref.device)
        for pos, label in positions.items():
            if isinstance(fillers, dict):
                if label not in fillers:
                    raise ValueError(f"unknown label {label!r} at position {pos}")
                tpr[:, pos] = fillers[label]
            else:
                if vocab is None or label not in vocab:
                    raise ValueError(f"unknown label {label!r} at position {pos}")
                tpr[:, pos] = fillers[vocab[label]]
        return tpr

    def decode(
        self, tpr: torch.Tensor, filler_table: torch.Tensor, labels: list[str], empty_threshold: float = 0.5
    ) -> Tree | None:
        """The tree nearest ``tpr``: unbind every role, take the nearest filler (Euclidean) or leave the
        position empty when its filler's norm is below ``empty_threshold`` × the smallest filler norm.
        Nodes whose parent is empty are dropped, so the result is always a tree."""
        if filler_table.shape[0] != len(labels):
            raise ValueError(f"filler_table has {filler_table.shape[0]} rows but {len(labels)} labels")
        # One-hot roles: unbinding role r is reading column r.
        cols = tpr.detach().T.to(filler_table.dtype)  # (roles, filler_dim)
        min_norm = filler_table.norm(dim=-1).min().clamp_min(1e-12)
        dists = torch.cdist(cols, filler_table)
        nearest = dists.argmin(dim=-1).tolist()
        present = (cols.norm(dim=-1) >= empty_threshold * min_norm).tolist()

        def build(pos: int) -> Tree | None:
            if pos >= self.num_roles or not present[pos]:
                return None
            label = labels[nearest[pos]]
            left, right = build(2 * pos + 1), build(2 * pos + 2)
            if left is None and right is None:
                return label
            return (label, left, right)

        return build(0)
