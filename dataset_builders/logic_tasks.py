"""The logic datasets' machinery: a task's draw / solve / check, size quotas, gated and grid sources, and the build."""

from __future__ import annotations

import functools
import os
import random
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets
from tqdm.auto import tqdm

from hf_symbolinv.logic import Formula, SizeGate, compact_mapping, rename, symbols_of

from .cards import StepReport, logic_card
from .generation import (
    DerivedInts,
    Outcome,
    SampleSource,
    default_chunk_size,
    derived_rng,
    fingerprint_of,
    generate,
    spawn_pool,
    split_rows,
)
from .output import FEATURES, LETTERS, SPLIT_FRACTIONS, BuildDirectory, write_dataset
from .params import (
    GRID_ATTEMPTS_EXTRA,
    GRID_ATTEMPTS_PER_SAMPLE,
    REDUCED_SHARE,
    SUPP_SHARES,
    BuildOptions,
    BuildParams,
    ConfigSpec,
    checked_options,
    resolve_params,
)


# ---------------------------------------------------------------------------------------------------
# What the logic families share
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogicTask:
    """How a logic family draws, prints, solves and checks (module-level functions only, so the
    task pickles by reference into the worker processes).

    ``solve(formula, timeout)`` returns ``(status, target)`` with status ``sat`` (target set) or a
    drop reason (``unsat``, ``timeout``, ``valid``); ``check(formula, target, timeout)`` returns
    ``holds``, ``fails`` or ``unknown``. ``min_symbols`` is the smallest symbol count for which
    samples exist (a constant propositional formula is valid or unsatisfiable: both dropped).
    ``fallback`` (optional) solves again, differently, when the checker rejects a target.
    ``draw(rng, size, names)`` must never return a formula larger than ``size`` (the size-gated
    source skips draws whose every possible size is full). ``default_timeout`` is the solver's time-out per
    formula when a build asks for none; ``None``: the family solves without one and refuses a ``timeout`` option.
    """

    name: str
    draw: Callable[[random.Random, int, Sequence[str]], Formula]
    format_formula: Callable[[Formula], str]
    parse_formula: Callable[[str], Formula]
    solve: Callable[[Formula, float | None], tuple[str, Any]]
    check: Callable[[Formula, Any, float | None], str]
    format_target: Callable[[Any], str]
    parse_target: Callable[[str], Any]
    drop_reasons: tuple[str, ...]
    min_symbols: int = 0
    target_name: str = "target"
    fallback: Callable[[Formula, float | None], tuple[str, Any]] | None = None
    default_timeout: float | None = None
    #: ``draw_at_least(rng, size, names, at_least)`` (optional): ``draw``'s formula from the same random stream, or
    #: None where it provably has fewer than ``at_least`` nodes, found without building it. The size-gated source
    #: asks it once every smaller size is full, where nearly every large draw simplifies into a full size.
    draw_at_least: Callable[[random.Random, int, Sequence[str], int], Formula | None] | None = None


def realise_formula(task: LogicTask, text: str, timeout: float | None) -> Outcome:
    """Solve a formula (given as text: Formula objects do not pickle across processes) and verify
    the target with the checker before it may be written."""
    formula = task.parse_formula(text)
    status, target = task.solve(formula, timeout)
    if status != "sat":
        return Outcome(drop=status)
    verdict = task.check(formula, target, timeout)
    note = None
    if verdict == "fails" and task.fallback is not None:
        status, target = task.fallback(formula, timeout)
        if status != "sat":
            return Outcome(drop=status)
        verdict, note = task.check(formula, target, timeout), "fallback"
    if verdict != "holds":
        return Outcome(drop="timeout" if verdict == "unknown" else "check-failed")
    return Outcome(
        row={
            "input": text,
            "target": task.format_target(target),
            "num_symbols": len(symbols_of(formula)),
            "size": formula.size,
        },
        note=note,
    )


class SizeQuotas:
    """The per-size quotas of a gated build: DeepLTL's gate (the engine's :class:`SizeGate`), made
    exact in integers.

    Sizes from ``start_from`` on get ``(1 - alpha) * total`` between them (the gate's target per
    size, rounded so that they add up); the smaller sizes share the rest under one joint key,
    ``"small"``, so the build reaches ``total`` exactly when every quota is full and the sizes
    10..max are near-uniform. (DeepLTL capped each small size like a large one and relied on Spot's
    duplicate-free generator to keep them rare; with one joint quota their share is ``alpha`` by
    construction.) With ``max_size < start_from`` every size is gated and alpha is unused.
    """

    def __init__(self, total: int, min_size: int, max_size: int, alpha: float = 0.112, start_from: int = 10) -> None:
        if max_size < start_from:
            start_from, alpha = min_size, 0.0
        gate = SizeGate(total, alpha=alpha, min_size=min_size, max_size=max_size, start_from=start_from)
        self.start_from = gate.enforced[0]
        enforced = round(gate.target * len(gate.enforced))
        base, extra = divmod(enforced, len(gate.enforced))
        self.limits: dict[Hashable, int] = {s: base + (1 if i < extra else 0) for i, s in enumerate(gate.enforced)}
        if self.start_from > min_size:
            self.limits["small"] = total - enforced

    def key(self, size: int) -> Hashable:
        return size if size >= self.start_from else "small"


@dataclass
class GatedSource:
    """Formulas of tree size uniform in ``[min_size, max_size]`` (drawn before the trivial
    simplifications, as Spot's ``randltl --tree-size`` does) over ``num_symbols`` symbols, keyed by
    the :class:`SizeQuotas` of their final size."""

    task: LogicTask
    tag: str
    seed: int
    num_symbols: int
    min_size: int
    max_size: int
    gate: SizeQuotas
    timeout: float | None
    max_index: int | None = None
    keys_all_listed: bool = True
    batch_size: int = 256  # most indices are skipped without drawing
    _open_from: int = field(default=0, init=False, repr=False)  # smallest size that may be open (dispatch side)

    def __post_init__(self) -> None:
        self.names = LETTERS[: self.num_symbols]
        self.drop_reasons = self.task.drop_reasons
        self._open_from = self.min_size
        self._sizes = DerivedInts(self.seed, self.min_size, self.max_size, self.tag)

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[str, int] | None:
        size = self._sizes(index)
        if full is not None:
            # Simplification only shrinks a formula: if every size up to the drawn one is full,
            # the candidate cannot be accepted, so it is not worth drawing (quotas only fill).
            while self._open_from <= self.max_size and full(self.gate.key(self._open_from)):
                self._open_from += 1
            if self._open_from > size:
                return None
        rng = derived_rng(self.seed, self.tag, index)
        if full is not None and self.task.draw_at_least is not None and self._open_from > self.min_size:
            # Every size below _open_from is full: a draw that cannot reach it is not built.
            formula = self.task.draw_at_least(rng, size, self.names, self._open_from)
            if formula is None:
                return None
        else:
            formula = self.task.draw(rng, size, self.names)
        if full is not None and full(self.gate.key(formula.size)):
            return None  # spares printing it
        return self.task.format_formula(formula), formula.size

    def key(self, candidate: tuple[str, int]) -> Hashable:
        return self.gate.key(candidate[1])

    def identity(self, candidate: tuple[str, int]) -> str:
        return candidate[0]

    def realise(self, candidate: tuple[str, int]) -> Outcome:
        return realise_formula(self.task, candidate[0], self.timeout)


@dataclass
class SymbolCountSource:
    """Formulas over ``k`` symbols for ``k`` in ``symbol_counts`` (in turn), tree size uniform in
    ``[min_size, max_size]``, keyed by the number of distinct symbols they actually use."""

    task: LogicTask
    tag: str
    seed: int
    symbol_counts: tuple[int, ...]
    min_size: int
    max_size: int
    timeout: float | None
    max_index: int | None = None
    keys_all_listed: bool = True
    batch_size: int = 64

    def __post_init__(self) -> None:
        self.drop_reasons = self.task.drop_reasons
        self._sizes = DerivedInts(self.seed, self.min_size, self.max_size, self.tag)

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[str, int] | None:
        k = self.symbol_counts[index % len(self.symbol_counts)]
        if full is not None and all(full(j) for j in range(k + 1)):
            return None  # a formula drawn over k symbols uses at most k
        size = self._sizes(index)
        formula = self.task.draw(derived_rng(self.seed, self.tag, index), size, LETTERS[:k])
        used = len(symbols_of(formula))
        if full is not None and full(used):
            return None
        return self.task.format_formula(formula), used

    def key(self, candidate: tuple[str, int]) -> Hashable:
        return candidate[1]

    def identity(self, candidate: tuple[str, int]) -> str:
        return candidate[0]

    def realise(self, candidate: tuple[str, int]) -> Outcome:
        return realise_formula(self.task, candidate[0], self.timeout)


def leaves_allow(num_symbols: int, size: int) -> bool:
    """Can a formula of tree size ``size`` (unary and binary operators) use ``num_symbols`` symbols?"""
    return num_symbols <= (size + 1) // 2


@dataclass
class GridSource:
    """The evaluation grid: cells ``(symbols, size)`` in turn, each drawn over its symbol count at
    its tree size, compacted to ``a, b, ...`` and keyed by the cell it actually lands in (the
    trivial simplifications may shrink it; it may use fewer symbols). ``attempts`` draws per cell
    bound the build: cells that are possible but rare keep what they got."""

    task: LogicTask
    tag: str
    seed: int
    cells: tuple[tuple[int, int], ...]
    attempts: int
    timeout: float | None
    keys_all_listed: bool = True
    batch_size: int = 32

    def __post_init__(self) -> None:
        self.max_index = len(self.cells) * self.attempts
        self.drop_reasons = self.task.drop_reasons
        self._cells = frozenset(self.cells)
        self._closed: set[tuple[int, int]] = set()  # targets whose reachable cells are all full

    def _all_reachable_full(self, cell: tuple[int, int], full: Callable[[Hashable], bool]) -> bool:
        if cell in self._closed:
            return True
        k, n = cell

        def reachable() -> Iterator[tuple[int, int]]:
            yield cell  # usually the open one: checked first
            for i in range(k, -1, -1):
                for j in range(n, 0, -1):
                    yield i, j

        if any(c in self._cells and not full(c) for c in reachable()):
            return False
        self._closed.add(cell)
        return True

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[str, int, int] | None:
        cell = self.cells[index % len(self.cells)]
        if full is not None and self._all_reachable_full(cell, full):
            return None  # drawn over k symbols at size n, it lands in a cell (<= k, <= n)
        k, n = cell
        formula = self.task.draw(derived_rng(self.seed, self.tag, index), n, LETTERS[:k])
        formula = rename(formula, compact_mapping(formula))  # type: ignore[assignment]
        landed = (len(symbols_of(formula)), formula.size)
        if landed not in self._cells or (full is not None and full(landed)):
            return None  # outside the grid: e.g. a constant propositional formula, never a sample
        return self.task.format_formula(formula), landed[0], landed[1]

    def key(self, candidate: tuple[str, int, int]) -> Hashable:
        return (candidate[1], candidate[2])

    def identity(self, candidate: tuple[str, int, int]) -> str:
        return candidate[0]

    def realise(self, candidate: tuple[str, int, int]) -> Outcome:
        return realise_formula(self.task, candidate[0], self.timeout)


def rename_sample(task: LogicTask, row: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """The renaming perturbation: symbols renamed so that their first appearances in the target
    are ``a, b, c, ...``, the formula's other symbols following in order of first appearance in
    the formula; formula and target renamed consistently, and checked again."""
    formula = task.parse_formula(row["input"])
    target = task.parse_target(row["target"])
    mapping = compact_mapping(target, formula)
    formula, target = rename(formula, mapping), rename(target, mapping)
    if task.check(formula, target, timeout) != "holds":
        raise AssertionError(f"renaming broke a sample: {row}")  # renaming preserves satisfaction
    return {**row, "input": task.format_formula(formula), "target": task.format_target(target)}


def logic_build_info(task: LogicTask, params: BuildParams) -> dict[str, Any]:
    return {"family": task.name, **params.as_dict()}


def _run_step(
    name: str,
    source: SampleSource,
    total: int,
    limits: Mapping[Hashable, int] | None,
    directory: BuildDirectory,
    fingerprint: str,
    options: Mapping[str, Any],
    unique: str | None = "input",
    exclude: Iterable[Hashable] = (),
    expect_all: bool = True,
) -> tuple[list[dict], StepReport]:
    chunk_size = options.get("chunk_size") or default_chunk_size(total)
    rows, state = generate(
        source,
        total,
        FEATURES,
        directory.part(name),
        fingerprint,
        limits=limits,
        workers=options.get("workers"),
        chunk_size=chunk_size,
        description=options.get("description", name),
        on_accept=options.get("on_accept"),
        unique=unique,
        exclude=exclude,
        progress=options.get("progress", True),
    )
    if expect_all and len(rows) < total:
        warnings.warn(
            f"{name}: the generator ran out after {len(rows)} of {total} samples (are the size and "
            "symbol parameters compatible?)",
            stacklevel=3,
        )
    return rows, StepReport(
        name, total, len(rows), dict(sorted(state.drops.items())), dict(sorted(state.notes.items()))
    )


def map_rows(
    function: Callable[[dict[str, Any]], dict[str, Any]],
    rows: list[dict[str, Any]],
    workers: int | None,
    description: str = "",
    progress: bool = True,
) -> list[dict[str, Any]]:
    """``function`` on every row, in order, on ``workers`` processes (``function`` must pickle)."""
    workers = max(1, workers or os.cpu_count() or 1)
    with tqdm(
        total=len(rows), desc=description, unit=" samples", dynamic_ncols=True, disable=not progress or len(rows) < 1000
    ) as bar:
        if workers == 1 or len(rows) < 1000:
            out = []
            for row in rows:
                out.append(function(row))
                bar.update(1)
            return out
        with spawn_pool(workers) as pool:
            out = []
            for result in pool.imap(function, rows, chunksize=max(1, min(1000, len(rows) // (4 * workers)))):
                out.append(result)
                bar.update(1)
            return out


def gated_rows(
    task: LogicTask, tag: str, params: BuildParams, directory: BuildDirectory, options: Mapping[str, Any]
) -> tuple[list[dict], StepReport]:
    """The size-gated samples of a ``base`` configuration (``tag`` names its random stream)."""
    gate = SizeQuotas(params.num_samples, params.min_size, params.max_size)
    source = GatedSource(
        task,
        tag,
        params.seed,
        params.num_symbols,
        params.min_size,
        params.max_size,
        gate,
        params.timeout,
        max_index=2_000 * params.num_samples + 1_000_000,
    )
    fingerprint = fingerprint_of({"step": "gated", "tag": tag, **logic_build_info(task, params), "config": None})
    return _run_step(tag, source, params.num_samples, gate.limits, directory, fingerprint, options)


def supp_rows(
    task: LogicTask,
    tag: str,
    params: BuildParams,
    train_size: int,
    directory: BuildDirectory,
    options: Mapping[str, Any],
    exclude: Iterable[str],
) -> tuple[list[dict], StepReport]:
    """Samples over 0 and 1 symbols, as many as :data:`SUPP_SHARES` of the training split (at
    least one each), never repeating a formula of the base data."""
    quotas = {k: max(1, round(share * train_size)) for k, share in SUPP_SHARES.items() if k >= task.min_symbols}
    source = SymbolCountSource(
        task,
        f"{tag}-supp",
        params.seed,
        tuple(quotas),
        params.min_size,
        params.max_size,
        params.timeout,
        max_index=10_000 * sum(quotas) + 100_000,
    )
    fingerprint = fingerprint_of(
        {"step": "supp", "tag": tag, "quotas": quotas, **logic_build_info(task, params), "config": None}
    )
    return _run_step(
        "supp",
        source,
        sum(quotas.values()),
        quotas,
        directory,
        fingerprint,
        {**options, "description": f"{options.get('description', tag)} (0/1 symbols)"},
        exclude=exclude,
    )


def grid_cells(task: LogicTask, max_symbols: int, max_size: int) -> tuple[tuple[int, int], ...]:
    """Every (symbol count, size) cell a formula can occupy (a size-n tree has at most
    (n + 1) / 2 leaves; no propositional sample has 0 symbols)."""
    return tuple(
        (k, n) for k in range(task.min_symbols, max_symbols + 1) for n in range(1, max_size + 1) if leaves_allow(k, n)
    )


def grid_rows(
    task: LogicTask, tag: str, params: BuildParams, directory: BuildDirectory, options: Mapping[str, Any]
) -> tuple[list[dict], StepReport]:
    cells = grid_cells(task, params.num_symbols, params.max_size)
    cap = params.num_samples
    attempts = GRID_ATTEMPTS_PER_SAMPLE * cap + GRID_ATTEMPTS_EXTRA
    source = GridSource(task, tag, params.seed, cells, attempts, params.timeout)
    fingerprint = fingerprint_of({"step": "grid", "tag": tag, **logic_build_info(task, params), "config": None})
    rows, report = _run_step(
        tag, source, cap * len(cells), dict.fromkeys(cells, cap), directory, fingerprint, options, expect_all=False
    )  # rare cells keep what they got
    rows.sort(key=lambda row: (row["num_symbols"], row["size"]))  # stable: cell by cell, in generation order
    return rows, report


def build_logic(
    task: LogicTask,
    spec: ConfigSpec,
    about: str,
    out_dir: str | os.PathLike | None = None,
    options: BuildOptions | None = None,
) -> datasets.DatasetDict:
    """Build one logic configuration (see :class:`ConfigSpec`) as ``options`` ask (default: the configuration's
    parameters); ``about`` describes the family's generator and solver for the card. A dataset of other parameters
    already in ``out_dir`` is replaced only with ``options.overwrite`` (see
    :class:`~dataset_builders.output.BuildDirectory`)."""
    options = checked_options(options)
    timed = task.default_timeout is not None
    options.refuse_unused(spec.name, ("timeout",) if timed else ())
    timeout = (task.default_timeout if options.timeout is None else options.timeout) if timed else None
    params = resolve_params(spec, options, timeout)
    if params.num_symbols < task.min_symbols:
        raise ValueError(
            f"--num-symbols must be at least {task.min_symbols} for {spec.name} (a {task.name} formula without "
            f"symbols is constant), got {params.num_symbols}"
        )
    info = {"config": spec.name, **logic_build_info(task, params)}
    info["fingerprint"] = fingerprint_of(info)
    step_options = {
        "workers": options.workers,
        "on_accept": options.on_accept,
        "chunk_size": options.chunk_size,
        "progress": options.progress,
        "description": spec.name,
    }
    with BuildDirectory(out_dir, info, overwrite=options.overwrite) as directory:
        if directory.built is not None:
            return directory.built  # rerunning a finished build
        reports = []
        if spec.is_grid:
            rows, report = grid_rows(task, spec.name, params, directory, step_options)
            reports.append(report)
            splits = {"test": rows}
        else:
            tag = spec.base or spec.name
            rows, report = gated_rows(task, tag, params, directory, step_options)
            reports.append(report)
            splits = split_rows(rows, SPLIT_FRACTIONS, params.seed)
            if spec.variant == "test":
                splits = {"test": rows}
            elif spec.variant == "supp":
                extra, report = supp_rows(
                    task,
                    tag,
                    params,
                    len(splits["train"]),
                    directory,
                    step_options,
                    exclude=[row["input"] for row in rows],
                )
                reports.append(report)
                train = splits["train"] + extra
                derived_rng(params.seed, "supp-shuffle").shuffle(train)
                splits["train"] = train
            elif spec.variant == "renamed":
                rename_one = functools.partial(rename_sample, task, timeout=params.timeout)
                workers, progress = options.workers, options.progress
                splits = {
                    name: map_rows(rename_one, split, workers, f"{spec.name}: renaming {name}", progress)
                    for name, split in splits.items()
                }
            elif spec.variant == "reduced":
                splits["train"] = splits["train"][: max(1, round(REDUCED_SHARE * params.num_samples))]
        info["splits"] = {name: len(split) for name, split in splits.items()}
        info["steps"] = [report.__dict__ for report in reports]

        def card(dataset: datasets.DatasetDict) -> str:
            return logic_card(task, spec, params, about, dataset, reports)

        return write_dataset(directory.path, splits, FEATURES, card, info)


#: The random-formula configurations that the LTL and propositional families both have, by name suffix: the
#: variant, the default sample count, symbol count and largest size, and the suffix of the configuration a derived
#: one is drawn from (``ltl-35-supp`` from ``ltl-35``).
RANDOM35_SHAPES: dict[str, tuple[str, int, int, int, str | None]] = {
    "35": ("base", 1_000_000, 5, 35, None),
    "35-10sym": ("base", 1_000_000, 10, 35, None),
    "35-supp": ("supp", 1_000_000, 5, 35, "35"),
    "35-renamed": ("renamed", 1_000_000, 5, 35, "35"),
    "35-reduced": ("reduced", 1_000_000, 5, 35, "35"),
    "small": ("base", 100_000, 3, 20, None),
    "small-8sym": ("test", 4_000, 8, 20, None),
    "heatmap": ("grid", 100, 10, 50, None),
}


def random35_configs(family: str, descriptions: Mapping[str, str]) -> dict[str, ConfigSpec]:
    """The configurations of :data:`RANDOM35_SHAPES` for ``family`` (``ltl``, ``prop``), each with its description
    (by suffix: every shape needs one, and no other is taken)."""
    if set(descriptions) != set(RANDOM35_SHAPES):
        raise ValueError(f"descriptions for {sorted(RANDOM35_SHAPES)} expected, got {sorted(descriptions)}")
    specs = {}
    for suffix, (variant, num_samples, num_symbols, max_size, base) in RANDOM35_SHAPES.items():
        name = f"{family}-{suffix}"
        based = f"{family}-{base}" if base is not None else None
        specs[name] = ConfigSpec(
            name, family, variant, descriptions[suffix], num_samples, num_symbols, max_size, base=based
        )
    return specs


def build_random35(
    task: LogicTask,
    configs: Mapping[str, ConfigSpec],
    about: str,
    config: str,
    out_dir: str | os.PathLike | None,
    options: BuildOptions | None,
) -> datasets.DatasetDict:
    """Build the configuration ``config`` of a random-formula family as ``options`` ask (see :func:`build_logic`)."""
    if config not in configs:
        kind = {"ltl": "LTL", "prop": "propositional"}.get(task.name, task.name)
        raise ValueError(f"unknown {kind} configuration {config!r}; choose one of {', '.join(configs)}")
    return build_logic(task, configs[config], about, out_dir, options)
