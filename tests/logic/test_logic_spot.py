"""The optional Spot backend: compared with the native engine only when ``import spot`` works."""

from __future__ import annotations

import random
import time

import pytest

from hf_symbolinv.logic import Trace, Verdict, check_ltl, random_ltl_formula, random_prop_formula, solve_ltl
from hf_symbolinv.logic.spot_backend import run_with_timeout, spot_available

needs_spot = pytest.mark.skipif(not spot_available(), reason="Spot is not installed (not on PyPI)")


def _slow(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


def test_timeout_runner():
    assert run_with_timeout(_slow, (0.0,), None) == (True, "done")
    assert run_with_timeout(_slow, (0.0,), 5.0) == (True, "done")
    start = time.perf_counter()
    assert run_with_timeout(_slow, (5.0,), 0.2) == (False, None)
    assert time.perf_counter() - start < 2.0


@needs_spot
def test_check_agrees_with_spot():
    rng = random.Random(31)
    for _ in range(500):
        names = ["a", "b", "c"][: rng.randint(1, 3)]
        f = random_ltl_formula(rng, (1, 20), names)
        steps = [random_prop_formula(rng, rng.randint(1, 4), names) for _ in range(rng.randint(1, 4))]
        t = Trace(steps[:-1], steps[-1:])
        assert check_ltl(f, t) is check_ltl(f, t, backend="spot")


@needs_spot
def test_solutions_cross_check():
    rng = random.Random(32)
    for _ in range(300):
        f = random_ltl_formula(rng, (1, 35), 5)
        native, spot = solve_ltl(f), solve_ltl(f, backend="spot")
        assert native.status == spot.status
        if native.sat:
            assert check_ltl(f, native.trace, backend="spot") is Verdict.HOLDS
            assert check_ltl(f, spot.trace) is Verdict.HOLDS
