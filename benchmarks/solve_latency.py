"""`symbolinv solve` latency as a user meets it: wall time of the whole command (a new process each time), for a
syntax error, one formula, and 100 formulas in one call, against `symbolinv --help` in the same run.

    python benchmarks/solve_latency.py --label after
    python benchmarks/solve_latency.py --label before --package-root /path/to/an/older/checkout

Each case runs `python -m hf_symbolinv.commands ...` (what the `symbolinv` script runs) `--repeats` times with
OMP_NUM_THREADS=1, after one untimed run of each (the first run of a fresh checkout compiles its files); the median
and the extremes are printed as a table and recorded with the machine in `benchmarks/results/solve_latency/`
(`results.json` under `--label`, and `RESULTS.md`). The formulas are Polish, which every version reads: 50
propositional and 50 LTL formulas drawn with a fixed seed (3 to 15 nodes over the letters a-e), so the 100 load both
shipped models once each.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from labelled_runs import machine, record_run, write_results_table

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "results" / "solve_latency"


def formulas() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from hf_symbolinv.logic import format_ltl, format_prop, random_ltl_formula, random_prop_formula

    rng = random.Random(41)
    names = ["a", "b", "c", "d", "e"]
    prop = [format_prop(random_prop_formula(rng, (3, 15), names)) for _ in range(50)]
    ltl = [format_ltl(random_ltl_formula(rng, (3, 15), names)) for _ in range(50)]
    return prop + ltl


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hf_symbolinv.commands", *argv],
        env=env,
        cwd=env["PYTHONPATH"],  # `python -m` puts the current folder first on the path: the checkout timed
        capture_output=True,
        timeout=900,
        check=False,
    )
    return time.perf_counter() - started, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the name of this run in results.json (e.g. before, after)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each case (default: 3)")
    parser.add_argument(
        "--package-root", default=str(ROOT), help="the checkout whose hf_symbolinv is timed (default: this one)"
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": args.package_root, "OMP_NUM_THREADS": "1"}
    many = formulas()
    cases = {
        "symbolinv --help": ["--help"],
        "solve: a syntax error ('& % a')": ["solve", "& % a"],
        "solve: one formula ('& a | b ! c')": ["solve", "& a | b ! c"],
        "solve: 100 formulas in one call": ["solve", *many],
    }
    rows = {}
    for name, argv in cases.items():
        timed(argv, env)  # untimed: compiled files, a warm disk cache
        runs = [timed(argv, env) for _ in range(args.repeats)]
        seconds = [s for s, _ in runs]
        rows[name] = {
            "median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3),
            "max_s": round(max(seconds), 3),
            "exit_status": sorted({code for _, code in runs}),
        }
        print(f"{name}: median {rows[name]['median_s']} s ({rows[name]['min_s']}-{rows[name]['max_s']})", flush=True)
    probe = subprocess.run(
        [sys.executable, "-c", "import hf_symbolinv; print(hf_symbolinv.__file__)"],
        env=env,
        cwd=env["PYTHONPATH"],
        capture_output=True,
        text=True,
        check=False,
    )
    record = {
        "package": probe.stdout.strip(),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "package_root": args.package_root,
        "machine": machine(with_load_average=True),
        "repeats": args.repeats,
        "cases": rows,
    }
    results = record_run(OUT, args.label, record)
    write_table(results)
    return 0


def write_table(results: dict) -> None:
    """``RESULTS.md``: every recorded run as a table."""
    lines = [
        "# `symbolinv solve` latency (benchmarks/solve_latency.py)",
        "",
        "Wall time of the whole command, a new process each run (median of the timed runs, min-max); "
        "OMP_NUM_THREADS=1.",
        "",
        "| run | machine | case | median (s) | min-max (s) | exit status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    escaped_bar = "\\|"  # a | inside a Markdown table cell
    for label, r in results.items():
        for name, row in r["cases"].items():
            lines.append(
                f"| {label} ({r['when']}) | {r['machine']} | {name.replace('|', escaped_bar)} | {row['median_s']} | "
                f"{row['min_s']}-{row['max_s']} | {', '.join(map(str, row['exit_status']))} |"
            )
    write_results_table(OUT, lines)


if __name__ == "__main__":
    sys.exit(main())
