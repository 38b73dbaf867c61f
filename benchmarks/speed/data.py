"""Speed of the dataset builders: samples per second per core, and core-seconds per sample.

Rows:

* ``ltl-35``: the gated LTLRandom35 build (5 symbols, size <= 35), everything included (drawing,
  the size gate, solving, checking, writing the dataset).
* ``ltl-heatmap (10, 50)``: the heatmap's corner cell, 10 symbols at size 50, built alone: every
  draw aimed at it is charged to it, including those that land in other cells (an upper bound on
  its cost inside the full grid).
* ``ltl-heatmap 10-symbol row``: the cells (10, 19..50) together, the same way.
* ``ltl-heatmap (all cells)``: the whole grid (0..10 symbols x size 1..50) at a small cap per cell.

``--prop-35 N`` instead builds ``prop-35`` of N samples twice in one run, every drawn tree built against the
at-least draws (a draw that the plan shows cannot reach a size still open is given up unbuilt), checks that the
rows are the same and prints both and their ratio, with the cost of one skipped index (the derived size) both ways.
The gate's last sizes make most of a full build's time: nearly every large draw simplifies into a full size.

Reference: the original Spot-based pipeline needed 2 h 21 min on 56 threads for 100,000 samples of
size <= 50 with <= 10 symbols, about 4.7 thread-seconds per sample; the target is at most 0.5
core-seconds per such sample (the heatmap rows).

CPU time is measured (this process and its workers), so the per-core figures hold on a shared
machine too, though a busy machine still slows each core down. Run from the repository root::

    PYTHONPATH=. python benchmarks/speed/data.py            # a few minutes
    PYTHONPATH=. python benchmarks/speed/data.py --n 300    # shorter
    PYTHONPATH=. python benchmarks/speed/data.py --prop-35 4000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dataset_builders.generation import DerivedInts, derived_int, generate
from dataset_builders.logic_tasks import GridSource, build_random35, leaves_allow
from dataset_builders.ltl_random35 import LTL_TASK, build_ltl_random35
from dataset_builders.output import FEATURES
from dataset_builders.params import GRID_ATTEMPTS_EXTRA, GRID_ATTEMPTS_PER_SAMPLE, BuildOptions
from dataset_builders.prop_random35 import CONFIGS as PROP_CONFIGS
from dataset_builders.prop_random35 import PROP_TASK
from hf_symbolinv.utils.machine import processor_name

REFERENCE_CORE_SECONDS = 2 * 3600 + 21 * 60  # 2 h 21 min ...
REFERENCE_THREADS = 56  # ... on 56 threads ...
REFERENCE_SAMPLES = 100_000  # ... for 100,000 samples
REFERENCE = REFERENCE_CORE_SECONDS * REFERENCE_THREADS / REFERENCE_SAMPLES
TARGET = 0.5  # core-seconds per sample


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _measure(run: Callable[[Path], int]) -> tuple[int, float, float]:
    """(samples, CPU seconds, wall seconds) of ``run`` in a fresh temporary directory."""
    directory = Path(tempfile.mkdtemp(prefix="symbolinv-bench-"))
    try:
        cpu, wall = _cpu_seconds(), time.perf_counter()
        samples = run(directory / "out")
        return samples, _cpu_seconds() - cpu, time.perf_counter() - wall
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _ltl35(n: int, workers: int) -> Callable[[Path], int]:
    def run(out: Path) -> int:
        dataset = build_ltl_random35("ltl-35", out, BuildOptions(num_samples=n, workers=workers, progress=False))
        return sum(len(split) for split in dataset.values())

    return run


def _grid(cells: tuple[tuple[int, int], ...], per_cell: int, workers: int) -> Callable[[Path], int]:
    def run(out: Path) -> int:
        attempts = GRID_ATTEMPTS_PER_SAMPLE * per_cell + GRID_ATTEMPTS_EXTRA  # as the heatmap build
        source = GridSource(LTL_TASK, "ltl-heatmap", 0, cells, attempts, 10.0)
        rows, _ = generate(
            source,
            per_cell * len(cells),
            FEATURES,
            out,
            "bench",
            limits=dict.fromkeys(cells, per_cell),
            workers=workers,
            unique="input",
            progress=False,
        )
        return len(rows)

    return run


def _prop35(n: int, workers: int, at_least: bool, rows: list) -> Callable[[Path], int]:
    task = PROP_TASK if at_least else dataclasses.replace(PROP_TASK, draw_at_least=None)

    def run(out: Path) -> int:
        options = BuildOptions(num_samples=n, workers=workers, progress=False)
        dataset = build_random35(task, PROP_CONFIGS, "", "prop-35", out, options)
        rows.append({name: split.to_list() for name, split in dataset.items()})
        return sum(len(split) for split in dataset.values())

    return run


def compare_prop35(n: int, workers: int) -> None:
    """prop-35 of ``n`` samples with every drawn tree built, then with the at-least draws: the same rows."""
    rows: list = []
    print(f"{'prop-35, ' + str(n) + ' samples':<34}{'wall s':>9}{'CPU s':>9}{'samples/s/core':>16}")
    cpu_seconds = {}
    for name, at_least in (("every drawn tree built", False), ("at-least draws", True)):
        samples, cpu, wall = _measure(_prop35(n, workers, at_least, rows))
        cpu_seconds[name] = cpu
        print(f"{name:<34}{wall:>9.1f}{cpu:>9.1f}{samples / cpu:>16.1f}")
    assert rows[0] == rows[1], "the two builds differ"
    ratio = cpu_seconds["every drawn tree built"] / cpu_seconds["at-least draws"]
    print(f"the same rows; at-least draws: {ratio:.2f}x the samples per CPU second")
    fast, indices = DerivedInts(0, 1, 35, "prop-35"), range(10**8, 10**8 + 200_000)
    start = time.perf_counter()
    for index in indices:
        derived_int(0, 1, 35, "prop-35", index)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    for index in indices:
        fast(index)
    shared = time.perf_counter() - start
    print(
        f"a skipped index's size: {plain / len(indices) * 1e6:.2f} us hashed whole, {shared / len(indices) * 1e6:.2f} "
        f"us from the shared prefix ({plain / shared:.2f}x)"
    )


def _machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (
        f"{processor_name()}; {os.cpu_count()} logical cores; Python {platform.python_version()} on "
        f"{platform.system()}; load average {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="ltl-35 samples (default: 2000)")
    parser.add_argument(
        "--corner-cap",
        type=int,
        default=100,
        help="cap of the (10, 50) cell, the heatmap's (default: 100; about 1 in 1,000 draws lands)",
    )
    parser.add_argument("--row-cap", type=int, default=10, help="cap per cell of the 10-symbol row (default: 10)")
    parser.add_argument("--grid-cap", type=int, default=2, help="cap per cell for the whole grid (default: 2)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument("--prop-35", type=int, default=None, metavar="N", help="only the prop-35 comparison, N samples")
    args = parser.parse_args()

    print(f"machine: {_machine()}")
    if args.prop_35 is not None:
        compare_prop35(args.prop_35, args.workers)
        return
    print(f"reference: {REFERENCE:.2f} thread-s per sample (Spot pipeline); target: <= {TARGET} core-s per sample\n")
    build_ltl_random35("ltl-35", None, BuildOptions(num_samples=20, workers=1, progress=False))  # warm up imports
    row_cells = tuple((10, n) for n in range(19, 51))
    all_cells = tuple((k, n) for k in range(11) for n in range(1, 51) if leaves_allow(k, n))
    cases = [
        ("ltl-35", _ltl35(args.n, args.workers)),
        ("ltl-heatmap (10, 50)", _grid(((10, 50),), args.corner_cap, args.workers)),
        ("ltl-heatmap 10-symbol row", _grid(row_cells, args.row_cap, args.workers)),
        ("ltl-heatmap (all cells)", _grid(all_cells, args.grid_cap, args.workers)),
    ]
    header = (
        f"{'case':<28}{'samples':>9}{'wall s':>9}{'CPU s':>9}{'samples/s/core':>16}{'core-s/sample':>15}  vs target"
    )
    print(header)
    print("-" * len(header))
    failed = False
    for name, run in cases:
        samples, cpu, wall = _measure(run)
        per_sample = cpu / max(samples, 1)
        verdict = "PASS" if per_sample <= TARGET else "FAIL"
        failed |= per_sample > TARGET
        print(f"{name:<28}{samples:>9}{wall:>9.1f}{cpu:>9.1f}{samples / cpu:>16.1f}{per_sample:>15.4f}  {verdict}")
    print(
        f"\nreference {REFERENCE:.2f} thread-s/sample; target {TARGET} core-s/sample; overall:",
        "FAIL" if failed else "PASS",
    )


if __name__ == "__main__":
    main()
