"""The web demo's work, without Gradio: answering a formula, a family story or a bracketed tree with a model and
renaming its symbols (a story's people), each request under a time limit, several at once.

:class:`DemoBackend` keeps one :class:`~hf_symbolinv.evaluation.solve.Solver` (each model loaded once) and answers
with the model the page chose, through the code ``symbolinv solve`` answers with: formulas and stories by
:meth:`~hf_symbolinv.evaluation.solve.Solver.solve`, trees by the tree route's
:func:`~hf_symbolinv.evaluation.tree.answer_tree`. Requests run in worker threads: the checkers and exact solvers
of different requests run side by side, while each model generates for one request at a time (its calls are a few
milliseconds; a shared model is not documented as safe to call from two threads at once).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..evaluation.solve import Answer, Solution, Solver
from ..evaluation.tree import TreeAnswer
from .core import (
    AUTOMATIC,
    FORMULA,
    LETTERS,
    SHIPPED_FOR_KIND,
    STORY,
    STORY_EXAMPLES,
    TREE,
    TREE_EXAMPLES,
    InputError,
    ModelEntry,
    ReadFormula,
    ReadStory,
    ReadTree,
    input_kind,
    model_entries,
    random_renaming,
    read_config,
    read_formula,
    read_story_input,
    read_tree_input,
    rename_answer,
    rename_formula_text,
    rename_story_text,
    same_answer,
)

#: Seconds one request may take before the page says so (the LTL exact solver alone may take 5).
REQUEST_TIME_LIMIT = 30.0
#: Beam width of every answer (the shipped models' cards are measured at beam 3); wider when more answers are asked.
BEAM = 3
#: The most answers the page asks for.
MAX_TOP_N = 5
#: Seconds the checking work of one request (every answer checked, the exact solver) may take in its process.
CHECK_TIME_LIMIT = 20.0
#: Bytes of memory that the checking work of one request may use (its process's address space).
CHECK_MEMORY_LIMIT = 1536 * 2**20
#: Seconds the checker may take on one answer (the exact solver has its own budget of work, see
#: :data:`hf_symbolinv.evaluation.solve.EXACT_LTL_WORK`).
CHECK_SECONDS = 4.0
#: Requests a checking process serves before it is replaced (the logic engine's caches live as long as it does).
CHECK_TASKS_PER_PROCESS = 200
#: Seconds a new checking process may take to start (a busy server's fork); not counted in a request's limit.
CHECK_PROCESS_START_LIMIT = 60.0
#: Copies of each model's pipeline, so that as many requests generate side by side (Gradio's concurrency limit).
PIPELINE_COPIES = 4
#: Worker threads: more than Gradio's concurrency limit, so that requests past their time limit (which finish in
#: the background: a thread cannot be stopped) leave room for new ones.
WORKERS = 8

T = TypeVar("T")


class RequestTimeout(InputError):
    """A request that took longer than the page's time limit."""


class _SolvedView:
    """A view of a :class:`Solution`: its answers."""

    solution: Solution

    @property
    def answers(self) -> list[Answer]:
        return self.solution.answers


@dataclass(frozen=True)
class AnswerView(_SolvedView):
    """What the page shows for one formula: how it was read, which model answered, the answers with the
    checker's verdicts, and the exact solver's verdict on satisfiability."""

    read: ReadFormula
    model: ModelEntry
    folder: Path
    solution: Solution


@dataclass(frozen=True)
class StoryView(_SolvedView):
    """What the page shows for a family story: how it was read, which model answered, and its answers (relation
    words) with the checker's verdicts (CLUTRR's judge: unknown without a reference, except where the kinship
    table decides)."""

    read: ReadStory
    model: ModelEntry
    folder: Path
    solution: Solution


@dataclass(frozen=True)
class TreeView:
    """What the page shows for a bracketed tree: the tree as typed, which model answered, and its answer tree with
    the task's verdict and the steps the model ran."""

    read: ReadTree
    model: ModelEntry
    folder: Path
    answer: TreeAnswer


@dataclass(frozen=True)
class RenamedAnswers:
    """One model's first answer to the formula, that answer renamed, and its first answer to the renamed formula;
    ``error`` instead where the model cannot read one of them (a fixed-embedding model has rows for a few symbols
    only)."""

    model: ModelEntry
    folder: Path | None
    original: Answer | None = None
    expected: str | None = None
    renamed: Answer | None = None
    error: str | None = None

    @property
    def follows(self) -> bool:
        """Whether renaming the first answer gives the second: the answer was renamed with the formula."""
        return (
            self.error is None
            and self.expected is not None
            and self.renamed is not None
            and same_answer(self.expected, self.renamed.text)
        )


@dataclass(frozen=True)
class RenameView:
    """A random renaming of the formula's symbols (a story's people) and what the chosen model (and every
    fixed-embedding model loaded for the same task) answers before and after it."""

    read: ReadFormula | ReadStory
    mapping: dict[str, str]
    renamed_formula: str
    style: str
    results: list[RenamedAnswers] = field(default_factory=list)


class _PipelinePool:
    """Copies of one folder's pipeline, each generating for one caller at a time (a shared pipeline is not
    documented as safe to call from two threads at once): up to ``copies`` requests generate side by side, so that
    a quick request does not wait for a slow one's generation. The shipped models are a few MB each; a copy is
    loaded when every existing one is busy."""

    def __init__(self, first: Any, load: Callable[[], Any], copies: int) -> None:
        self._free = [first]
        self._count = 1
        self._load = load
        self._copies = copies
        self._available = threading.Condition()

    def _acquire(self) -> Any:
        with self._available:
            while not self._free and self._count >= self._copies:
                self._available.wait()
            if self._free:
                return self._free.pop()
            self._count += 1  # a new copy: loaded outside the lock
        try:
            return self._load()
        except BaseException:
            with self._available:
                self._count -= 1
                self._available.notify()
            raise

    def fill(self) -> None:
        """Load the copies not loaded yet."""
        while True:
            with self._available:
                if self._count >= self._copies:
                    return
                self._count += 1
            pipe = self._load()
            pipe("a", num_beams=1)  # a model's first call is slower: made here, not by a visitor's request
            with self._available:
                self._free.append(pipe)
                self._available.notify()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.borrowed() as pipe:
            return pipe(*args, **kwargs)

    @contextmanager
    def borrowed(self) -> Iterator[Any]:
        """One copy, for this caller alone until the block ends."""
        pipe = self._acquire()
        try:
            yield pipe
        finally:
            with self._available:
                self._free.append(pipe)
                self._available.notify()


class _TreeModel:
    """A saved tree model and its tokenizer, answering one tree at a time as ``symbolinv solve`` does (the tree
    route's loader, task and :func:`~hf_symbolinv.evaluation.tree.answer_tree`)."""

    def __init__(self, folder: Path) -> None:
        from ..routes.tree import load_tree_folder, tree_task

        self.model, self.tokenizer = load_tree_folder(folder)
        self.task = tree_task(self.model.config)

    def __call__(self, text: str) -> TreeAnswer:
        from ..evaluation.tree import answer_tree

        return answer_tree(self.model, self.tokenizer, self.task, text)


def _worker_loop(connection: Any, memory_limit: int | None) -> None:
    """A checking process: runs each ``(work, args)`` it receives and sends back ``(True, result)`` or ``(False,
    exception)``, until its connection closes."""
    os.nice(5)  # below the page's own work: a quick request's generation goes first
    if memory_limit is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    connection.send(None)  # started: the parent counts a request's time limit from here on
    while True:
        try:
            work, args = connection.recv()
        except (EOFError, OSError):
            return
        try:
            outcome: tuple[bool, Any] = (True, work(*args))
        except BaseException as error:  # sent to the parent, which raises it there
            outcome = (False, error)
        try:
            connection.send(outcome)
        except Exception as error:  # an exception that does not pickle: its message
            connection.send((False, RuntimeError(f"{type(error).__name__}: {error}")))


class _Worker:
    def __init__(self, context: Any, memory_limit: int | None) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_worker_loop, args=(child, memory_limit), name="symbolinv-web-check", daemon=True
        )
        self.process.start()
        child.close()
        self.tasks = 0
        self.started = False

    def wait_started(self) -> None:
        """Wait for the process to say it started: the start of a replacement on a busy machine is not the
        request's work, and a request's time limit must not run out on it."""
        if self.started:
            return
        if not self.connection.poll(CHECK_PROCESS_START_LIMIT):
            raise OSError("the checking process did not start")
        self.connection.recv()
        self.started = True

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


class StoppableWork:
    """Runs pure-Python work (the checkers and the exact solver of one request) in a process of its own, stopped
    past its time limit and bounded in memory: a slow request takes neither the server's interpreter lock from
    the others nor its memory, and stops when its time is up, which a thread cannot. The processes are kept for the
    next requests (started from a server process that has the logic engine loaded, ``forkserver``, so that none
    inherits the page's models or threads); one that ran past its limit is killed and replaced, and each is
    replaced after :data:`CHECK_TASKS_PER_PROCESS` requests so that the engine's caches cannot grow without bound."""

    def __init__(self, time_limit: float = CHECK_TIME_LIMIT, memory_limit: int | None = CHECK_MEMORY_LIMIT) -> None:
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["hf_symbolinv.evaluation.solve", "hf_symbolinv.tasks"])
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.is_alive():
                    return worker
                worker.stop()
        return _Worker(self._context, self.memory_limit)

    def _give_back(self, worker: _Worker) -> None:
        worker.tasks += 1
        with self._lock:
            if not self._closed and worker.tasks < CHECK_TASKS_PER_PROCESS and worker.process.is_alive():
                self._idle.append(worker)
                return
        worker.stop()

    def start(self, count: int) -> None:
        """Have ``count`` processes ready."""
        with self._lock:
            missing = count - len(self._idle)
        workers = [_Worker(self._context, self.memory_limit) for _ in range(max(0, missing))]
        with self._lock:
            self._idle.extend(workers)

    def close(self) -> None:
        """Stop the idle processes (a running one stops when its request ends)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()

    def __call__(self, work: Callable[..., T], args: tuple) -> T:
        worker = self._take()
        try:
            worker.wait_started()
            worker.connection.send((work, args))
            if not worker.connection.poll(self.time_limit):
                worker.stop()
                raise RequestTimeout(
                    f"checking the answers took longer than {self.time_limit:g} s, the page's limit for it; try a "
                    "smaller formula"
                )
            ok, value = worker.connection.recv()
        except (EOFError, OSError):
            worker.stop()
            raise InputError("checking the answers stopped without a result; try a smaller formula") from None
        self._give_back(worker)
        if not ok:
            if isinstance(value, MemoryError):
                limit = (self.memory_limit or 0) // 2**20
                raise InputError(f"checking the answers needed more than {limit:,} MB; try a smaller formula")
            raise value
        return value


class _ThreadSafeSolver(Solver):
    """A :class:`Solver` whose models load once even when two requests ask at the same time, generate for one
    request at a time, and whose checking work runs in a process that is stopped past its limit
    (:class:`StoppableWork`)."""

    def __init__(self, check_runner: StoppableWork | None = None, copies: int = PIPELINE_COPIES) -> None:
        super().__init__(None)
        self._load_lock = threading.Lock()
        self._pools: dict[Path, tuple[_PipelinePool, str]] = {}
        self._trees: dict[Path, _PipelinePool] = {}
        self._copies = copies
        self._stoppable = check_runner if check_runner is not None else StoppableWork()

    def check_runner(self, work: Callable[..., T], args: tuple) -> T:
        return self._stoppable(work, args)

    def close(self) -> None:
        self._stoppable.close()

    def prepare(self) -> None:
        """Load every copy of the loaded models' pipelines and start the checking processes, so that requests side
        by side wait for neither."""
        with self._load_lock:
            pools = [pool for pool, _ in self._pools.values()]
        for pool in pools:
            pool.fill()
        self._stoppable.start(self._copies)

    def pipeline(self, folder: Path) -> tuple[Any, str]:
        with self._load_lock:
            if folder not in self._pools:
                pipe, task = self.load_pipeline(folder)
                load = lambda: self.load_pipeline(folder)[0]  # noqa: E731
                self._pools[folder] = (_PipelinePool(pipe, load, self._copies), task)
            return self._pools[folder]

    def composed(self, folder: Path, pipe: Any, story: str, beam: int, top_n: int) -> list[str] | None:
        # The composer asks its model as it composes: each copy has its own composer, used while the copy is held.
        if not isinstance(pipe, _PipelinePool):
            return super().composed(folder, pipe, story, beam, top_n)
        with pipe.borrowed() as copy:
            return super().composed(folder, copy, story, beam, top_n)

    def answer_tree(self, folder: Path, text: str) -> TreeAnswer:
        """The tree model of ``folder``'s answer to ``text`` (the model loaded once, each copy answering one request
        at a time)."""
        with self._load_lock:
            if folder not in self._trees:
                self._trees[folder] = _PipelinePool(_TreeModel(folder), lambda: _TreeModel(folder), self._copies)
            pool = self._trees[folder]
        return pool(text)


class DemoBackend:
    """Answers and renamings for the page, with the models of ``model_entries(folders)``."""

    def __init__(
        self,
        folders: Iterable[str | Path] = (),
        time_limit: float = REQUEST_TIME_LIMIT,
        workers: int = WORKERS,
    ) -> None:
        self.entries = model_entries(folders)
        self.time_limit = time_limit
        self.solver = _ThreadSafeSolver()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="symbolinv-web")

    # --- models --------------------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return [entry.label for entry in self.entries]

    def entry(self, label: str | None) -> ModelEntry:
        for entry in self.entries:
            if entry.label == (label or AUTOMATIC):
                return entry
        raise InputError(f"no model {label!r} on this page; choose one of: {', '.join(self.labels)}")

    @property
    def fixed_entries(self) -> list[ModelEntry]:
        return [entry for entry in self.entries if entry.fixed]

    def folder_for(self, entry: ModelEntry, read: ReadFormula | ReadStory | ReadTree) -> Path:
        """The folder that answers ``read`` for ``entry``: its own, or the shipped model for a formula's task, size
        and symbol count, or the shipped story or tree model."""
        if entry.folder is not None:
            return entry.folder
        from ..pretrained import model_for, shipped_model

        if isinstance(read, ReadStory):
            return shipped_model(SHIPPED_FOR_KIND[STORY])
        if isinstance(read, ReadTree):
            return shipped_model(SHIPPED_FOR_KIND[TREE])
        return model_for(read.task, read.size, len(read.names))

    def warm_up(self, inputs: Sequence[str] = ("& a | b ! c", "U a X b", STORY_EXAMPLES[0], TREE_EXAMPLES[0])) -> None:
        """Load the models the page answers with by default and answer one input each, so that the first visitor
        does not wait for them."""
        for text in inputs:
            self.answer(text)
        self.solver.prepare()

    # --- requests -------------------------------------------------------------------------------------
    def answer(self, text: str, label: str | None = None, top_n: int = 3) -> AnswerView | StoryView | TreeView:
        """The chosen model's ``top_n`` answers to ``text`` (a formula, a story, or a tree: one answer), judged (an
        :class:`InputError` for input the page cannot answer, a :class:`RequestTimeout` past the time limit)."""
        entry = self.entry(label)
        top_n = max(1, min(int(top_n), MAX_TOP_N))
        return self._limited(lambda: self._answer(text, entry, top_n))

    def rename(
        self, text: str, label: str | None = None, style: str = "words", rng: random.Random | None = None
    ) -> RenameView:
        """A random renaming of the formula's symbols, and the answers of the chosen model and of every
        fixed-embedding model for the same task, before and after it."""
        entry = self.entry(label)
        rng = rng if rng is not None else random.Random()
        return self._limited(lambda: self._rename(text, entry, style, rng))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.solver.close()

    # --- the work -------------------------------------------------------------------------------------
    def _limited(self, work: Callable[[], T]) -> T:
        future = self._pool.submit(work)
        try:
            return future.result(timeout=self.time_limit)
        except FutureTimeout:
            future.cancel()
            raise RequestTimeout(
                f"this request took longer than {self.time_limit:g} s, the page's limit; try a smaller formula"
            ) from None

    def _read(self, text: str, entry: ModelEntry) -> ReadFormula | ReadStory | ReadTree:
        """``text`` read as what ``entry``'s model reads (for the automatic choice: as :func:`input_kind` says)."""
        kind = entry.kind if entry.kind is not None else input_kind(text)
        if kind == STORY:
            return read_story_input(text)
        if kind == TREE:
            return read_tree_input(text)
        return read_formula(text, entry.task if entry.kind == FORMULA else None)

    def _solve(self, read: ReadFormula | ReadStory, folder: Path, top_n: int) -> Solution:
        # A story goes to the solver as typed, as `symbolinv solve` gives it (the solver reads either form).
        text = read.source if isinstance(read, ReadStory) else read.polish
        try:
            return self.solver.solve(
                text, beam=max(BEAM, top_n), top_n=top_n, folder=folder, check_timeout=CHECK_SECONDS
            )
        except RecursionError:
            raise InputError("the formula nests too deeply for the checker; try a smaller one") from None
        except ValueError as error:
            # The model's own limits (more distinct symbols than it has streams or rows, ...): one line.
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            if len(message) > 300:
                message = message[:300] + " …"
            raise InputError(f"the model cannot answer this input: {message}") from None

    def _answer(self, text: str, entry: ModelEntry, top_n: int) -> AnswerView | StoryView | TreeView:
        read = self._read(text, entry)
        folder = self.folder_for(entry, read)
        if isinstance(read, ReadTree):
            return TreeView(read, entry, folder, self._answer_tree(folder, read))
        if isinstance(read, ReadStory):
            return StoryView(read, entry, folder, self._solve(read, folder, top_n))
        return AnswerView(read, entry, folder, self._solve(read, folder, top_n))

    def _answer_tree(self, folder: Path, read: ReadTree) -> TreeAnswer:
        try:
            return self.solver.answer_tree(folder, read.source)
        except (ValueError, SyntaxError) as error:
            # The tree reader's message, as `symbolinv solve` prints it, without the row number of its one input.
            lines = str(error).strip().splitlines()
            message = re.sub(r"^row 0: ", "", lines[0]) if lines else type(error).__name__
            raise InputError(message if len(message) <= 300 else message[:300] + " …") from None

    def _rename(self, text: str, entry: ModelEntry, style: str, rng: random.Random) -> RenameView:
        read = self._read(text, entry)
        if isinstance(read, ReadTree):
            raise InputError("renaming is offered for formulas and stories; a tree's words are not renamed here")
        if not read.names:
            raise InputError("this formula has no symbols to rename")
        others = [
            fixed for fixed in self.fixed_entries if fixed.label != entry.label and fixed.task in (None, read.task)
        ]
        letters = LETTERS
        rows = [self._symbol_rows(fixed) for fixed in ([entry] if entry.fixed else []) + others]
        rows = [count for count in rows if count is not None and count >= len(read.names)]
        if style == "letters" and rows:
            letters = LETTERS[: min(rows)]  # letters every fixed-embedding model has rows for
        mapping = random_renaming(read.names, rng, style, letters)
        renamed_read: ReadFormula | ReadStory
        if isinstance(read, ReadStory):
            renamed_text = rename_story_text(read, mapping)
            renamed_read = read_story_input(renamed_text)
        else:
            renamed_text = rename_formula_text(read, mapping)
            renamed_read = read_formula(renamed_text, read.task)
        results = [self._renamed_answers(entry, read, renamed_read, mapping)]
        results += [self._renamed_answers(fixed, read, renamed_read, mapping) for fixed in others]
        return RenameView(read, mapping, renamed_text, style, results)

    def _renamed_answers(
        self,
        entry: ModelEntry,
        read: ReadFormula | ReadStory,
        renamed: ReadFormula | ReadStory,
        mapping: dict[str, str],
    ) -> RenamedAnswers:
        folder = self.folder_for(entry, read)
        try:
            original = self._solve(read, folder, 1).answers[0]
            answer = self._solve(renamed, folder, 1).answers[0]
        except InputError as error:
            return RenamedAnswers(entry, folder, error=error.message)
        # A story's answer is a relation word, which names nobody: renaming the people leaves it as it is.
        expected = original.text if isinstance(read, ReadStory) else rename_answer(original.text, mapping)
        return RenamedAnswers(entry, folder, original, expected, answer)

    @staticmethod
    def _symbol_rows(entry: ModelEntry) -> int | None:
        """How many symbols a fixed-embedding model has rows for (``None`` when not recorded)."""
        if entry.folder is None:
            return None
        rows = read_config(entry.folder).get("num_symbol_embeddings")
        return int(rows) if isinstance(rows, int) else None
