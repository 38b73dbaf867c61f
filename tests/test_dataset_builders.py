"""The dataset builders: every configuration builds small and loads with ``load_dataset``, the
distributions are the papers', builds are deterministic whatever the worker count and resumable,
and the original DeepLTL files can be read."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import string
from collections import Counter
from pathlib import Path

import datasets
import pytest

import dataset_builders
from dataset_builders.generation import DerivedInts, Outcome, derived_int, derived_rng
from dataset_builders.kinship import check_row
from dataset_builders.logic_tasks import GatedSource, SizeQuotas, realise_formula
from dataset_builders.ltl_random35 import LTL_TASK
from dataset_builders.output import FEATURES, PARTIAL_DIR, read_parquet_rows
from dataset_builders.params import BuildOptions
from dataset_builders.prop_random35 import PROP_TASK, minimal_assignment
from dataset_builders.trees import SPLITS as TREE_SPLITS
from dataset_builders.trees import check_row as check_tree_row
from dataset_builders.trees import split_sizes as tree_split_sizes
from hf_symbolinv.commands import build_parser, main
from hf_symbolinv.logic import (
    check_assignment,
    check_ltl,
    compact_mapping,
    format_ltl,
    format_trace,
    parse_assignment,
    parse_ltl,
    parse_prop,
    parse_trace,
    random_ltl_formula,
    rename,
    symbols_of,
)

LETTERS = string.ascii_lowercase
SMALL = 120  # samples of a small build (per cell for the grids: 1)


def _small_options(name: str) -> dict:
    options = {"num_samples": SMALL, "workers": 1, "progress": False}
    if name.endswith("grid") or name == "kinship-test":  # kinship-test: a grid over the chain length
        options["num_samples"] = 1
    elif name.endswith("heatmap"):  # a smaller grid: a cell gets 250 draws at cap 1
        options.update(num_samples=1, num_symbols=6, max_size=24)
    return options


class Builds:
    """Small builds made once per session, by configuration name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.built: dict[str, Path] = {}

    def __call__(self, name: str) -> Path:
        if name not in self.built:
            out = self.root / name
            dataset_builders.build(name, out, BuildOptions(**_small_options(name)))
            self.built[name] = out
        return self.built[name]


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    return Builds(tmp_path_factory.mktemp("builds"))


def _load(directory: Path) -> datasets.DatasetDict:
    return datasets.load_dataset(str(directory))


def _rows(dataset: datasets.DatasetDict) -> list[dict]:
    return [row for split in dataset.values() for row in split]


def _as_lists(dataset: datasets.DatasetDict) -> dict[str, list[dict]]:
    return {name: split.to_list() for name, split in dataset.items()}


def _check_targets(family: str, rows: list[dict]) -> None:
    """Every target passes the checker, and the symbol-count and size columns describe the input."""
    for row in rows:
        if family == "ltl":
            formula = parse_ltl(row["input"])
            assert check_ltl(formula, parse_trace(row["target"])), row
        elif family == "prop":
            formula = parse_prop(row["input"])
            assert check_assignment(formula, parse_assignment(row["target"])), row
            assert parse_assignment(row["target"]), row  # tautologies are dropped
        elif family == "kinship":
            check_row(row)  # the story composes to the target; num_symbols and size describe it
            continue
        else:
            assert row["target"] == row["input"]
            assert (row["num_symbols"], row["size"]) == (len(set(row["input"])), len(row["input"]))
            continue
        assert row["num_symbols"] == len(symbols_of(formula)), row
        assert row["size"] == formula.size, row


# ---------------------------------------------------------------------------------------------------
# Every configuration
# ---------------------------------------------------------------------------------------------------
def test_config_names_match_the_family_modules() -> None:
    assert set(dataset_builders.CONFIG_NAMES) == set(dataset_builders.configs())


@pytest.mark.parametrize("name", dataset_builders.CONFIG_NAMES)
@pytest.mark.slow
def test_small_build_loads_with_declared_features_and_checked_targets(builds: Builds, name: str) -> None:
    directory = builds(name)
    dataset = _load(directory)
    spec = dataset_builders.configs()[name]
    info = json.loads((directory / "build_info.json").read_text())
    assert not (directory / PARTIAL_DIR).exists()
    for split in dataset.values():
        assert split.features == FEATURES
    assert {n: len(s) for n, s in dataset.items()} == info["splits"]
    card = (directory / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: default" in card and f"# {name}" in card
    assert "num_examples: " + str(info["splits"][next(iter(info["splits"]))]) in card
    rows = _rows(dataset)
    if spec.family == "trees":  # five splits, every target recomputed (more in tests/test_tree_datasets.py)
        assert list(dataset) == list(TREE_SPLITS)
        assert {n: len(s) for n, s in dataset.items()} == tree_split_sizes(SMALL)
        for row in rows:
            check_tree_row(name, row, info["max_depth"])
        assert len({row["input"] for row in rows}) == len(rows)  # no input twice, in a split or across splits
        return
    _check_targets(spec.family, rows)

    if spec.is_grid and spec.family == "kinship":  # one cap per chain length k
        assert list(dataset) == ["test"]
        assert Counter(row["size"] for row in rows) == dict.fromkeys(range(spec.min_size, info["max_size"] + 1), 1)
        return
    if spec.is_grid:
        assert list(dataset) == ["test"]
        cells = Counter((row["num_symbols"], row["size"]) for row in rows)
        max_k, max_n = info["num_symbols"], info["max_size"]
        assert max(cells.values()) == 1  # the cap per cell
        assert all(k <= max_k and 1 <= n <= max_n for k, n in cells)
        feasible = sum(min((n + 1) // 2 if spec.family != "copy" else n, max_k) for n in range(1, max_n + 1))
        if spec.family != "copy":  # symbols compacted to a, b, c, ...
            assert all(symbols_of(r["input"], kind=spec.family) == tuple(LETTERS[: r["num_symbols"]]) for r in rows)
            assert len({row["input"] for row in rows}) == len(rows)
            assert len(cells) > 0.75 * feasible  # most cells of the grid are reached
        else:
            assert len(cells) == feasible
        return
    if spec.variant == "test":  # generated as a base configuration, every sample for testing
        assert list(dataset) == ["test"] and len(rows) == SMALL
        assert max(row["size"] for row in rows) <= spec.max_size
        assert max(row["num_symbols"] for row in rows) <= spec.num_symbols
        assert max(row["num_symbols"] for row in rows) > 3  # symbol counts beyond the small training sets'
        assert len({row["input"] for row in rows}) == len(rows)
        return
    assert list(dataset) == ["train", "validation", "test"]
    sizes = {n: len(s) for n, s in dataset.items()}
    assert sizes["validation"] == sizes["test"] == SMALL // 10
    if spec.variant == "reduced":
        assert sizes["train"] == round(0.08 * SMALL)
    elif spec.variant == "supp":
        assert sizes["train"] > 0.8 * SMALL
    else:
        assert sizes["train"] == 0.8 * SMALL
    if spec.family == "copy":
        lengths = {row["size"] for row in rows}
        assert min(lengths) >= spec.min_size and max(lengths) <= spec.max_size
        assert max(row["num_symbols"] for row in rows) <= spec.num_symbols
    else:
        assert max(row["size"] for row in rows) <= spec.max_size
        assert max(row["num_symbols"] for row in rows) <= spec.num_symbols
        if spec.variant != "renamed":  # (renaming may make two formulas equal)
            assert len({row["input"] for row in rows}) == len(rows)  # no formula twice
        assert not any(c in row["input"] for row in rows for c in "FGRWM>")  # priority 0: never drawn


def test_supp_adds_zero_and_one_symbol_samples_to_train(builds: Builds) -> None:
    base = _load(builds("ltl-35"))
    supp = _load(builds("ltl-35-supp"))
    for split in ("validation", "test"):
        assert supp[split].to_list() == base[split].to_list()
    extra = Counter(row["num_symbols"] for row in supp["train"]) - Counter(row["num_symbols"] for row in base["train"])
    assert set(extra) == {0, 1} and all(count >= 1 for count in extra.values())
    assert {row["input"] for row in base["train"]} <= {row["input"] for row in supp["train"]}
    prop_extra = Counter(r["num_symbols"] for r in _load(builds("prop-35-supp"))["train"]) - Counter(
        r["num_symbols"] for r in _load(builds("prop-35"))["train"]
    )
    assert set(prop_extra) == {1}  # a constant propositional formula is valid or unsatisfiable


def test_reduced_is_the_first_training_samples_of_the_base(builds: Builds) -> None:
    base = _load(builds("ltl-35"))
    reduced = _load(builds("ltl-35-reduced"))
    assert reduced["train"].to_list() == base["train"].to_list()[: len(reduced["train"])]
    assert reduced["test"].to_list() == base["test"].to_list()


def test_renamed_symbols_first_appear_in_the_trace_in_order(builds: Builds) -> None:
    base = _load(builds("ltl-35"))
    renamed = _load(builds("ltl-35-renamed"))
    for split in base:
        assert len(renamed[split]) == len(base[split])
        for original, row in zip(base[split], renamed[split]):
            formula, trace = parse_ltl(row["input"]), parse_trace(row["target"])
            in_trace = symbols_of(trace)
            assert in_trace == tuple(LETTERS[: len(in_trace)]), row
            rest = [s for s in symbols_of(formula) if s not in in_trace]
            assert in_trace + tuple(rest) == tuple(LETTERS[: len(in_trace) + len(rest)]), row
            # The same sample, renamed consistently (formula and trace by one mapping).
            f0, t0 = parse_ltl(original["input"]), parse_trace(original["target"])
            mapping = compact_mapping(t0, f0)
            assert row["input"] == format_ltl(rename(f0, mapping))
            assert row["target"] == format_trace(rename(t0, mapping))
            assert (row["size"], row["num_symbols"]) == (original["size"], original["num_symbols"])
    for row in _load(builds("prop-35-renamed"))["train"]:
        in_target = tuple(parse_assignment(row["target"]))
        assert in_target == tuple(LETTERS[: len(in_target)]), row


# ---------------------------------------------------------------------------------------------------
# Distributions
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ltl35_sizes_are_near_uniform_and_operators_follow_the_priorities(tmp_path: Path) -> None:
    total = 5000
    dataset = dataset_builders.build(
        "ltl-35", tmp_path / "ltl", BuildOptions(num_samples=total, workers=2, progress=False)
    )
    rows = _rows(dataset)
    assert len(rows) == total
    sizes = Counter(row["size"] for row in rows)
    large = [sizes[s] for s in range(10, 36)]
    target = total * (1 - 0.112) / 26
    assert all(abs(count - target) <= 1 for count in large), large  # the gate fills every size
    assert sum(sizes[s] for s in range(1, 10)) == round(0.112 * total)  # the alpha share
    tokens = Counter(token for row in rows for token in row["input"])
    assert set(tokens) == set("abcde01!XU&")  # operators of priority 0 never appear
    symbols = [tokens[s] for s in "abcde"]  # one priority for the five symbols: equally frequent
    assert max(symbols) / min(symbols) < 1.1, symbols


def test_candidate_operator_frequencies_match_the_priorities() -> None:
    """Before simplification and solving, the builder's draws follow the priorities: every leaf
    kind (each of the 5 symbols, 0, 1) has weight 1, and ! = X, U = & among the operators."""

    def raw(rng: random.Random, size: int, names: list[str]):
        return random_ltl_formula(rng, size, list(names), simplify=False)

    task = dataclasses.replace(LTL_TASK, draw=raw)
    source = GatedSource(task, "ltl-35", 0, 5, 1, 35, SizeQuotas(100, 1, 35), None)
    tokens = Counter(token for i in range(3000) for token in source.candidate(i)[0])
    leaves = sum(tokens[t] for t in "abcde01")
    for t in "abcde01":
        expected = leaves / 7
        assert abs(tokens[t] - expected) < 4 * math.sqrt(leaves * (1 / 7) * (6 / 7)), (t, tokens)
    for a, b in (("!", "X"), ("U", "&")):
        n = tokens[a] + tokens[b]
        assert abs(tokens[a] - n / 2) < 4 * math.sqrt(n / 4), tokens
    assert set(tokens) == set("abcde01!XU&")


def test_derived_randomness_depends_only_on_its_parts() -> None:
    assert derived_rng(1, "x", 5).random() == derived_rng(1, "x", 5).random() != derived_rng(1, "x", 6).random()
    values = [derived_int(3, 10, 12, "t", i) for i in range(300)]
    assert set(values) == {10, 11, 12}


def test_derived_ints_of_an_index_are_derived_int_of_it() -> None:
    import pickle

    indices = [*range(2000), 10**9 + 7, 2**62, 401_000_000]
    for seed, low, high, parts in ((0, 1, 35, ("prop-35",)), (3, 10, 12, ("t",)), (7, 1, 50, ("grid", 4))):
        fast = DerivedInts(seed, low, high, *parts)
        copied = pickle.loads(pickle.dumps(fast))  # as sent to a worker process
        for index in indices:
            assert fast(index) == copied(index) == derived_int(seed, low, high, *parts, index)


def test_a_target_the_checker_rejects_is_never_written() -> None:
    wrong = parse_trace("{!a}")

    def bad_solve(formula, timeout):
        return "sat", wrong

    def good_solve(formula, timeout):
        return "sat", parse_trace("{a}")

    without = dataclasses.replace(LTL_TASK, solve=bad_solve, fallback=None)
    assert realise_formula(without, "a", None) == Outcome(drop="check-failed")
    with_fallback = dataclasses.replace(LTL_TASK, solve=bad_solve, fallback=good_solve)
    outcome = realise_formula(with_fallback, "a", None)
    assert outcome.row == {"input": "a", "target": "{a}", "num_symbols": 1, "size": 1}
    assert outcome.note == "fallback"


def test_minimal_assignment_is_minimal_and_canonical() -> None:
    formula = parse_prop("|&ab!c")
    status, assignment = minimal_assignment(formula)
    assert status == "sat" and assignment == {"c": False}  # false first: c = 0 already forces it
    assert minimal_assignment(parse_prop("|a!a")) == ("valid", {})
    assert minimal_assignment(parse_prop("&a!a"))[0] == "unsat"
    rng = random.Random(1)
    for _ in range(100):
        f = PROP_TASK.draw(rng, rng.randint(1, 25), "abcdef")
        status, assignment = minimal_assignment(f)
        if status == "sat":
            assert check_assignment(f, assignment)
            for name in assignment:  # no literal can be dropped
                assert not check_assignment(f, {k: v for k, v in assignment.items() if k != name})


# ---------------------------------------------------------------------------------------------------
# Determinism, resumption, atomicity
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_same_seed_different_worker_counts_give_identical_datasets(builds: Builds, tmp_path: Path) -> None:
    one = _load(builds("ltl-35"))  # built with one worker
    two = dataset_builders.build("ltl-35", tmp_path / "ltl", BuildOptions(**{**_small_options("ltl-35"), "workers": 2}))
    assert _as_lists(two) == _as_lists(one) == _as_lists(_load(tmp_path / "ltl"))
    grid = {"num_samples": 2, "num_symbols": 4, "max_size": 12, "progress": False}
    one = dataset_builders.build("prop-heatmap", None, BuildOptions(**grid, workers=1))
    two = dataset_builders.build("prop-heatmap", None, BuildOptions(**grid, workers=2))
    assert _as_lists(one) == _as_lists(two)
    other_seed = dataset_builders.build("ltl-35", None, BuildOptions(**{**_small_options("ltl-35"), "seed": 1}))
    assert _as_lists(other_seed) != _as_lists(_load(builds("ltl-35")))


def test_prop_draws_that_cannot_reach_an_open_size_are_skipped_unbuilt_with_the_same_rows(
    builds: Builds, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataset_builders.prop_random35 as prop_random35

    skipped = []

    def counting(rng, size, names, at_least):
        formula = PROP_TASK.draw_at_least(rng, size, names, at_least)
        skipped.append(formula is None)
        return formula

    monkeypatch.setattr(prop_random35, "PROP_TASK", dataclasses.replace(PROP_TASK, draw_at_least=counting))
    counted = dataset_builders.build("prop-35", None, BuildOptions(**_small_options("prop-35")))
    assert sum(skipped) > len(skipped) / 2  # most draws once the small sizes are full
    monkeypatch.setattr(prop_random35, "PROP_TASK", dataclasses.replace(PROP_TASK, draw_at_least=None))
    every_tree_built = dataset_builders.build("prop-35", None, BuildOptions(**_small_options("prop-35")))
    assert _as_lists(every_tree_built) == _as_lists(counted) == _as_lists(_load(builds("prop-35")))


class Interrupted(RuntimeError):
    pass


@pytest.mark.slow
def test_interrupted_build_resumes_to_the_uninterrupted_result(builds: Builds, tmp_path: Path) -> None:
    out = tmp_path / "ltl"
    options = _small_options("ltl-35")

    def kill_after(k: int):
        def hook(accepted: int) -> None:
            if accepted >= k:
                raise Interrupted

        return hook

    with pytest.raises(Interrupted):
        dataset_builders.build(
            "ltl-35", out, BuildOptions(**{**options, "workers": 2}, chunk_size=10, on_accept=kill_after(55))
        )
    partial = out / PARTIAL_DIR / "ltl-35"
    state = json.loads((partial / "state.json").read_text())
    assert state["chunks"] == 5 and state["accepted"] == 50  # committed chunks only
    chunk_files = sorted(partial.glob("chunk-*.parquet"))
    assert len(chunk_files) == 5 and not list(partial.glob(".*"))  # no half-written shard
    assert sum(len(read_parquet_rows(path)) for path in chunk_files) == 50
    assert not (out / "data").exists()

    seen: list[int] = []
    resumed = dataset_builders.build("ltl-35", out, BuildOptions(**options, chunk_size=10, on_accept=seen.append))
    assert seen[0] == 51  # continued after the committed samples, did not redo them
    assert _as_lists(resumed) == _as_lists(_load(builds("ltl-35")))
    assert _as_lists(_load(out)) == _as_lists(resumed)
    assert not (out / PARTIAL_DIR).exists()

    # Rerunning a finished build reads it back instead of generating again.
    again: list[int] = []
    assert _as_lists(
        dataset_builders.build("ltl-35", out, BuildOptions(**options, on_accept=again.append))
    ) == _as_lists(resumed)
    assert again == []


def test_resuming_with_other_parameters_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "ltl"

    def stop(accepted: int) -> None:
        if accepted >= 15:
            raise Interrupted

    with pytest.raises(Interrupted):
        dataset_builders.build(
            "ltl-35", out, BuildOptions(num_samples=60, workers=1, progress=False, chunk_size=10, on_accept=stop)
        )
    with pytest.raises(ValueError, match="other parameters"):
        dataset_builders.build(
            "ltl-35", out, BuildOptions(num_samples=60, seed=7, workers=1, progress=False, chunk_size=10)
        )


def test_build_refuses_a_directory_with_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        dataset_builders.build("copy-small", tmp_path, BuildOptions(num_samples=10, progress=False))
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------------------------------------------
# The original DeepLTL files
# ---------------------------------------------------------------------------------------------------
def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_load_deepltl_reads_the_original_format(tmp_path: Path) -> None:
    ltl = _write(
        tmp_path / "ltl",
        {
            "train.txt": "&aXb\na;b;{1}\nUa!b\n!b;{1}\n",
            "val.txt": "Xa\n1;a;{1}\n",
            "test.txt": "!U1!c\n{c}\n",
        },
    )
    dataset = dataset_builders.load_deepltl(ltl, check=True)
    assert list(dataset) == ["train", "validation", "test"] and dataset["train"].features == FEATURES
    assert dataset["train"][0] == {"input": "&aXb", "target": "a;b;{1}", "num_symbols": 2, "size": 4}
    assert dataset["test"][0]["size"] == 5 and dataset["validation"][0]["num_symbols"] == 1
    prop = _write(tmp_path / "prop", {"train.txt": "<->a xor b c\na1b1c0\n&a!b\na1b0\n"})
    dataset = dataset_builders.load_deepltl(prop, check=True)  # detected as propositional
    assert dataset["train"][0] == {"input": "=a^bc", "target": "a1b1c0", "num_symbols": 3, "size": 5}
    assert list(dataset) == ["train"]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("&aXb\na;b;{1}\nXa\n", 3, "odd number"),
        ("&aXb\na;b;{1}\n&a\n{a}\n", 3, "not a ltl formula"),
        ("&aXb\na;b;{1\n", 2, "not a trace"),
        ("&aXb\n\nXa\n{a}\n", 2, "empty line"),
    ],
)
def test_load_deepltl_names_the_malformed_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    directory = _write(tmp_path / "bad", {"train.txt": text})
    with pytest.raises(dataset_builders.DeepLTLFormatError, match=message) as caught:
        dataset_builders.load_deepltl(directory, task="ltl")
    assert caught.value.line == line and f"line {line}" in str(caught.value)


def test_load_deepltl_check_rejects_a_wrong_target(tmp_path: Path) -> None:
    directory = _write(tmp_path / "wrong", {"test.txt": "Xa\n!a;{1}\n"})
    with pytest.raises(dataset_builders.DeepLTLFormatError, match="line 2"):
        dataset_builders.load_deepltl(directory, task="ltl", check=True)


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def test_cli_data_build_and_push_arguments() -> None:
    args = build_parser().parse_args(
        [
            "data",
            "build",
            "ltl-heatmap",
            "--out",
            "d",
            "--num-samples",
            "2",
            "--num-symbols",
            "4",
            "--max-size",
            "12",
            "--seed",
            "3",
            "--workers",
            "2",
        ]
    )
    assert (args.name, args.out, args.num_samples, args.num_symbols, args.max_size, args.seed, args.workers) == (
        "ltl-heatmap",
        "d",
        2,
        4,
        12,
        3,
        2,
    )
    args = build_parser().parse_args(["data", "push", "d", "user/repo", "--config", "ltl-35"])
    assert (args.directory, args.repo_id, args.config) == ("d", "user/repo", "ltl-35")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["data", "build", "ltl-35"])  # --out is required


def test_cli_build_writes_a_loadable_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "copy"
    assert main(["data", "build", "copy-small", "--out", str(out), "--num-samples", "50", "--quiet"]) == 0
    assert {n: len(s) for n, s in _load(out).items()} == {"train": 40, "validation": 5, "test": 5}
    assert main(["data", "build", "no-such-config", "--out", str(tmp_path / "x")]) == 2
    assert "unknown configuration" in capsys.readouterr().err


def test_cli_push_refuses_a_directory_that_is_not_a_built_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "push", str(tmp_path), "user/repo"]) == 2
    assert "not a built dataset" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not a built dataset"):
        dataset_builders.push_dataset(tmp_path, "user/repo")
