"""The machine a figure was measured on, as the benchmarks' results and the training logs name it."""

from __future__ import annotations

import platform
from pathlib import Path


def processor_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name, as Linux tells it in ``cpuinfo``; elsewhere what the platform calls the processor,
    else its architecture (``platform.processor()`` alone is often empty or only ``x86_64`` on Linux)."""
    try:
        with open(cpuinfo) as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"
