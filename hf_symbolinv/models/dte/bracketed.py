# Copied from hf_symbolinv.utils.trees
"""Binary trees as bracketed strings, in plain Python: the one home of the tree helpers (parse, format, depth, nodes,
leaves, mirror), used by the tree tasks, the dataset builders and the tree family, whose Hub folder holds a checked
copy.

``(f a (g b c))`` is the tree with root ``f`` over leaf ``a`` and the subtree ``(g b c)``.
An empty child is written ``_``; a node with one child is ``(f a _)`` or ``(f _ a)``."""

from __future__ import annotations

import re

#: A tree: a leaf label, or ``(label, left, right)`` whose children may be ``None`` (empty).
Tree = str | tuple

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
EMPTY = "_"


def _tokens(text: str) -> list[tuple[str, int]]:
    return [(m.group(), m.start()) for m in _TOKEN.finditer(text)]


def parse_bracketed(text: str, unary: bool = False) -> Tree:
    """Parse one bracketed tree; a ValueError names the problem and its character position.

    With ``unary``, a node may have one child (as in the original DTM files): ``(X c)`` reads as ``(X c _)``."""
    tokens = _tokens(text)
    if not tokens:
        raise ValueError("empty tree string")
    pos = 0

    def node() -> Tree | None:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"unbalanced bracket: input ends at position {len(text)} inside a node")
        tok, at = tokens[pos]
        pos += 1
        if tok == ")":
            raise ValueError(f"unbalanced bracket: unexpected ')' at position {at}")
        if tok != "(":
            return None if tok == EMPTY else tok
        if pos >= len(tokens) or tokens[pos][0] in "()" or tokens[pos][0] == EMPTY:
            where = tokens[pos][1] if pos < len(tokens) else len(text)
            raise ValueError(f"a node needs a root label after '(' at position {at} (position {where})")
        label = tokens[pos][0]
        pos += 1
        children: list[Tree | None] = []
        while pos < len(tokens) and tokens[pos][0] != ")":
            children.append(node())
        if pos >= len(tokens):
            raise ValueError(f"unbalanced bracket: '(' at position {at} is never closed")
        pos += 1
        if unary and len(children) == 1:
            children.append(None)
        if len(children) != 2:
            expected = "expected 1 or 2" if unary else "binary trees need 2"
            raise ValueError(f"node {label!r} at position {at} has {len(children)} children; {expected}")
        return (label, children[0], children[1])

    try:
        tree = node()
    except RecursionError:
        raise ValueError("the tree is nested too deeply to read") from None
    if tree is None:
        raise ValueError("the whole tree is empty ('_')")
    if pos < len(tokens):
        tok, at = tokens[pos]
        kind = "unbalanced bracket: unexpected ')'" if tok == ")" else f"trailing token {tok!r}"
        raise ValueError(f"{kind} at position {at}")
    return tree


def format_bracketed(tree: Tree | None) -> str:
    """The bracketed string of ``tree`` (the inverse of :func:`parse_bracketed`)."""
    if tree is None:
        return EMPTY
    if isinstance(tree, str):
        return tree
    label, left, right = tree
    return f"({label} {format_bracketed(left)} {format_bracketed(right)})"


def tree_depth(tree: Tree | None) -> int:
    """The depth of the deepest node, the root at depth 0 (-1 for the empty tree)."""
    if tree is None:
        return -1
    if isinstance(tree, str):
        return 0
    return 1 + max(tree_depth(tree[1]), tree_depth(tree[2]))


def mirror(tree: Tree | None) -> Tree | None:
    """The mirror image: the two children swapped at every node."""
    if tree is None or isinstance(tree, str):
        return tree
    label, left, right = tree
    return (label, mirror(right), mirror(left))


def tree_nodes(tree: Tree | None) -> int:
    """The number of nodes (leaves included, empty children not)."""
    if tree is None:
        return 0
    if isinstance(tree, str):
        return 1
    return 1 + tree_nodes(tree[1]) + tree_nodes(tree[2])


def tree_leaves(tree: Tree | None) -> list[str]:
    """The leaf labels, left to right (pre-order)."""
    if tree is None:
        return []
    if isinstance(tree, str):
        return [tree]
    return tree_leaves(tree[1]) + tree_leaves(tree[2])
