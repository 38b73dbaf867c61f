"""Throughput of the pure-Python logic engine on random DeepLTL-style formulas (one core).

For each setting (tree size <= 35 over 5 symbols, tree size <= 50 over 10 symbols) it draws
``--n`` formulas (sizes uniform in the range, as ``randltl --tree-size=1..MAX``), then measures

* ``solve``: :func:`solve_ltl` (search plus trace minimisation);
* ``check``: :func:`check_ltl` of each formula against its own solver trace (the verdict must be
  HOLDS) -- the cost of validating a correct prediction; caches are cleared first so every
  check builds its automaton from scratch;
* ``check-foreign``: each formula against the trace of the next formula (mostly FAILS), the cost
  of rejecting a wrong prediction;
* and, for reference, ``solve_prop`` / ``check_assignment`` on PropRandom35-style formulas.

Reference targets (Spot's C++ on this kind of machine in brackets): check median <= 1 ms and
p99 <= 15 ms at size <= 35 / 5 symbols [0.32 ms / 14 ms], median <= 3 ms and p99 <= 400 ms at
size <= 50 / 10 symbols [1.5 ms / 409 ms]; solve median <= 2 ms at size <= 35 [0.6 ms].

Usage: ``python benchmarks/speed/logic.py [--n 1000] [--timeout 10] [--seed 0]``
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from hf_symbolinv.logic import (  # noqa: E402
    TRUE,
    Trace,
    Verdict,
    check_assignment,
    check_ltl,
    clear_caches,
    random_ltl_formula,
    random_prop_formula,
    solve_ltl,
    solve_prop,
)

SETTINGS = [("size<=35, 5 sym", 35, 5), ("size<=50, 10 sym", 50, 10)]


class Timings:
    def __init__(self, name: str, timeout: float | None) -> None:
        self.name = name
        self.timeout = timeout
        self.seconds: list[float] = []
        self.timeouts = 0
        self.overshoots = 0  # calls that ran more than 10% past their time-out

    def run(self, fn: Callable[[], object], timed_out: Callable[[object], bool]) -> object:
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        self.seconds.append(elapsed)
        if timed_out(result):
            self.timeouts += 1
        if self.timeout is not None and elapsed > 1.1 * self.timeout:
            self.overshoots += 1
        return result

    def row(self, setting: str) -> str:
        s = sorted(self.seconds)
        n = len(s)
        p99 = s[min(n - 1, int(0.99 * n))]
        total = sum(s)
        return (
            f"{setting:<18} {self.name:<14} {n:>6} {n / total:>10.0f} {statistics.median(s) * 1e3:>9.3f} "
            f"{p99 * 1e3:>9.3f} {s[-1] * 1e3:>10.3f} {self.timeouts:>8} {self.overshoots:>6}"
        )


HEADER = (
    f"{'setting':<18} {'task':<14} {'calls':>6} {'per s':>10} {'median ms':>9} {'p99 ms':>9} "
    f"{'max ms':>10} {'timeouts':>8} {'>+10%':>6}"
)


def bench_ltl(setting: str, max_size: int, n_symbols: int, n: int, timeout: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    formulas = [random_ltl_formula(rng, (1, max_size), n_symbols) for _ in range(n)]
    solve = Timings("solve", timeout)
    results = [solve.run(lambda f=f: solve_ltl(f, timeout=timeout), lambda r: r.timed_out) for f in formulas]
    traces = [r.trace if r.sat else Trace([], [TRUE]) for r in results]

    clear_caches()  # the minimiser already built the automata of the negations: start cold
    check = Timings("check", timeout)
    for f, r, t in zip(formulas, results, traces):
        if not r.sat:
            continue
        verdict = check.run(lambda f=f, t=t: check_ltl(f, t, timeout=timeout), lambda v: v is Verdict.UNKNOWN)
        assert verdict is not Verdict.FAILS, "a solver trace must satisfy its formula"

    clear_caches()
    foreign = Timings("check-foreign", timeout)
    for k, f in enumerate(formulas):
        t = traces[(k + 1) % n]
        foreign.run(lambda f=f, t=t: check_ltl(f, t, timeout=timeout), lambda v: v is Verdict.UNKNOWN)
    sat = sum(r.sat for r in results)
    unsat = sum(r.unsat for r in results)
    note = f"# {setting}: {sat} sat, {unsat} unsat, {n - sat - unsat} timed out"
    return [solve.row(setting), check.row(setting), foreign.row(setting), note]


def bench_prop(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    formulas = [random_prop_formula(rng, (1, 35), 5) for _ in range(n)]
    solve_prop("&ab")  # warm-up: imports py-aiger / pysat (~0.1 s, once per process)
    solve = Timings("solve_prop", None)
    results = [solve.run(lambda f=f: solve_prop(f), lambda r: False) for f in formulas]
    check = Timings("check_assign", None)
    for f, r in zip(formulas, results):
        if r.sat:
            assert check.run(lambda f=f, r=r: check_assignment(f, r.assignment), lambda v: False)
    return [solve.row("prop size<=35, 5"), check.row("prop size<=35, 5")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="formulas per setting (default 1000)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-prop", action="store_true", help="skip the propositional rows")
    args = parser.parse_args(argv)

    print(f"# {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs (one used)")
    print(f"# n={args.n} per setting, timeout={args.timeout}s, seed={args.seed}")
    print(HEADER)
    notes = []
    for k, (setting, max_size, n_symbols) in enumerate(SETTINGS):
        *rows, note = bench_ltl(setting, max_size, n_symbols, args.n, args.timeout, args.seed + k)
        notes.append(note)
        for row in rows:
            print(row, flush=True)
    if not args.no_prop:
        for row in bench_prop(args.n, args.seed + 100):
            print(row, flush=True)
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
