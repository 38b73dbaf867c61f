"""What the benchmark scripts that record one run per ``--label`` share (``solve_latency.py``, ``web_busy.py``): the
machine line, and ``results.json`` / ``RESULTS.md`` under ``benchmarks/results/NAME/``, each written atomically.

Not a script: the scripts import it as a sibling module (they run as ``python benchmarks/NAME.py``). It imports no
``hf_symbolinv``: those scripts may time another checkout's package.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def machine(with_load_average: bool = False) -> str:
    """The processor (its name, where Linux tells it), the core count, the load average if asked, and Python."""
    cpu = platform.machine()
    try:
        names = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
        cpu = f"{cpu} {names[0]}" if names else cpu
    except OSError:
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if with_load_average and hasattr(os, "getloadavg") else ""
    return f"{cpu}, {os.cpu_count()} cores{load}, Python {platform.python_version()}"


def _write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(path)


def record_run(out: Path, label: str, record: dict) -> dict:
    """Add (or replace) the run ``label`` in ``out/results.json``; return every recorded run."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[label] = record
    _write_atomic(path, json.dumps(results, indent=1) + "\n")
    return results


def write_results_table(out: Path, lines: list[str]) -> None:
    """Write ``out/RESULTS.md``."""
    _write_atomic(out / "RESULTS.md", "\n".join(lines) + "\n")
