"""The machine line of the benchmarks and the training logs names the processor."""

from __future__ import annotations

import platform
from pathlib import Path

from hf_symbolinv.utils.machine import processor_name


def test_the_processor_is_named_as_linux_tells_it(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n"
    )
    assert processor_name(cpuinfo) == "AMD EPYC 9R14 96-Core Processor"


def test_without_cpuinfo_the_platform_names_the_processor(tmp_path: Path) -> None:
    named = processor_name(tmp_path / "absent")
    assert named and named == (platform.processor() or platform.machine() or "unknown processor")


def test_cpuinfo_without_a_model_name_falls_back_to_the_platform(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nCPU implementer\t: 0x41\n")  # as an Arm machine's cpuinfo reads
    assert processor_name(cpuinfo) == processor_name(tmp_path / "absent")
