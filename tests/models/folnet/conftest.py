"""Shared by the FOLNet tests."""

from __future__ import annotations

import os

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # The models are tiny: on a shared 2-core machine, thread hand-offs cost more than the arithmetic
    # (also in the tester's subprocess, which inherits the environment).
    threads, env = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    yield
    torch.set_num_threads(threads)
    if env is None:
        os.environ.pop("OMP_NUM_THREADS", None)
    else:
        os.environ["OMP_NUM_THREADS"] = env
