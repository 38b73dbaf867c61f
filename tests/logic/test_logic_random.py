"""Random formulas with the DeepLTL distribution, and the per-size gate."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from hf_symbolinv.logic import (
    LTL_PRIORITIES,
    PROP_PRIORITIES,
    SizeGate,
    format_ltl,
    format_prop,
    random_ltl_formula,
    random_prop_formula,
    random_prop_formula_of_at_least,
    symbols_of,
)


def _ops(f) -> Counter:
    return Counter(node.op for node in f.walk())


def test_reproducible_from_seed():
    first = [format_ltl(random_ltl_formula(random.Random(5), (1, 35), 5)) for _ in range(3)]
    again = [format_ltl(random_ltl_formula(random.Random(5), (1, 35), 5)) for _ in range(3)]
    assert first == again
    rng1, rng2 = random.Random(9), random.Random(9)
    assert [format_prop(random_prop_formula(rng1, 20, 5)) for _ in range(20)] == [
        format_prop(random_prop_formula(rng2, 20, 5)) for _ in range(20)
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 35, 50])
def test_exact_requested_size(size):
    rng = random.Random(size)
    for _ in range(50):
        assert random_ltl_formula(rng, size, 5).size == size
        assert random_prop_formula(rng, size, 5).size == size


def test_size_range_is_uniform():
    rng = random.Random(1)
    sizes = Counter(random_ltl_formula(rng, (1, 10), 5).size for _ in range(5000))
    assert set(sizes) == set(range(1, 11))
    assert max(sizes.values()) / min(sizes.values()) < 1.4


def test_default_ltl_operators_and_weights():
    rng = random.Random(2)
    roots = Counter()
    ops = Counter()
    for _ in range(4000):
        f = random_ltl_formula(rng, (3, 35), 5)
        roots[f.op] += 1
        ops.update(_ops(f))
    # Only the DeepLTL operators: not, X, U, and, constants, symbols.
    assert set(ops) == {"not", "X", "U", "and", "true", "false", "ap"}
    # At size >= 3 the root is one of not/X/U/and with priority 1 each.
    assert set(roots) == {"not", "X", "U", "and"}
    for op in roots:
        assert abs(roots[op] / 4000 - 0.25) < 0.03
    # Leaves: ap has priority 5 (the symbol count), true and false 1 each.
    leaves = ops["ap"] + ops["true"] + ops["false"]
    assert abs(ops["ap"] / leaves - 5 / 7) < 0.02
    assert abs(ops["true"] / leaves - 1 / 7) < 0.02


def test_symbols_uniform_and_named():
    rng = random.Random(3)
    counts = Counter()
    for _ in range(2000):
        counts.update(n.name for n in random_ltl_formula(rng, 15, 5).walk() if n.op == "ap")
    assert set(counts) == set("abcde")
    assert max(counts.values()) / min(counts.values()) < 1.15
    f = random_ltl_formula(rng, 30, ["p1", "p2", "req_ack"])
    assert set(symbols_of(f)) <= {"p1", "p2", "req_ack"}
    assert symbols_of(random_ltl_formula(rng, 9, 0)) == ()  # only constants


def test_prop_defaults_and_custom_priorities():
    rng = random.Random(4)
    ops = Counter()
    for _ in range(2000):
        ops.update(_ops(random_prop_formula(rng, (3, 35), 5)))
    assert set(ops) == {"not", "and", "or", "equiv", "xor", "true", "false", "ap"}
    assert 0.35 < ops["equiv"] / ops["and"] < 0.65  # 0.5 vs 1
    assert PROP_PRIORITIES["xor"] == 0.5 and LTL_PRIORITIES["U"] == 1 and LTL_PRIORITIES["or"] == 0
    only_and = {"and": 1, "ap": 1}
    f = random_prop_formula(rng, 9, 3, priorities=only_and)
    assert set(_ops(f)) == {"and", "ap"}
    # Derived LTL operators may be given priorities; they are rewritten into the core.
    g = random_ltl_formula(rng, 20, 3, priorities={"G": 1, "F": 1, "R": 1, "W": 1, "implies": 1, "ap": 1})
    assert set(_ops(g)) <= {"not", "X", "U", "and", "or", "true", "false", "ap"}
    with pytest.raises(ValueError):
        random_ltl_formula(rng, 5, 3, priorities={"nonsense": 1})
    with pytest.raises(ValueError):
        random_ltl_formula(rng, 0, 3)


def test_trivial_simplification():
    rng = random.Random(6)
    for _ in range(500):
        f = random_ltl_formula(rng, (1, 35), 5, simplify=True)
        for node in f.walk():
            kids = node.children
            if node.op == "not":
                assert kids[0].op not in ("not", "true", "false")
            if node.op in ("and", "X"):
                assert all(k.op not in ("true", "false") for k in kids)
            if node.op == "and":
                assert kids[0] != kids[1]
            if node.op == "U":
                assert kids[1].op != "true" and kids[0].op != "false" and kids[0] != kids[1]


def test_every_constant_leaf_takes_a_node_with_it_when_simplified():
    # What random_prop_formula_of_at_least relies on: a drawn tree of n nodes with k >= 1 constant leaves simplifies
    # to a constant or to at most n - k nodes (the drawn tree is the same stream without the identities).
    tight = 0
    for seed in range(6000):
        size = 1 + seed % 35
        drawn = random_prop_formula(random.Random(seed), size, 5)
        simplified = random_prop_formula(random.Random(seed), size, 5, simplify=True)
        constants = sum(node.op in ("true", "false") for node in drawn.walk())
        assert drawn.size == size
        if constants and simplified.size > 1:
            assert simplified.size <= size - constants, (seed, format_prop(drawn), format_prop(simplified))
            tight += simplified.size == size - constants
    assert tight > 20  # reached: no slack to spare
    assert random_prop_formula_of_at_least(random.Random(0), 5, 6) is None  # smaller than asked: nothing drawn
    assert PROP_PRIORITIES.get("implies", 0) == 0  # "->" keeps its constants: the bound needs it undrawn


def test_a_draw_of_at_least_is_the_same_draw_or_provably_smaller():
    given_up = 0
    for seed in range(4000):
        size, at_least = 20 + seed % 16, 1 + seed % 35
        rng_at_least, rng = random.Random(seed), random.Random(seed)
        maybe = random_prop_formula_of_at_least(rng_at_least, size, at_least)
        formula = random_prop_formula(rng, size, 5, simplify=True)
        if maybe is None:
            assert formula.size < at_least
            given_up += 1
        else:
            assert maybe == formula
            assert rng_at_least.random() == rng.random()  # the stream consumed alike
    assert given_up > 1000


def test_size_gate():
    gate = SizeGate(total=100, alpha=0.112, min_size=1, max_size=35, start_from=10)
    target = 100 * (1 - 0.112) / 26  # 26 counted bins (sizes 10..35)
    assert gate.target == pytest.approx(target)
    assert not gate.accepts(0) and not gate.accepts(36)
    kept = 0
    while gate.accepts(12):
        gate.record(12)
        kept += 1
    assert kept == 4  # ceil(3.415)
    assert gate.accepts(3)  # small sizes have the same cap but are not waited for
    assert not gate.full()
    for size in range(10, 36):
        while gate.accepts(size):
            gate.record(size)
    assert gate.full()
    assert gate.accepts(3)
