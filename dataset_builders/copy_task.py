"""The copy task with a scalable vocabulary (Isik et al.; SIT paper App. E).

Configurations (defaults in :data:`CONFIGS`):

* ``copy-small``: strings of length 5..10 with at most 5 distinct characters of a-z, 1M, split
  80/10/10; ``copy-large``: length 20..80, at most 20 distinct characters, 10M (the paper's
  training set), split 80/10/10. The distinct count is drawn uniformly, then the length uniformly
  among the lengths that can hold it; target = input.
* ``copy-small-grid`` (distinct 1..10 x length 1..20) and ``copy-large-grid`` (distinct 1..26 x
  length 1..100): evaluation grids, 20 strings per feasible cell (distinct <= length).

The strings come from :mod:`hf_symbolinv.tasks.copy` (the demo's generator), one random stream per
sample index, so the result depends only on the seed. Realising a string is trivial, so it is done
in the main process whatever ``--workers`` says.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import datasets

from hf_symbolinv.tasks.copy import CopySpec, random_copy_string, sample_copy_strings

from .cards import card_metadata, markdown_table, size_stats
from .generation import Outcome, default_chunk_size, derived_rng, fingerprint_of, generate, split_rows
from .output import FEATURES, SPLIT_FRACTIONS, BuildDirectory, write_dataset
from .params import BuildOptions, BuildParams, ConfigSpec, checked_options, resolve_params

__all__ = ["CONFIGS", "build_copy_task"]

MIN_LENGTH = {"copy-small": 5, "copy-large": 20}


def _row(text: str) -> dict[str, object]:
    return {"input": text, "target": text, "num_symbols": len(set(text)), "size": len(text)}


@dataclass
class CopySource:
    """Training strings: one per index, no quotas."""

    tag: str
    seed: int
    spec: CopySpec
    max_index: int | None = None
    inline: bool = True
    batch_size: int = 1000

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> str:
        return sample_copy_strings(derived_rng(self.seed, self.tag, index), 1, self.spec)[0]

    def key(self, candidate: str) -> Hashable:
        return None

    def realise(self, candidate: str) -> Outcome:
        return Outcome(row=_row(candidate))


@dataclass
class CopyGridSource:
    """Grid strings: cells in turn, every draw lands in its cell (exactly k distinct, length n)."""

    tag: str
    seed: int
    cells: tuple[tuple[int, int], ...]
    per_cell: int
    inline: bool = True
    keys_all_listed: bool = True
    batch_size: int = 1000

    def __post_init__(self) -> None:
        self.max_index = len(self.cells) * self.per_cell

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[int, int, str]:
        k, n = self.cells[index % len(self.cells)]
        return k, n, random_copy_string(derived_rng(self.seed, self.tag, index), k, n)

    def key(self, candidate: tuple[int, int, str]) -> Hashable:
        return candidate[0], candidate[1]

    def realise(self, candidate: tuple[int, int, str]) -> Outcome:
        return Outcome(row=_row(candidate[2]))


CONFIGS: dict[str, ConfigSpec] = {
    spec.name: spec
    for spec in (
        ConfigSpec(
            "copy-small",
            "copy",
            "base",
            "Copy task, small: strings of length 5..10 with at most 5 distinct characters; target = input.",
            1_000_000,
            5,
            10,
            min_size=5,
        ),
        ConfigSpec(
            "copy-large",
            "copy",
            "base",
            "Copy task, large (the SIT paper's): strings of length 20..80 with at most 20 distinct "
            "characters; target = input.",
            10_000_000,
            20,
            80,
            min_size=20,
        ),
        ConfigSpec(
            "copy-small-grid",
            "copy",
            "grid",
            "Copy task evaluation grid for copy-small: distinct characters 1..10 x length 1..20, 20 strings "
            "per feasible cell.",
            20,
            10,
            20,
        ),
        ConfigSpec(
            "copy-large-grid",
            "copy",
            "grid",
            "Copy task evaluation grid for copy-large: distinct characters 1..26 x length 1..100, 20 "
            "strings per feasible cell.",
            20,
            26,
            100,
        ),
    )
}

_FIELDS = {
    "input": "the string (every character is an interchangeable symbol)",
    "target": "the same string",
    "num_symbols": "distinct characters (grid: the cell's row)",
    "size": "length (grid: the cell's column)",
}


def _card(spec: ConfigSpec, params: BuildParams, dataset: datasets.DatasetDict) -> str:
    rows = [row for split in dataset.values() for row in split]
    sizes, symbols = size_stats(rows)
    if spec.is_grid:
        how = (
            f"One `test` split: for every cell (distinct characters k in 1..{params.num_symbols}, length n in "
            f"1..{params.max_size}, k <= n) {params.num_samples} strings with exactly k distinct characters of "
            "a-z and length n: k characters drawn without replacement, each placed once, the other positions "
            "filled uniformly from them, then shuffled."
        )
    else:
        how = (
            f"Strings of length {params.min_size}..{params.max_size} with 1..{params.num_symbols} distinct "
            "characters of a-z: the distinct count uniform, then the length uniform among those that can hold "
            "it, then the string as for the grid (each chosen character at least once). Shuffled and split "
            "80/10/10."
        )
    command = (
        f"symbolinv data build {spec.name} --out DIR --num-samples {params.num_samples} --num-symbols "
        f"{params.num_symbols} --max-size {params.max_size} --seed {params.seed}"
    )
    return "\n".join(
        [
            card_metadata(dataset, FEATURES, f"symbolinv {spec.name}", ["symbolinv", "copy", "synthetic"]),
            f"# {spec.name}\n\n{spec.description}\n",
            "Built locally by `hf_symbolinv` (package `dataset_builders`). Metric in the papers: edit distance "
            "between the greedy prediction and the target.\n",
            "## Loading\n\n```python\nfrom datasets import load_dataset\n\n"
            'dataset = load_dataset("path/to/this/directory")  # or load_dataset(REPO_ID, name=CONFIG)\n```\n',
            "## Fields\n\n"
            + markdown_table(["field", "type", "meaning"], [(n, f.dtype, _FIELDS[n]) for n, f in FEATURES.items()])
            + "\n",
            "## Splits\n\n" + markdown_table(["split", "samples"], [(n, len(s)) for n, s in dataset.items()]) + "\n",
            f"## How it was generated\n\n{how} One random stream per sample index (seed {params.seed}), so the "
            f"result does not depend on the number of workers. Rebuild with `{command}`.\n",
            "## Statistics\n\nSamples by distinct characters: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(symbols.items()))
            + ".\n\nSamples by length: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items()))
            + ".\n",
        ]
    )


def build_copy_task(
    config: str = "copy-small", out_dir: str | os.PathLike | None = None, options: BuildOptions | None = None
) -> datasets.DatasetDict:
    """Build a copy-task configuration as ``options`` ask (default: its parameters) and return it as a
    ``DatasetDict``.

    ``num_symbols`` is the most distinct characters, ``max_size`` the longest string; for the grids
    ``num_samples`` is the count per cell. ``workers`` is accepted for a uniform interface (the
    strings are drawn in this process). With ``out_dir`` the dataset is written there too; a dataset of
    other parameters already there is replaced only with ``options.overwrite``.
    """
    options = checked_options(options)
    if config not in CONFIGS:
        raise ValueError(f"unknown copy configuration {config!r}; choose one of {', '.join(CONFIGS)}")
    spec = CONFIGS[config]
    options.refuse_unused(config)
    params = resolve_params(spec, options)
    if params.num_symbols < 1:
        raise ValueError("--num-symbols must be at least 1 for the copy task")
    if not spec.is_grid and params.num_symbols > params.max_size:
        raise ValueError(
            f"--num-symbols {params.num_symbols} exceeds the longest string (--max-size {params.max_size})"
        )
    info = {"config": spec.name, "family": "copy", **params.as_dict()}
    info["fingerprint"] = fingerprint_of(info)
    with BuildDirectory(out_dir, info, overwrite=options.overwrite) as directory:
        if directory.built is not None:
            return directory.built
        if spec.is_grid:
            cells = tuple(
                (k, n) for k in range(1, params.num_symbols + 1) for n in range(1, params.max_size + 1) if k <= n
            )
            source: CopySource | CopyGridSource = CopyGridSource(spec.name, params.seed, cells, params.num_samples)
            total, limits = len(cells) * params.num_samples, dict.fromkeys(cells, params.num_samples)
        else:
            copy_spec = CopySpec(distinct=(1, params.num_symbols), length=(params.min_size, params.max_size))
            source, total, limits = CopySource(spec.name, params.seed, copy_spec), params.num_samples, None
        rows, _ = generate(
            source,
            total,
            FEATURES,
            directory.part(spec.name),
            info["fingerprint"],
            limits=limits,
            workers=1,
            chunk_size=options.chunk_size or default_chunk_size(total),
            description=spec.name,
            on_accept=options.on_accept,
            progress=options.progress,
        )
        if spec.is_grid:
            rows.sort(key=lambda row: (row["num_symbols"], row["size"]))
            splits = {"test": rows}
        else:
            splits = split_rows(rows, SPLIT_FRACTIONS, params.seed)
        info["splits"] = {name: len(split) for name, split in splits.items()}
        return write_dataset(directory.path, splits, FEATURES, lambda dataset: _card(spec, params, dataset), info)
