"""Dataset cards: the Markdown and metadata written next to a built dataset."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import datasets

from .output import DATA_DIR, FEATURES
from .params import (
    DEFAULT_TIMEOUT,
    GRID_ATTEMPTS_EXTRA,
    GRID_ATTEMPTS_PER_SAMPLE,
    REDUCED_SHARE,
    SUPP_SHARES,
    BuildParams,
    ConfigSpec,
)


class CardTask(Protocol):
    """What a logic task's card says about the task (a ``logic_tasks.LogicTask``)."""

    name: str
    min_symbols: int
    fallback: Callable[..., Any] | None


@dataclass
class StepReport:
    """What one generation step did (for the card)."""

    name: str
    requested: int
    accepted: int
    drops: dict[str, int]
    notes: dict[str, int] = field(default_factory=dict)


def _command(params: BuildParams) -> str:
    command = (
        f"symbolinv data build {params.config} --out DIR --num-samples {params.num_samples} "
        f"--num-symbols {params.num_symbols} --max-size {params.max_size} --seed {params.seed}"
    )
    if params.timeout is not None and params.timeout != DEFAULT_TIMEOUT:
        command += f" --timeout {params.timeout:g}"
    return command


FIELD_DOCS = {
    "input": "the formula, Polish notation in the model vocabulary",
    "target": "the target (see below), checked against the formula",
    "num_symbols": "distinct symbols in the formula (grid: the cell's row)",
    "size": "tree size of the formula = its length in tokens (grid: the cell's column)",
}


def logic_card(
    task: CardTask,
    spec: ConfigSpec,
    params: BuildParams,
    about: str,
    dataset: datasets.DatasetDict,
    reports: Sequence[StepReport],
) -> str:
    rows = [row for split in dataset.values() for row in split]
    about_fallback = (
        "fallbacks are targets the checker rejected, replaced by a second solve that it accepted"
        if task.fallback is not None
        else "no fallback solver"
    )
    sizes, symbols = size_stats(rows)
    parts = [
        card_metadata(dataset, FEATURES, f"symbolinv {spec.name}", ["symbolinv", "logic", task.name, "synthetic"]),
        f"# {spec.name}\n\n{spec.description}\n",
        "Built locally by `hf_symbolinv` (package `dataset_builders`): the samples are regenerated with the "
        "package's logic engine, with the distributions of the original datasets (which are not "
        "redistributed here; `dataset_builders.load_deepltl` reads the original DeepLTL files).\n",
        "## Loading\n\n```python\nfrom datasets import load_dataset\n\n"
        'dataset = load_dataset("path/to/this/directory")  # or load_dataset(REPO_ID, name=CONFIG)\n```\n',
        "## Fields\n\n"
        + markdown_table(["field", "type", "meaning"], [(n, f.dtype, FIELD_DOCS[n]) for n, f in FEATURES.items()])
        + "\n",
        "## Splits\n\n" + markdown_table(["split", "samples"], [(n, len(s)) for n, s in dataset.items()]) + "\n",
        "## How it was generated\n\n" + about.strip() + "\n",
        _variant_text(spec, params, task.min_symbols) + "\n",
        "Parameters:\n\n"
        + markdown_table(
            ["parameter", "value"],
            [
                ("seed", params.seed),
                ("samples" + (" per cell" if spec.is_grid else ""), params.num_samples),
                ("symbols" + (" (at most)" if spec.is_grid else ""), params.num_symbols),
                ("sizes", f"{params.min_size}..{params.max_size}"),
                ("solver time-out", f"{params.timeout} s" if params.timeout is not None else "none"),
            ],
        )
        + f"\n\nRebuild with `{_command(params)}` (any `--workers`: the result does not depend on it).\n",
        "Generation steps (drops are candidates whose quota was still open but which gave no sample; "
        f"{about_fallback}):\n\n"
        + markdown_table(
            ["step", "requested", "accepted", "dropped", "fallbacks"],
            [
                (
                    r.name,
                    r.requested,
                    r.accepted,
                    ", ".join(f"{k} {v}" for k, v in r.drops.items()) or "-",
                    r.notes.get("fallback", 0),
                )
                for r in reports
            ],
        )
        + "\n",
        "## Statistics\n\nSamples by symbol count: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(symbols.items()))
        + ".\n\nSamples by size: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items()))
        + ".\n",
        "## Reproducibility\n\n"
        + (
            "The solver's time-out is wall-clock time: on a slow or busy machine a formula near the limit "
            "may time out (and be dropped, as the original pipeline did) where a faster machine solves it, so "
            "builds are reproducible bit for bit only while nothing times out (the table above shows the "
            "time-outs of this build). Everything else depends only on the parameters, not on the machine or "
            "the number of workers.\n"
            if params.timeout is not None
            else "There is no time-out: the build depends only on the parameters, not on the machine or the number "
            "of workers.\n"
        ),
    ]
    return "\n".join(parts)


def _variant_text(spec: ConfigSpec, params: BuildParams, min_symbols: int = 0) -> str:
    if spec.variant == "grid":
        return (
            "Evaluation grid: one `test` split with at most "
            f"{params.num_samples} samples per cell (symbol count {min_symbols}..{params.num_symbols} x size "
            f"1..{params.max_size}). Cells are visited in turn; each draw is over the cell's symbol count at "
            "the cell's tree size, then its symbols are compacted to a, b, c, ... in order of first appearance "
            "and it counts for the cell it lands in (simplification may shrink it, it may use fewer "
            f"symbols). Each cell gets {GRID_ATTEMPTS_PER_SAMPLE} x cap + {GRID_ATTEMPTS_EXTRA} draws, so rare "
            "and impossible cells stay partly filled or empty; no formula appears twice."
        )
    text = (
        "Size gate: the tree size is drawn uniformly before simplification; sizes 10 and up each get an "
        "equal share of (1 - 0.112) of the samples, smaller sizes share the remaining 11.2% (alpha = 0.112), "
        "so sizes 10..max are near-uniform. No formula appears twice (as Spot's `randltl`, which never "
        "repeats a formula). The samples are shuffled and split 80/10/10."
    )
    if spec.variant == "test":
        text = text.replace("The samples are shuffled and split 80/10/10.", "Every sample is in one `test` split.")
    elif spec.variant == "supp":
        text += (
            f" `supp`: {spec.base} plus samples over 0 and 1 symbols added to the training split, "
            f"{SUPP_SHARES[0] * 100:.3f}% and {SUPP_SHARES[1] * 100:.3f}% of it (at least one each; the "
            "paper's App. F raised them by 202 and 10,839 in 800k), drawn over 0 or 1 symbols at tree sizes "
            "uniform in the size range (no size gate) and never repeating a formula of the base data."
        )
    elif spec.variant == "renamed":
        text += (
            f" `renamed`: {spec.base}, every sample renamed so that the symbols appear in the target in "
            "the order a, b, c, ... (symbols absent from the target follow, in order of first appearance "
            "in the formula); formula and target are renamed consistently and checked again."
        )
    elif spec.variant == "reduced":
        text += (
            f" `reduced`: {spec.base} with the training split cut to its first "
            f"{REDUCED_SHARE * 100:g}% of the samples requested (80k of 1M); validation and test as in "
            f"{spec.base}."
        )
    return text


# ---------------------------------------------------------------------------------------------------
# Dataset card and Hub upload
# ---------------------------------------------------------------------------------------------------
def _size_category(n: int) -> str:
    for bound, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
    ):
        if n < bound:
            return label
    return "100M<n<1B"


def card_metadata(
    dataset: datasets.DatasetDict, features: datasets.Features, pretty_name: str, tags: Sequence[str]
) -> str:
    """The YAML front matter: ``configs`` (what ``load_dataset(dir)`` reads) and ``dataset_info``."""
    from huggingface_hub import DatasetCardData

    splits = list(dataset)
    total = sum(len(split) for split in dataset.values())
    data = DatasetCardData(
        pretty_name=pretty_name,
        size_categories=[_size_category(total)],
        tags=list(tags),
        configs=[
            {
                "config_name": "default",
                "data_files": [{"split": name, "path": f"{DATA_DIR}/{name}-*"} for name in splits],
            }
        ],
        dataset_info={
            "features": [{"name": name, "dtype": feature.dtype} for name, feature in features.items()],
            "splits": [
                {"name": name, "num_bytes": int(dataset[name].data.nbytes), "num_examples": len(dataset[name])}
                for name in splits
            ],
            "dataset_size": int(sum(dataset[name].data.nbytes for name in splits)),
        },
    )
    return f"---\n{data.to_yaml()}\n---\n"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


def size_stats(rows: Iterable[Mapping[str, Any]]) -> tuple[Counter, Counter]:
    sizes: Counter[int] = Counter()
    symbols: Counter[int] = Counter()
    for row in rows:
        sizes[row["size"]] += 1
        symbols[row["num_symbols"]] += 1
    return sizes, symbols
