"""The code copied between model families' Hub folders stays equal to its original."""

from __future__ import annotations

import shutil
from pathlib import Path

from hf_symbolinv.utils import check_copies


def test_every_copy_equals_its_original() -> None:
    copies = check_copies.find_copies()
    assert len(copies) >= 6  # the wrapper's stream pieces and shift_tokens_right, the SIT's symbols module
    assert check_copies.check() == []


def test_a_drifted_copy_is_reported_and_fixed(tmp_path) -> None:
    package = tmp_path / "hf_symbolinv"
    shutil.copytree(check_copies.PACKAGE_ROOT, package, ignore=shutil.ignore_patterns("__pycache__"))
    copied = package / "models" / "symbolinv_wrapper" / "streams.py"
    copied.write_text(copied.read_text().replace("TIE_BREAK = 1e-5", "TIE_BREAK = 1e-4"))
    module = package / "models" / "symbolinv" / "symbols.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    original_root = check_copies.PACKAGE_ROOT
    check_copies.PACKAGE_ROOT = package
    try:
        problems = check_copies.check(root=package)
        assert any("TIE_BREAK differs" in problem for problem in problems)
        assert any("symbols.py:1: differs from hf_symbolinv.utils.symbols" in problem for problem in problems)
        check_copies.check(fix=True, root=package)
        assert check_copies.check(root=package) == []
        assert "TIE_BREAK = 1e-5" in copied.read_text()
    finally:
        check_copies.PACKAGE_ROOT = original_root
    assert Path(original_root).is_dir()
