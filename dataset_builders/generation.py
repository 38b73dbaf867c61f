"""Deterministic, parallel, resumable generation of samples: sources, worker pools, chunks and build state."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import signal
import threading
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import datasets
from tqdm.auto import tqdm

from hf_symbolinv.utils.files import write_atomic, write_text_atomic

from .errors import ParametersChangedError
from .output import FORMAT_VERSION, STATE_FILE, read_parquet_rows, write_parquet


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


class DerivedInts:
    """``derived_int(seed, low, high, *parts, index)`` for any integer ``index``, at about 60% of its cost: the
    hash of the text that every index shares is computed once and copied (SHA-256 reads its input in order, so the
    digest is the same). A size-gated build asks it for hundreds of millions of indices, nearly all skipped."""

    def __init__(self, seed: int, low: int, high: int, *parts: object) -> None:
        self.arguments = (seed, low, high, *parts)
        self.low, self.span = low, high - low + 1
        shared = repr((seed, "int", *parts, 0))[: -len("0)")]  # the text up to the index: "(seed, 'int', ..., "
        self._shared = hashlib.sha256(shared.encode())

    def __call__(self, index: int) -> int:
        digest = self._shared.copy()
        digest.update(f"{index})".encode())
        return self.low + int.from_bytes(digest.digest()[:8], "little") % self.span

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return DerivedInts, self.arguments  # a hash object does not pickle: rebuilt in the worker


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


def spawn_pool(workers: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> Any:
    """A pool of fresh processes. Workers only draw and solve formulas: they import the logic engine,
    which imports neither torch nor transformers, so each starts in a fraction of a second. Workers ignore
    Ctrl-C: the parent stops them and says "interrupted" once, instead of each worker printing its traceback."""
    context = multiprocessing.get_context("spawn")
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        return context.Pool(workers, initializer=_quiet_worker, initargs=(initializer, initargs))
    # Born ignoring Ctrl-C: a worker still importing when it comes (a busy machine) would otherwise print a traceback
    # before _quiet_worker runs. An ignored signal stays ignored across exec, and Python keeps it so at start-up.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return context.Pool(workers, initializer=_quiet_worker, initargs=(initializer, initargs))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


def _quiet_worker(initializer: Callable[..., None] | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


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
            raise ParametersChangedError(
                f"{workdir} holds a partial build made with other parameters; pass --overwrite (overwrite=True) "
                "to discard it, or build into another directory"
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
    finished = False
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
        finished = True
    finally:
        bar.close()
        if pool is not None:
            if finished:
                # Let the few ranges still in flight finish, then close: Pool.terminate() can deadlock
                # while its task-feeding thread is blocked writing to a full pipe (seen on a loaded machine).
                for _, result in window:
                    result.wait()
                pool.close()
            else:
                pool.terminate()  # an error or Ctrl-C: stop at once
            pool.join()
    rows: list[dict[str, Any]] = []
    for chunk in range(state.chunks):
        rows.extend(read_parquet_rows(workdir / f"chunk-{chunk:06d}.parquet"))
    return rows[:total], state


def split_counts(total: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Rows per split when ``total`` rows are cut into the given fractions (the last split takes the rest)."""
    names = list(fractions)
    out: dict[str, int] = {}
    left = total
    for i, name in enumerate(names):
        out[name] = left if i == len(names) - 1 else round(fractions[name] * total)
        left -= out[name]
    return out


def equal_quotas(total: int, sizes: Sequence[int]) -> dict[int, int]:
    """``total`` shared equally among ``sizes`` (the remainder, one each, to the first ones)."""
    share, rest = divmod(total, len(sizes))
    return {k: share + (i < rest) for i, k in enumerate(sizes)}


def split_rows(rows: list[dict[str, Any]], fractions: Mapping[str, float], seed: int) -> dict[str, list[dict]]:
    """Shuffle deterministically, then cut into splits of the given fractions (the last takes the rest)."""
    order = list(range(len(rows)))
    derived_rng(seed, "split").shuffle(order)
    out: dict[str, list[dict]] = {}
    start = 0
    for name, count in split_counts(len(order), fractions).items():
        out[name] = [rows[j] for j in order[start : start + count]]
        start += count
    return out


def iter_chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
