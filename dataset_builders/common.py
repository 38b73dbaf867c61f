"""Shared machinery of the dataset builders: deterministic, parallel, resumable, atomic generation.

A builder describes its samples as a :class:`SampleSource`: ``candidate(index)`` draws the index-th
candidate deterministically from ``(seed, index)``; ``realise(candidate)`` does the expensive part
(solving, checking) and returns an :class:`Outcome`; ``key(candidate)`` names the quota the
candidate counts against (a formula size, a grid cell). Worker processes draw and realise ranges
of indices; the main process only decides.

:func:`generate` consumes candidates in index order, whatever the number of workers, and accepts a
candidate iff its outcome is a sample and its quota is not yet full at that point of the sequence
(and, with ``unique``, its identity was not accepted before). Workers only run ahead: a candidate
skipped because its quota was already full when its range was dispatched would have been rejected
in order too (quotas only fill), so the accepted sequence depends on the seed alone. Accepted samples are
committed in chunks (Parquet written to a temporary name, then renamed) together with the index to
resume from; rerunning an interrupted build continues from the last committed chunk and never
duplicates or loses a sample.

The second half of the module is what the two logic families (LTL, propositional) share: the
sources (size-gated, symbol-count and grid), the renaming perturbation, the DeepLTL file reader;
then the dataset card and the Hub upload. Each family module plugs a :class:`LogicTask` into it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import string
import tempfile
import warnings
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import datasets
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from hf_symbolinv.files import write_atomic, write_text_atomic
from hf_symbolinv.logic import Formula, LogicSyntaxError, SizeGate, compact_mapping, rename, symbols_of

STATE_FILE = "state.json"
#: Set in data-generation workers: ``import hf_symbolinv`` then skips the model registration.
PARTIAL_DIR = ".partial"
INFO_FILE = "build_info.json"
CARD_FILE = "README.md"
DATA_DIR = "data"
#: Bumped whenever a change alters what a build produces, so that stale partial builds are refused.
FORMAT_VERSION = 1

#: The columns of every dataset built here. For the evaluation grids ``num_symbols`` and ``size``
#: are the cell coordinates.
FEATURES = datasets.Features(
    {
        "input": datasets.Value("string"),
        "target": datasets.Value("string"),
        "num_symbols": datasets.Value("int32"),
        "size": datasets.Value("int32"),
    }
)
SPLIT_FRACTIONS = {"train": 0.8, "validation": 0.1, "test": 0.1}
LETTERS = string.ascii_lowercase


@dataclass(frozen=True)
class Outcome:
    """What realising a candidate gave: a row to keep, or the reason it was dropped."""

    row: dict[str, Any] | None = None
    drop: str | None = None
    note: str | None = None  # something worth counting about a kept row (e.g. a solver fallback)


class SampleSource(Protocol):
    """Candidates by index. ``candidate`` returns None where there is nothing to try at an index;
    ``max_index`` (None: unbounded) is where the source ends.

    ``full(key)`` tells whether a quota is already full; a source may return None without drawing
    when *every* key the candidate could take is full (it would be rejected in order too, since
    quotas only fill): an optimisation that never changes the accepted sequence.

    Optional attributes: ``keys_all_listed`` (every key has a limit: stop once all are full),
    ``inline`` (realising is cheap: do it in this process whatever the worker count),
    ``batch_size`` (indices per task sent to a worker, default 64),
    ``drop_reasons`` (shown in the progress bar from the start) and ``identity(candidate)`` (with
    ``generate(unique=...)``: equal to the row's ``unique`` column, known before realising).
    """

    max_index: int | None

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> Any: ...

    def key(self, candidate: Any) -> Hashable: ...

    def realise(self, candidate: Any) -> Outcome: ...


def derived_rng(seed: int, *parts: object) -> random.Random:
    """A random generator determined by the seed and the parts (a split name, an index, a cell)."""
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


def derived_int(seed: int, low: int, high: int, *parts: object) -> int:
    """An integer uniform in ``[low, high]`` determined by the seed and the parts.

    Cheaper than :func:`derived_rng` (no generator is seeded), for the one draw that decides
    whether a candidate is worth drawing at all.
    """
    digest = hashlib.sha256(repr((seed, "int", *parts)).encode()).digest()
    return low + int.from_bytes(digest[:8], "little") % (high - low + 1)


@dataclass
class BuildState:
    next_index: int = 0
    accepted: int = 0
    chunks: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # accepted per key (repr)
    drops: dict[str, int] = field(default_factory=dict)
    fingerprint: str = ""
    notes: dict[str, int] = field(default_factory=dict)  # notes of accepted rows

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


def fingerprint_of(params: Mapping[str, Any]) -> str:
    """A short stable digest of build parameters (a partial build is only resumed with the same)."""
    text = json.dumps({"format": FORMAT_VERSION, **params}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_parquet(dataset: datasets.Dataset, path: Path) -> None:
    """The dataset's Arrow table as Parquet (its schema carries the features), without the progress
    bar of ``Dataset.to_parquet``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(dataset.data.table, path)


def read_parquet_rows(path: Path) -> list[dict[str, Any]]:
    # pyarrow directly: Dataset.from_parquet would copy every chunk into the datasets cache.
    return pq.read_table(path).to_pylist()


def spawn_pool(workers: int, **kwargs: Any) -> Any:
    """A pool of fresh processes. Workers only draw and solve formulas: they import the logic engine,
    which imports neither torch nor transformers, so each starts in a fraction of a second."""
    return multiprocessing.get_context("spawn").Pool(workers, **kwargs)


_WORKER_SOURCE: SampleSource | None = None

#: One realised candidate: (index, key repr, identity, outcome).
_Entry = tuple[int, str, Hashable, Outcome]


def _init_worker(source: SampleSource) -> None:
    global _WORKER_SOURCE
    _WORKER_SOURCE = source


def _realise_range(
    source: SampleSource,
    start: int,
    stop: int,
    full_keys: frozenset[str],
    seen: Callable[[Hashable], bool] | None = None,
) -> list[_Entry]:
    """Draw and realise the candidates ``start..stop-1``, skipping those whose key was full when
    the range was dispatched (``full_keys``, reprs) or, in this process, whose identity was
    accepted already: both would be rejected in order too, since quotas only fill."""

    def full(key: Hashable) -> bool:
        return repr(key) in full_keys

    with_identity = hasattr(source, "identity")
    out: list[_Entry] = []
    for index in range(start, stop):
        candidate = source.candidate(index, full=full)
        if candidate is None:
            continue
        key_repr = repr(source.key(candidate))
        if key_repr in full_keys:
            continue
        identity = source.identity(candidate) if with_identity else None  # type: ignore[attr-defined]
        if seen is not None and identity is not None and seen(identity):
            continue
        out.append((index, key_repr, identity, source.realise(candidate)))
    return out


def _realise_range_in_worker(start: int, stop: int, full_keys: frozenset[str]) -> list[_Entry]:
    assert _WORKER_SOURCE is not None
    return _realise_range(_WORKER_SOURCE, start, stop, full_keys)


def default_chunk_size(total: int) -> int:
    """About 50 commits per build (small builds commit often enough to resume mid-way)."""
    return max(10, min(20_000, total // 50))


def generate(
    source: SampleSource,
    total: int,
    features: datasets.Features,
    workdir: Path,
    fingerprint: str,
    limits: Mapping[Hashable, int] | None = None,
    workers: int | None = None,
    chunk_size: int = 1000,
    description: str = "generating",
    on_accept: Callable[[int], None] | None = None,
    unique: str | None = None,
    exclude: Iterable[Hashable] = (),
    progress: bool = True,
) -> tuple[list[dict[str, Any]], BuildState]:
    """Accept up to ``total`` samples from ``source`` in index order; return them and the build state.

    ``limits[key]`` caps the samples one key may contribute (keys not listed are not capped); when
    every listed key is full and no other key can occur, generation stops early. ``workdir`` keeps
    the committed chunks and the state; a build with another ``fingerprint`` (other parameters)
    refuses to resume from it. ``on_accept`` is called with the count accepted so far. With
    ``unique`` (a column name) a sample whose ``source.identity`` was accepted before, or is in
    ``exclude``, is rejected. Drop counts are taken in order too (a candidate whose quota is full
    in order is not counted), so they do not depend on the number of workers either.

    Workers draw and realise ranges of ``source.batch_size`` indices (default 64), each with the
    set of keys full at dispatch; the main process only decides, in index order.
    """
    limits = dict(limits or {})
    limit_by_repr = {repr(key): value for key, value in limits.items()}
    workers = max(1, workers or os.cpu_count() or 1)
    if getattr(source, "inline", False):
        workers = 1
    batch = max(1, int(getattr(source, "batch_size", 64)))
    workdir.mkdir(parents=True, exist_ok=True)
    state_path = workdir / STATE_FILE
    state = BuildState(fingerprint=fingerprint)
    if state_path.exists():
        state = BuildState(**json.loads(state_path.read_text()))
        if state.fingerprint != fingerprint:
            raise ValueError(
                f"{workdir} holds a partial build made with other parameters; remove it or build into another directory"
            )
    counts: Counter[str] = Counter(state.counts)
    drops: Counter[str] = Counter(state.drops)
    notes: Counter[str] = Counter(state.notes)
    for reason in getattr(source, "drop_reasons", ()):
        drops.setdefault(reason, 0)
    pending: list[dict[str, Any]] = []
    seen: set[Hashable] = set(exclude)
    if unique is not None:
        for chunk in range(state.chunks):
            seen.update(row[unique] for row in read_parquet_rows(workdir / f"chunk-{chunk:06d}.parquet"))
    full_keys = {key_repr for key_repr, limit in limit_by_repr.items() if counts[key_repr] >= limit}

    def commit(next_index: int) -> None:
        nonlocal pending
        if pending:
            chunk = datasets.Dataset.from_list(pending, features=features)
            write_atomic(workdir / f"chunk-{state.chunks:06d}.parquet", lambda path: write_parquet(chunk, path))
            state.chunks += 1
        state.next_index = next_index
        state.accepted = sum(counts.values())
        state.counts, state.drops, state.notes = dict(counts), dict(drops), dict(notes)
        write_text_atomic(state_path, state.to_json())
        pending = []

    pool = None
    if workers > 1:
        # spawn: workers must not inherit the parent's threads (torch may be loaded in the parent).
        pool = spawn_pool(workers, initializer=_init_worker, initargs=(source,))
    in_process_seen = seen.__contains__ if unique is not None else None

    def dispatch(start: int, stop: int) -> Any:
        snapshot = frozenset(full_keys)
        if pool is None:
            return _realise_range(source, start, stop, snapshot, in_process_seen)
        return pool.apply_async(_realise_range_in_worker, (start, stop, snapshot))

    window: deque[tuple[int, Any]] = deque()  # (end of the index range, result), in index order
    index = state.next_index  # next index to dispatch
    done = state.next_index  # every index below it has been decided in order
    accepted = sum(counts.values())
    capped_only = bool(limits) and getattr(source, "keys_all_listed", False)
    bar = tqdm(
        total=total, initial=accepted, desc=description, unit=" samples", dynamic_ncols=True, disable=not progress
    )
    shown_drops: dict[str, int] = {}
    try:
        while accepted < total and not (capped_only and len(full_keys) >= len(limit_by_repr)):
            # Keep the workers busy: dispatch ahead of the in-order consumer.
            while len(window) < (4 * workers if pool else 1) and (source.max_index is None or index < source.max_index):
                stop = index + batch if source.max_index is None else min(index + batch, source.max_index)
                window.append((stop, dispatch(index, stop)))
                index = stop
            if not window:
                break  # the source is exhausted
            stop, result = window[0]
            entries: list[_Entry] = result if pool is None else result.get()
            for position, key_repr, identity, outcome in entries:
                if key_repr in full_keys or (unique is not None and identity in seen):
                    pass  # the gate, in order (not a drop: how many reach it depends on the workers)
                elif outcome.row is None:
                    drops[outcome.drop or "dropped"] += 1
                else:
                    counts[key_repr] += 1
                    limit = limit_by_repr.get(key_repr)
                    if limit is not None and counts[key_repr] >= limit:
                        full_keys.add(key_repr)
                    if unique is not None:
                        seen.add(identity)
                    accepted += 1
                    if outcome.note is not None:
                        notes[outcome.note] += 1
                    pending.append(outcome.row)
                    bar.update(1)
                    if on_accept is not None:
                        on_accept(accepted)
                done = position + 1
                if len(pending) >= chunk_size:
                    commit(done)  # the rest of the range is dispatched again on resume
                if accepted >= total:
                    break
            else:
                done = stop
                window.popleft()
            if drops != shown_drops:
                shown_drops = dict(drops)
                bar.set_postfix(dict(sorted(drops.items())), refresh=False)
        commit(done)
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
            pool.join()
    rows: list[dict[str, Any]] = []
    for chunk in range(state.chunks):
        rows.extend(read_parquet_rows(workdir / f"chunk-{chunk:06d}.parquet"))
    return rows[:total], state


def split_rows(rows: list[dict[str, Any]], fractions: Mapping[str, float], seed: int) -> dict[str, list[dict]]:
    """Shuffle deterministically, then cut into splits of the given fractions (the last takes the rest)."""
    order = list(range(len(rows)))
    derived_rng(seed, "split").shuffle(order)
    names = list(fractions)
    out: dict[str, list[dict]] = {}
    start = 0
    for i, name in enumerate(names):
        end = len(order) if i == len(names) - 1 else start + round(fractions[name] * len(order))
        out[name] = [rows[j] for j in order[start:end]]
        start = end
    return out


_OUR_FILES = (DATA_DIR, CARD_FILE, INFO_FILE, PARTIAL_DIR)


def check_output_dir(out_dir: Path) -> None:
    """Refuse to build into a non-empty directory that is not a dataset built here (we replace
    what we wrote there, and must not delete a user's files)."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ValueError(f"{out_dir} exists and is not a directory")
    strangers = [c.name for c in out_dir.iterdir() if c.name not in _OUR_FILES and not c.name.startswith(".staging-")]
    if strangers:
        raise ValueError(
            f"{out_dir} is not empty and does not hold a dataset built by symbolinv ({', '.join(sorted(strangers)[:3])}"
            f"{', ...' if len(strangers) > 3 else ''}); choose another --out"
        )


def write_dataset(
    out_dir: Path,
    splits: Mapping[str, list[dict[str, Any]]],
    features: datasets.Features,
    card: str | Callable[[datasets.DatasetDict], str],
    info: Mapping[str, Any] | None = None,
) -> datasets.DatasetDict:
    """Write the splits as Parquet plus a dataset card into ``out_dir``, the layout that
    ``load_dataset(out_dir)`` reads and ``push_to_hub`` publishes.

    Everything is written beside the destination first and moved in by renames; the partial build
    is removed only once the dataset is in place. ``card`` may be a function of the dataset.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(".staging-*"):  # left by a build killed while writing
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    dataset = datasets.DatasetDict(
        {name: datasets.Dataset.from_list(list(rows), features=features) for name, rows in splits.items()}
    )
    for name, split in dataset.items():
        write_parquet(split, staging / DATA_DIR / f"{name}-00000-of-00001.parquet")
    (staging / CARD_FILE).write_text(card(dataset) if callable(card) else card)
    if info is not None:
        (staging / INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    for name in (DATA_DIR, CARD_FILE, INFO_FILE):  # only what we write: never a user's files
        target = out_dir / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for child in staging.iterdir():
        os.replace(child, out_dir / child.name)
    staging.rmdir()
    shutil.rmtree(out_dir / PARTIAL_DIR, ignore_errors=True)
    return dataset


def read_built(out_dir: Path, fingerprint: str) -> datasets.DatasetDict | None:
    """The dataset already complete in ``out_dir`` if it was built with ``fingerprint``, else None."""
    info_path = Path(out_dir) / INFO_FILE
    if not info_path.exists():
        return None
    try:
        info = json.loads(info_path.read_text())
    except json.JSONDecodeError:
        return None
    if info.get("fingerprint") != fingerprint:
        return None
    out = {}
    order = list(SPLIT_FRACTIONS)
    for name in sorted(info.get("splits", {}), key=lambda n: order.index(n) if n in order else len(order)):
        path = Path(out_dir) / DATA_DIR / f"{name}-00000-of-00001.parquet"
        if not path.exists():
            return None
        out[name] = datasets.Dataset.from_list(read_parquet_rows(path), features=FEATURES)
    return datasets.DatasetDict(out)


def iter_chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigSpec:
    """One named configuration: what it is and its default parameters.

    ``variant`` is ``base`` (generated and split 80/10/10), ``supp``, ``renamed``, ``reduced``
    (derived from the ``base`` configuration ``base``) or ``grid`` (one ``test`` split; for grids
    ``num_samples`` is the cap per cell).
    """

    name: str
    family: str
    variant: str
    description: str
    num_samples: int
    num_symbols: int
    max_size: int
    min_size: int = 1
    base: str | None = None

    @property
    def is_grid(self) -> bool:
        return self.variant == "grid"


@dataclass(frozen=True)
class BuildParams:
    """The resolved parameters of one build (defaults filled in)."""

    config: str
    num_samples: int
    num_symbols: int
    max_size: int
    seed: int
    min_size: int = 1
    timeout: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_params(
    spec: ConfigSpec,
    num_samples: int | None,
    num_symbols: int | None,
    max_size: int | None,
    seed: int,
    timeout: float | None = None,
) -> BuildParams:
    params = BuildParams(
        config=spec.name,
        num_samples=spec.num_samples if num_samples is None else num_samples,
        num_symbols=spec.num_symbols if num_symbols is None else num_symbols,
        max_size=spec.max_size if max_size is None else max_size,
        seed=seed,
        min_size=spec.min_size,
        timeout=timeout,
    )
    if params.num_samples < 1:
        raise ValueError(f"--num-samples must be at least 1, got {params.num_samples}")
    if not 0 <= params.num_symbols <= len(LETTERS):
        raise ValueError(f"--num-symbols must be between 0 and {len(LETTERS)}, got {params.num_symbols}")
    if params.max_size < params.min_size:
        raise ValueError(f"--max-size must be at least {params.min_size} for {spec.name}, got {params.max_size}")
    return params


class BuildDirectory:
    """The output directory of a build, or a temporary one removed afterwards when none is given."""

    def __init__(self, out_dir: str | os.PathLike | None) -> None:
        self.temporary = out_dir is None
        self.path = Path(tempfile.mkdtemp(prefix="symbolinv-data-")) if out_dir is None else Path(out_dir)
        check_output_dir(self.path)

    def part(self, name: str) -> Path:
        """Where a generation step keeps its chunks and state (resumable)."""
        return self.path / PARTIAL_DIR / name

    def __enter__(self) -> BuildDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.temporary:
            shutil.rmtree(self.path, ignore_errors=True)


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
    source skips draws whose every possible size is full).
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

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[str, int] | None:
        size = derived_int(self.seed, self.min_size, self.max_size, self.tag, index)
        if full is not None:
            # Simplification only shrinks a formula: if every size up to the drawn one is full,
            # the candidate cannot be accepted, so it is not worth drawing (quotas only fill).
            while self._open_from <= self.max_size and full(self.gate.key(self._open_from)):
                self._open_from += 1
            if self._open_from > size:
                return None
        formula = self.task.draw(derived_rng(self.seed, self.tag, index), size, self.names)
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

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> tuple[str, int] | None:
        k = self.symbol_counts[index % len(self.symbol_counts)]
        if full is not None and all(full(j) for j in range(k + 1)):
            return None  # a formula drawn over k symbols uses at most k
        size = derived_int(self.seed, self.min_size, self.max_size, self.tag, index)
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


DEFAULT_TIMEOUT = 10.0  # seconds per solve, wall clock; DeepLTL's default time-out
#: ``supp``: samples over 0 and 1 symbols added to the training split, as shares of it: the paper
#: (App. F) raised the 0-symbol samples by 202 and the 1-symbol samples by 10,839 in 800k.
SUPP_SHARES = {0: 202 / 800_000, 1: 10_839 / 800_000}
REDUCED_SHARE = 80_000 / 1_000_000  # ``reduced``: the first 80k training samples of 1M
# Draws aimed at each grid cell: 200 x cap + 50. At size 50 only ~1 draw in 1000 keeps its size
# (the trivial identities shrink the rest), so rare cells need many; cells rarer still stay sparse.
GRID_ATTEMPTS_PER_SAMPLE, GRID_ATTEMPTS_EXTRA = 200, 50


@dataclass
class StepReport:
    """What one generation step did (for the card)."""

    name: str
    requested: int
    accepted: int
    drops: dict[str, int]
    notes: dict[str, int] = field(default_factory=dict)


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
    *,
    num_samples: int | None = None,
    num_symbols: int | None = None,
    max_size: int | None = None,
    seed: int = 0,
    workers: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_accept: Callable[[int], None] | None = None,
    chunk_size: int | None = None,
    progress: bool = True,
) -> datasets.DatasetDict:
    """Build one logic configuration (see :class:`ConfigSpec`); ``about`` describes the family's
    generator and solver for the card."""
    params = resolve_params(spec, num_samples, num_symbols, max_size, seed, timeout)
    info = {"config": spec.name, **logic_build_info(task, params)}
    info["fingerprint"] = fingerprint_of(info)
    options = {
        "workers": workers,
        "on_accept": on_accept,
        "chunk_size": chunk_size,
        "progress": progress,
        "description": spec.name,
    }
    with BuildDirectory(out_dir) as directory:
        if not directory.temporary and (built := read_built(directory.path, info["fingerprint"])) is not None:
            return built  # rerunning a finished build
        reports = []
        if spec.is_grid:
            rows, report = grid_rows(task, spec.name, params, directory, options)
            reports.append(report)
            splits = {"test": rows}
        else:
            tag = spec.base or spec.name
            rows, report = gated_rows(task, tag, params, directory, options)
            reports.append(report)
            splits = split_rows(rows, SPLIT_FRACTIONS, params.seed)
            if spec.variant == "supp":
                extra, report = supp_rows(
                    task, tag, params, len(splits["train"]), directory, options, exclude=[row["input"] for row in rows]
                )
                reports.append(report)
                train = splits["train"] + extra
                derived_rng(params.seed, "supp-shuffle").shuffle(train)
                splits["train"] = train
            elif spec.variant == "renamed":
                rename_one = functools.partial(rename_sample, task, timeout=params.timeout)
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
    task: LogicTask,
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
    if spec.variant == "supp":
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
# The original DeepLTL files
# ---------------------------------------------------------------------------------------------------
class DeepLTLFormatError(ValueError):
    """A malformed line in a DeepLTL ``train.txt``/``val.txt``/``test.txt`` file."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}, line {line}: {message}")
        self.path = path
        self.line = line


DEEPLTL_SPLITS = {"train": "train.txt", "validation": "val.txt", "test": "test.txt"}


def read_deepltl_file(path: Path, task: LogicTask, check: bool = False) -> list[dict[str, Any]]:
    """Rows from one DeepLTL file: lines alternate input (Polish notation) and target."""
    lines = Path(path).read_text().split("\n")
    while lines and not lines[-1].strip():
        lines.pop()  # trailing newline(s)
    if len(lines) % 2:
        raise DeepLTLFormatError(path, len(lines), f"input without a {task.target_name} line (odd number of lines)")
    rows = []
    for i in range(0, len(lines), 2):
        for j in (i, i + 1):
            if not lines[j].strip():
                raise DeepLTLFormatError(path, j + 1, "empty line (lines must alternate input and target)")
        try:
            formula = task.parse_formula(lines[i].strip())
        except (LogicSyntaxError, ValueError) as error:
            raise DeepLTLFormatError(path, i + 1, f"not a {task.name} formula: {error}") from None
        try:
            target = task.parse_target(lines[i + 1].strip())
        except (LogicSyntaxError, ValueError) as error:
            raise DeepLTLFormatError(path, i + 2, f"not a {task.target_name}: {error}") from None
        if check and task.check(formula, target, None) != "holds":
            raise DeepLTLFormatError(
                path, i + 2, f"the {task.target_name} does not satisfy the formula on line {i + 1}"
            )
        rows.append(
            {
                "input": task.format_formula(formula),
                "target": task.format_target(target),
                "num_symbols": len(symbols_of(formula)),
                "size": formula.size,
            }
        )
    return rows


def read_deepltl(path: str | os.PathLike, task: LogicTask, check: bool = False) -> datasets.DatasetDict:
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory with DeepLTL train.txt/val.txt/test.txt files")
    splits = {
        name: read_deepltl_file(directory / file, task, check)
        for name, file in DEEPLTL_SPLITS.items()
        if (directory / file).exists()
    }
    if not splits:
        raise FileNotFoundError(f"{directory} has none of {', '.join(DEEPLTL_SPLITS.values())}")
    return datasets.DatasetDict(
        {name: datasets.Dataset.from_list(rows, features=FEATURES) for name, rows in splits.items()}
    )


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


def is_built_dataset(directory: Path) -> bool:
    directory = Path(directory)
    return (directory / CARD_FILE).is_file() and any((directory / DATA_DIR).glob("*.parquet"))


def push_dataset(
    directory: str | os.PathLike,
    repo_id: str,
    config_name: str | None = None,
    private: bool | None = None,
    token: str | None = None,
) -> str:
    """Publish a built dataset directory as configuration ``config_name`` of the Hub dataset
    ``repo_id`` (default name: the configuration it was built as). Returns the name used."""
    directory = Path(directory)
    if not is_built_dataset(directory):
        raise ValueError(
            f"{directory} is not a built dataset (expected {CARD_FILE} and {DATA_DIR}/*.parquet); "
            "build it first with `symbolinv data build NAME --out DIR`"
        )
    if config_name is None:
        info_path = directory / INFO_FILE
        info = json.loads(info_path.read_text()) if info_path.exists() else {}
        config_name = info.get("config", "default")
    dataset = datasets.load_dataset(str(directory))
    dataset.push_to_hub(repo_id, config_name=config_name, private=private, token=token)
    _push_card_text(directory, repo_id, config_name, token)
    return config_name


def _push_card_text(directory: Path, repo_id: str, config_name: str, token: str | None) -> None:
    """``push_to_hub`` writes the card's metadata but not its text: add ours, once per config."""
    from huggingface_hub import DatasetCard

    local = DatasetCard.load(directory / CARD_FILE)
    remote = DatasetCard.load(repo_id, repo_type="dataset", token=token)
    marker = f"<!-- symbolinv config: {config_name} -->"
    if marker in remote.text:
        return
    remote.text = f"{remote.text.rstrip()}\n\n{marker}\n{local.text.strip()}\n"
    remote.push_to_hub(
        repo_id, repo_type="dataset", token=token, commit_message=f"Describe configuration {config_name}"
    )


def size_stats(rows: Iterable[Mapping[str, Any]]) -> tuple[Counter, Counter]:
    sizes: Counter[int] = Counter()
    symbols: Counter[int] = Counter()
    for row in rows:
        sizes[row["size"]] += 1
        symbols[row["num_symbols"]] += 1
    return sizes, symbols


__all__ = [
    "FEATURES",
    "SPLIT_FRACTIONS",
    "Outcome",
    "SampleSource",
    "BuildState",
    "ConfigSpec",
    "BuildParams",
    "BuildDirectory",
    "LogicTask",
    "SizeQuotas",
    "GatedSource",
    "SymbolCountSource",
    "GridSource",
    "DeepLTLFormatError",
    "derived_rng",
    "derived_int",
    "generate",
    "split_rows",
    "write_dataset",
    "read_built",
    "rename_sample",
    "read_deepltl",
    "read_deepltl_file",
    "push_dataset",
    "is_built_dataset",
    "card_metadata",
    "markdown_table",
    "fingerprint_of",
    "resolve_params",
    "default_chunk_size",
    "leaves_allow",
]
