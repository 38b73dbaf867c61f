"""Torch's CPU threads for work that answers one small input at a time (``solve``, the web page), and for a
training campaign that shares its cores with another."""

from __future__ import annotations

import os


def set_torch_threads(threads: int | None = None) -> None:
    """``threads`` torch threads, else one: a small input gains nothing from more, and more only spin against the
    machine's other work (one beam-3 answer of the shipped ``prop-small`` beside two busy processes on 2 cores:
    2.7 s with 2 threads, 20-34 ms with 1; ``benchmarks/speed/solve_threads.py``). ``OMP_NUM_THREADS``, where set, is
    the user's choice and stays when ``threads`` is not given."""
    if threads is None and "OMP_NUM_THREADS" in os.environ:
        return
    import torch

    torch.set_num_threads(threads or 1)
