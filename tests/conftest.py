"""Test session setup: never reach the network, keep Hugging Face caches out of the user's home."""

import os
import tempfile

# Set before transformers is imported by any test module (conftest is imported first).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="symbolinv-test-hf-"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# One intra-op thread: on a 2-core runner, torch's thread pool competing with pytest's own work
# (and with subprocesses) is several times slower than a single thread.
import torch  # noqa: E402

torch.set_num_threads(1)


import random  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def prop_data(tmp_path_factory) -> Path:
    """A small propositional dataset in the layout `symbolinv data build` writes."""
    import datasets

    from hf_symbolinv import logic

    rng = random.Random(0)
    rows = []
    while len(rows) < 240:
        formula = logic.random_prop_formula(rng, (3, 9), 3)
        result = logic.solve_prop(formula)
        if result.sat and not result.valid:
            rows.append(
                {
                    "input": logic.format_prop(formula),
                    "target": logic.format_assignment(result.assignment),
                    "num_symbols": len(logic.symbols_of(formula, kind="prop")),
                    "size": logic.formula_size(formula, kind="prop"),
                }
            )
    folder = tmp_path_factory.mktemp("prop-data")
    for name, part in (("train", rows[:200]), ("validation", rows[200:220]), ("test", rows[220:])):
        datasets.Dataset.from_list(part).to_parquet(str(folder / "data" / f"{name}-00000-of-00001.parquet"))
    return folder
