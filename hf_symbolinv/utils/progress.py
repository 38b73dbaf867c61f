"""Progress bars only where someone watches them: on a terminal. Written to a log file, a bar is a line per update
(thousands of lines for one training), so off a terminal the package's bars, and those of the libraries it drives
(datasets, the Hub, transformers' Trainer), are off; the Trainer then prints its log one line per logging step."""

from __future__ import annotations

import os
import sys

#: The libraries' switches for their progress bars, set (unless the user set them) when the output is no terminal.
QUIET_ENVIRONMENT = {
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}


def on_terminal() -> bool:
    """Whether progress bars would be seen: standard error (where bars are drawn) is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


def quiet_off_terminal() -> None:
    """Turn the libraries' progress bars off when the output is no terminal (before they are imported: each reads
    its switch once); a switch the user set is left as it is."""
    if not on_terminal():
        for name, value in QUIET_ENVIRONMENT.items():
            os.environ.setdefault(name, value)


def show_progress(wanted: bool = True) -> bool:
    """Whether to draw a bar the caller ``wanted``: only on a terminal."""
    return wanted and on_terminal()
