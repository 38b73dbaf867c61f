"""Size, symbols, renaming, compaction and the `exact` comparison."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

from hf_symbolinv.logic import (
    compact,
    compact_mapping,
    format_ltl,
    format_trace,
    formula_size,
    in_ltl_core,
    parse_ltl,
    parse_trace,
    rename_assignment,
    rename_formula,
    rename_trace,
    symbols_of,
    traces_equal_up_to_commutativity,
)

LOGIC_DIR = pathlib.Path(__file__).resolve().parents[2] / "hf_symbolinv" / "logic"


def test_size_and_symbols():
    assert formula_size("&aXb") == 4
    assert formula_size("G a", "infix") == 5  # !(1 U !a)
    assert formula_size("=a^bc", kind="prop") == 5
    assert formula_size("=a^bc") == 5  # as LTL too: <-> and xor stay nodes of their own
    assert in_ltl_core(parse_ltl("=a^bc")).size == 25  # rewritten into ! & | for the LTL vocabulary
    assert symbols_of("U&cXab") == ("c", "a", "b")
    assert symbols_of("c ; { & b a }", kind="trace") == ("c", "b", "a")
    assert symbols_of(parse_trace("b;{&ab}")) == ("b", "a")
    assert symbols_of("b0a1", kind="assignment") == ("b", "a")
    assert symbols_of("a U X b", kind="ltl", notation="infix") == ("a", "b")


def test_rename():
    assert rename_formula("&aXb", {"a": "b", "b": "a"}) == "&bXa"
    assert format_ltl(rename_formula(parse_ltl("&aXb"), {"a": "p1"})) == "& p1 X b"
    assert rename_formula("a & X b", {"b": "c"}, notation="infix") == "a & X c"
    assert rename_formula("=a^bc", {"a": "d"}, kind="prop") == "=d^bc"
    assert rename_trace("a;&ab;{b}", {"a": "c"}) == "c;&cb;{b}"
    assert format_trace(rename_trace(parse_trace("a;{!a}"), {"a": "x"})) == "x;{!x}"
    assert rename_assignment("a1b0", {"a": "c"}) == "b0c1"  # re-sorted by new name
    assert rename_assignment({"a": True}, {"a": "z"}) == {"z": True}
    with pytest.raises(ValueError):
        rename_formula("&ab", {"a": "b"})  # would merge a and b


def test_compact():
    trace = parse_trace("c;{&ab}")
    formula = parse_ltl("U&aXbc")
    mapping = compact_mapping(trace, formula)  # first appearance in the trace first
    assert mapping == {"c": "a", "a": "b", "b": "c"}
    new_trace, new_formula = compact(trace, formula)
    assert format_trace(new_trace) == "a;{&bc}"
    assert format_ltl(new_formula) == "U&bXca"
    assert compact_mapping(parse_ltl("& p7 p3")) == {"p7": "a", "p3": "b"}
    assert compact_mapping(parse_ltl("& p7 p3"), names=["x", "y"]) == {"p7": "x", "p3": "y"}
    assert compact({"q": True, "p": False}) == [{"a": True, "b": False}]


def test_exact_up_to_commutativity():
    assert traces_equal_up_to_commutativity("a;&ab;{b}", "a;&ba;{b}")
    assert traces_equal_up_to_commutativity("{|&ab!c}", "{|!c&ba}")
    assert not traces_equal_up_to_commutativity("{&a&bc}", "{&&abc}")  # associativity is not included
    assert not traces_equal_up_to_commutativity("a;{b}", "{a;b}")  # same steps, different shape
    assert not traces_equal_up_to_commutativity("a;{b}", "a;{b")  # does not parse
    assert traces_equal_up_to_commutativity("a; cycle{a & b}", "a; cycle{b & a}", notation="infix")


def test_no_torch_in_the_logic_package():
    for path in LOGIC_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(not alias.name.startswith("torch") for alias in node.names), path
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("torch"), path
    # Importing every module with torch made unimportable and the parent package's __init__
    # bypassed (it may register torch models) must work.
    code = f"""
import importlib, importlib.abc, sys, types
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked")
        return None
sys.meta_path.insert(0, Block())
pkg = types.ModuleType("hf_symbolinv")
pkg.__path__ = [{str(LOGIC_DIR.parent)!r}]
sys.modules["hf_symbolinv"] = pkg
import hf_symbolinv.logic as logic
for name in ["formula", "notation", "ltl", "prop", "helpers", "random_formulas", "spot_backend"]:
    importlib.import_module("hf_symbolinv.logic." + name)
assert logic.check_ltl("&aXb", "a;b;{{1}}")
assert "torch" not in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_commute_operands_swaps_only_commutative_operands_and_reaches_every_order():
    """Against a naive reference: every way of ordering the operands of the & | <-> xor nodes (and no other), each
    drawn by some generator; each drawn form holds in exactly the states the formula holds in."""
    import itertools
    import random

    from hf_symbolinv.logic import (
        And,
        Equiv,
        Or,
        Xor,
        commute_operands,
        evaluate_prop,
        format_prop,
        parse_prop,
        random_prop_formula,
    )

    def orders(f):
        """Every form of ``f`` with commutative operands in either order (the naive reference)."""
        if not f.children:
            return {format_prop(f)}
        kids = [orders(c) for c in f.children]
        if len(kids) == 1:
            return {format_prop(f)[: -len(format_prop(f.children[0]))] + k for k in kids[0]}
        op = format_prop(f)[0]
        pairs = set(itertools.product(*kids))
        if isinstance(f, (And, Or, Equiv, Xor)):
            pairs |= {(b, a) for a, b in pairs}
        return {op + a + b for a, b in pairs}

    rng = random.Random(0)
    for _ in range(60):
        f = random_prop_formula(rng, rng.randint(3, 13), ["a", "b", "c"])
        reference = orders(f)
        drawn = {format_prop(commute_operands(f, random.Random(seed))) for seed in range(400)}
        assert drawn == reference  # 400 draws over at most 2^6 forms: every one is met
        for text in drawn:
            g = parse_prop(text)
            assert g.size == f.size
            for values in itertools.product((False, True), repeat=3):
                state = dict(zip("abc", values))
                assert evaluate_prop(g, state) == evaluate_prop(f, state)
    assert {format_ltl(commute_operands(parse_ltl("&Uab!Xc"), random.Random(s))) for s in range(50)} == {
        "&Uab!Xc",
        "&!XcUab",
    }  # U keeps its order
