"""Results and formula objects are the same in every process, whatever its PYTHONHASHSEED.

This file run as a script (the child, with a hash seed different from the parent's) pickles
formulas and traces and solves a fixed set of formulas; the tests compare with this process.
Regressions: formula hashes used to include ``hash(str)`` (so an unpickled formula was unequal to
the same formula built here), and ``solve_prop`` returned whichever model py-aiger-sat found,
which varied with the hash seed.
"""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

import hf_symbolinv
from hf_symbolinv.logic import (
    Formula,
    Trace,
    format_assignment,
    format_trace,
    parse_ltl,
    parse_prop,
    parse_trace,
    random_ltl_formula,
    random_prop_formula,
    solve_ltl,
    solve_prop,
)

LTL_BUDGETS = (50, 400, 100_000)


def _objects() -> list[Formula | Trace]:
    return [
        parse_ltl("&aXb"),
        parse_prop("=a^b!c"),
        parse_ltl("1 U (p0 & X long_name)", "infix"),
        parse_ltl("|0!1"),
        parse_trace("a;&b!c;{1;!a}"),
    ]


def _formulas() -> tuple[list[Formula], list[Formula]]:
    rng = random.Random(31)
    props = [random_prop_formula(rng, (1, 35), 5) for _ in range(150)]
    return props, [random_ltl_formula(rng, (5, 35), 5) for _ in range(20)]


def _prop_results(formulas: list[Formula]) -> list[str | None]:
    return [None if r.assignment is None else format_assignment(r.assignment) for r in map(solve_prop, formulas)]


def _ltl_results(formulas: list[Formula]) -> list[list[tuple[str, str | None]]]:
    return [
        [(r.status, r.trace and format_trace(r.trace)) for r in (solve_ltl(f, max_work=w) for w in LTL_BUDGETS)]
        for f in formulas
    ]


def _child_main() -> None:
    def attempt(fn, *args):  # one failing part must not hide the others
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported to the parent as text
            return f"{type(exc).__name__}: {exc}"

    objects = _objects()
    props, ltls = _formulas()
    out = {
        "objects": objects,
        "hashes": [hash(o) for o in objects],
        "formulas": props + ltls,
        "prop": attempt(_prop_results, props),
        "ltl": attempt(_ltl_results, ltls),
    }
    sys.stdout.buffer.write(pickle.dumps(out))


@pytest.fixture(scope="module")
def child() -> dict:
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "4343"
    path = os.pathsep.join([str(Path(hf_symbolinv.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, timeout=120, check=True)
    return pickle.loads(done.stdout)


def test_formulas_and_traces_survive_pickling_across_processes(child):
    for theirs, ours, their_hash in zip(child["objects"], _objects(), child["hashes"], strict=True):
        assert theirs == ours and ours == theirs
        assert hash(theirs) == hash(ours) == their_hash  # the hash itself is process-independent
        assert {ours: 1}.get(theirs) == 1
    assert isinstance(child["objects"][-1], Trace)
    props, ltls = _formulas()
    assert child["formulas"] == props + ltls
    assert set(child["formulas"]) == set(props + ltls)


def test_solve_prop_is_the_same_in_every_process(child):
    props, _ = _formulas()
    assert _prop_results(props) == child["prop"]


def test_solve_ltl_with_max_work_is_the_same_in_every_process(child):
    _, formulas = _formulas()
    for f in reversed(formulas):  # a different history of caches than the child's
        solve_ltl(f)
    ours = _ltl_results(formulas)
    assert ours == child["ltl"]
    assert {status for row in ours for status, _ in row} >= {"sat", "timeout"}


if __name__ == "__main__":
    _child_main()
